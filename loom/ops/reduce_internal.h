#ifndef LOOM_OPS_REDUCE_INTERNAL_H_
#define LOOM_OPS_REDUCE_INTERNAL_H_

// Shared by the reduction family's files only: reduce.cc (Sum, Mean, Max, Min, Prod and
// their gradient ops), reduce_arg.cc (ArgMax, ArgMin) and reduce_shape_of.cc
// (BroadcastToShapeOf, SumToShapeOf). Not part of the public API.
#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::reduce_internal {

// mask[d] is true for the dims `axes` names (all dims when empty). Throws InvalidArgument
// naming `who` for an axis out of range or repeated.
std::vector<bool> ReduceMask(const Node& who, const Shape& shape, const std::vector<int64_t>& axes);

// The keep_dims shape: reduced dims become 1.
Shape KeptShape(const Shape& shape, const std::vector<bool>& mask);

// `shape` without the masked dims, or with them as 1s when keep_dims.
Shape ReducedShape(const Shape& shape, const std::vector<bool>& mask, bool keep_dims);

// x (a numeric dtype) summed over the masked dims with Sum's kernel; the result has the
// keep_dims shape. `what` names the op in a dtype error.
Tensor SumOverMask(ThreadPool& pool, const Tensor& x, const std::vector<bool>& mask,
                   std::string_view what);

// Called by RegisterReduceOps (reduce.h), which registers the whole family.
void RegisterArgReduceOps(OpRegistry& registry);
void RegisterShapeOfOps(OpRegistry& registry);

}  // namespace loom::reduce_internal

#endif  // LOOM_OPS_REDUCE_INTERNAL_H_
