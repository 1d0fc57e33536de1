#ifndef LOOM_DISTRIBUTE_HOOKS_H_
#define LOOM_DISTRIBUTE_HOOKS_H_

// The hooks every rank of a data-parallel job runs (the Estimator adds both, after all
// other hooks, when RunConfig::train_distribute is set).
//
// BroadcastGlobalVariablesHook (Horovod's BroadcastGlobalVariablesHook): in
// AfterCreateSession — after the Session is initialized or restored from a checkpoint —
// attaches the Communicator to the Session (collective_ops.h) and overwrites every
// variable (trainable or not: weights, optimizer slots, the global step) with rank root's
// value, and, optionally, the named iterators' states with root's. From then on every rank
// holds root's model and input position. Variables go in graph order, one Broadcast per
// variable.
//
// StopAgreementHook: a stop requested on any rank stops every rank at the same step. In
// BeforeRun and in AfterRun it all-reduces "has any hook requested a stop?" and requests
// one when any rank has; it must be the last hook, so that it sees the others' requests
// of that step. (End of input is agreed by ReplicaDataset; an error on one rank aborts
// the job, see docs/distribute.md.)
#include <memory>
#include <string>
#include <vector>

#include "loom/distribute/communicator.h"
#include "loom/train/session_run_hook.h"

namespace loom::distribute {

struct BroadcastOptions {
  // The rank whose values everyone takes. Default: 0, the chief.
  int root = 0;
  // Iterator resources (names in the Session's ResourceMgr) whose position and random
  // state are broadcast too. Only for iterators over the same pipeline on every rank
  // (ReplicaDataset with shard_rows). Default: none.
  std::vector<std::string> iterator_resources;
};

class BroadcastGlobalVariablesHook : public train::SessionRunHook {
 public:
  BroadcastGlobalVariablesHook(std::shared_ptr<Communicator> comm, BroadcastOptions options = {});
  void AfterCreateSession(Session& session) override;

 private:
  std::shared_ptr<Communicator> comm_;
  BroadcastOptions options_;
};

class StopAgreementHook : public train::SessionRunHook {
 public:
  explicit StopAgreementHook(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {}
  train::SessionRunArgs BeforeRun(train::SessionRunContext& context) override;
  void AfterRun(train::SessionRunContext& context, const train::SessionRunValues& values) override;

 private:
  std::shared_ptr<Communicator> comm_;
};

// Collective. Overwrites every variable of `session`'s graph, and the given iterators,
// with rank root's (what the hook does; for code that drives a Session itself).
void BroadcastSessionState(Communicator& comm, Session& session, const BroadcastOptions& options);

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_HOOKS_H_
