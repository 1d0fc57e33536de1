#ifndef LOOM_DISTRIBUTE_DISTRIBUTED_OPTIMIZER_H_
#define LOOM_DISTRIBUTE_DISTRIBUTED_OPTIMIZER_H_

// DistributedOptimizer: wraps any Loom optimizer so that every rank applies the average of
// all ranks' gradients (Horovod's hvd.DistributedOptimizer). ComputeGradients computes,
// with the wrapped optimizer, the local gradients of loss / N (ReplicaScale; the scale
// costs nothing: it seeds the backward pass), then sums them over the ranks, which
// averages:
//   - dense gradients are grouped by dtype into buckets of at most fusion_threshold_bytes,
//     in reverse variable order (the backward pass produces the last layer's gradients
//     first), and each bucket is ONE all-reduce (collective_ops.h), started as soon as
//     its gradients exist and waited for before the update, so it overlaps the rest of
//     the backward pass;
//   - sparse gradients (IndexedSlices from Gather / embeddings) are all-gathered as rows
//     (indices and values), never densified; duplicate indices are summed by the sparse
//     update, as in one process.
// ApplyGradients, the slots and the name are the wrapped optimizer's, so a checkpoint of a
// distributed run restores into a one-process run and back.
// With each rank computing the mean loss over its B/N rows of a global batch of B, the
// average of the ranks' gradients is the gradient of the mean loss over the B rows: N
// ranks take the same steps as one process, up to float summation order.
//
//   auto opt = std::make_unique<distribute::DistributedOptimizer>(
//       std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = 1e-3}));
//   Operation train_op = opt->Minimize(scope, loss, train::GlobalStep(scope));
//
// The graph must run in a Session with a Communicator attached (collective_ops.h).
// Not thread-safe: build from one thread.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/train/optimizer.h"

namespace loom::distribute {

struct DistributedOptimizerOptions {
  // Dense gradients are fused into buckets of at most this many bytes (a single larger
  // gradient is a bucket of its own); <= 0 makes one bucket per gradient. A bucket's
  // all-reduce starts when its last gradient exists, so one bucket for the whole model
  // would overlap nothing; each bucket costs one message's latency. Default: 4 MiB (a
  // 13 MB convnet makes three buckets; PyTorch DDP's default is 25 MiB, Horovod's 64 MiB
  // with time-based fusion).
  int64_t fusion_threshold_bytes = int64_t{4} << 20;
  // Each bucket is an AllReduceStart, which the Session runs as soon as the bucket's
  // gradients exist, and an AllReduceWait before the update: the all-reduce runs on the
  // communicator's thread while the rest of the backward pass runs (collective_ops.h).
  // false: one AllReduceSum per bucket, after the whole backward pass, which is also what
  // a model of a single bucket gets (nothing could run between its start and its wait).
  // The sums are the same bits either way. Default: true.
  bool overlap_communication = true;
};

class DistributedOptimizer : public train::Optimizer {
 public:
  // REQUIRES: inner != nullptr.
  explicit DistributedOptimizer(std::unique_ptr<train::Optimizer> inner,
                                DistributedOptimizerOptions options = {});

  // The wrapped optimizer's gradients, averaged across ranks (under "<scope>/distribute").
  std::vector<train::GradAndVar> ComputeGradients(
      const Scope& scope, Output loss, const std::vector<Output>& var_list = {}) override;
  // The wrapped optimizer's ApplyGradients.
  Operation ApplyGradients(const Scope& scope, const std::vector<train::GradAndVar>& grads_and_vars,
                           Output global_step = Output()) override;
  Output GetSlot(const Output& var, const std::string& slot_name) const override;
  std::vector<std::string> GetSlotNames() const override;

  train::Optimizer& inner() const { return *inner_; }

 protected:
  // Never called: ApplyGradients is the wrapped optimizer's.
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;

 private:
  std::unique_ptr<train::Optimizer> inner_;
  DistributedOptimizerOptions options_;
};

// The averaging step alone, for a loop that computes its own gradients: returns
// grads_and_vars with every gradient replaced by its average over ranks (each scaled by
// 1/N, then summed; invalid entries stay invalid). Collective at run time: every rank
// must build the same list.
std::vector<train::GradAndVar> AverageGradients(
    const Scope& scope, const std::vector<train::GradAndVar>& grads_and_vars,
    DistributedOptimizerOptions options = {});

// The summing step alone (what ComputeGradients appends to the gradients of loss / N):
// dense gradients summed over ranks in buckets, sparse ones gathered. Collective at run
// time, like AverageGradients.
std::vector<train::GradAndVar> SumGradientsOverRanks(
    const Scope& scope, const std::vector<train::GradAndVar>& grads_and_vars,
    DistributedOptimizerOptions options = {});

// How many all-reduce buckets (AllReduceSum or AllReduceStart ops) `graph` holds, and
// AllGatherRows ops: what tests
// and the Estimator's check ("does this training graph average its gradients?") count.
int CountAllReduceBuckets(const Graph& graph);
int CountAllGatherRows(const Graph& graph);

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_DISTRIBUTED_OPTIMIZER_H_
