#ifndef LOOM_DISTRIBUTE_COLLECTIVE_OPS_H_
#define LOOM_DISTRIBUTE_COLLECTIVE_OPS_H_

// Graph ops that communicate between the ranks of a job, so the Session runs the
// communication as part of a step. Their kernels find the Communicator in the Session's
// ResourceMgr (AttachCommunicator; BroadcastGlobalVariablesHook attaches it in
// AfterCreateSession), and fail with FailedPrecondition naming the node when none is there.
// Every rank must run the same graph: the Session executes kernels in node order, so the
// ranks issue their collectives in the same order.
//
//   AllReduceAverage  the mean over ranks of each input, fused: the inputs (one dtype) are
//                     copied, scaled by 1/size, into one buffer and summed by ONE
//                     Communicator::AllReduceSum; the outputs are views of that buffer
//                     (Horovod's tensor fusion: one message per bucket, not per tensor).
//   AllGatherRows     the rows of a sparse gradient (IndexedSlices) from every rank,
//                     concatenated in rank order, with the values scaled by 1/size (so
//                     that applying them averages, as for dense); never densified.
// Neither is differentiable (they sit after the gradient computation).
#include <memory>
#include <vector>

#include "loom/distribute/communicator.h"
#include "loom/graph/op_def.h"
#include "loom/runtime/session.h"

namespace loom::distribute {

// The name of the Session resource holding the Communicator.
inline constexpr const char* kCommunicatorResource = "loom.distribute/communicator";

class CommunicatorResource : public Resource {
 public:
  std::shared_ptr<Communicator> comm;
};

// Makes the collective ops of `session` use `comm`. Replaces an earlier one.
void AttachCommunicator(Session& session, std::shared_ptr<Communicator> comm);
// The communicator attached to `resources`, or nullptr.
std::shared_ptr<Communicator> AttachedCommunicator(const ResourceMgr& resources);

// One output per input, same dtype and shape: the average over ranks. REQUIRES: inputs
// non-empty, of one float dtype.
std::vector<Output> AllReduceAverage(const Scope& scope, const std::vector<Output>& inputs);

// Every rank's rows: indices (int32/int64, [k]) and values ([k, ...]) concatenated over
// ranks in rank order; values multiplied by 1/size.
std::pair<Output, Output> AllGatherRows(const Scope& scope, Output indices, Output values);

void RegisterDistributeOps(OpRegistry& registry);

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_COLLECTIVE_OPS_H_
