#ifndef LOOM_DISTRIBUTE_COLLECTIVE_OPS_H_
#define LOOM_DISTRIBUTE_COLLECTIVE_OPS_H_

// Graph ops that communicate between the ranks of a job, so the Session runs the
// communication as part of a step. Their kernels find the Communicator in the Session's
// ResourceMgr (AttachCommunicator; BroadcastGlobalVariablesHook attaches it in
// AfterCreateSession), and fail with FailedPrecondition naming the node when none is there.
// Every rank must run the same graph: the Session's plan order depends only on the graph
// (node order, starts moved up), so the ranks issue their collectives in the same order.
//
//   AllReduceSum      the sum over ranks of each input, fused: the inputs are copied into
//                     one buffer kept in the Session and reduced by ONE
//                     Communicator::AllReduceSum (Horovod's tensor fusion: one message per
//                     bucket, not per tensor). A bucket of a single large input (1 MiB or
//                     more: a tensor above the fusion threshold) is reduced in place,
//                     without a copy, when the Session hands the kernel its only reference
//                     (a gradient consumed by nothing else), else copied once.
//   AllReduceStart /  the same sum split in two, so that it overlaps the backward pass:
//   AllReduceWait     the start fills the bucket's buffer (fused as above, scaled by an
//                     optional scalar on the way) and hands it to the communicator's
//                     thread (Communicator::StartAllReduceSum); the wait blocks until it
//                     is summed. The start carries `_schedule_early`: the Session runs
//                     it right after the last of its inputs, so the kernels that follow
//                     it in node order (the rest of the backward pass) run while the
//                     bucket is reduced; the wait stays in node order, after them.
//   AllGatherRows     the rows of a sparse gradient (IndexedSlices) from every rank,
//                     concatenated in rank order (the sum of IndexedSlices); never
//                     densified.
//   ReplicaScale      1 / (number of ranks) as a scalar: DistributedOptimizer multiplies
//                     the loss by it, so the summed gradients are the average without a
//                     pass over the gradients.
// AllReduceSum and AllGatherRows are not differentiable (they sit after the gradient
// computation); ReplicaScale is a constant to Gradients.
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

// One output per input, same dtype and shape: the sum over ranks. REQUIRES: inputs
// non-empty, of one float dtype.
std::vector<Output> AllReduceSum(const Scope& scope, const std::vector<Output>& inputs);

// The sum over ranks of each input, as an AllReduceStart and its AllReduceWait (the
// outputs are the wait's); with `scale` (a scalar of the inputs' dtype) the inputs are
// multiplied by it before the sum. REQUIRES: inputs non-empty, of one float dtype.
std::vector<Output> StartAndWaitAllReduceSum(const Scope& scope, const std::vector<Output>& inputs,
                                             Output scale = Output());

// Every rank's rows: indices (int32/int64, [k]) and values ([k, ...]) concatenated over
// ranks in rank order.
std::pair<Output, Output> AllGatherRows(const Scope& scope, Output indices, Output values);

// A scalar of `dtype` (float32/float64): 1 / size of the attached communicator.
Output ReplicaScale(const Scope& scope, DType dtype);

void RegisterDistributeOps(OpRegistry& registry);

}  // namespace loom::distribute

#endif  // LOOM_DISTRIBUTE_COLLECTIVE_OPS_H_
