#ifndef LOOM_OPS_REDUCE_H_
#define LOOM_OPS_REDUCE_H_

// Reductions (TF's reduce_sum, reduce_mean, ...) and ArgMax/ArgMin.
//
//   Output total = Sum(s, x);                           // over all dims: a scalar
//   Output row_mean = Mean(s, x, {1}, {.keep_dims = true});  // [n,k] -> [n,1]
//
// `axes` lists the dims to reduce: empty means all, negative counts from the end, a
// repeated axis is an error. Reducing an empty dim gives the identity (0 for Sum, 1 for
// Prod, the lowest/highest value for Max/Min, NaN for a floating Mean).
// Kernels collapse adjacent dims, so any axes set runs as one or a few passes of
// [outer, reduced, inner] loops, parallel over the thread pool. Float sums accumulate in
// 16 lanes per 16k-element block and add the blocks in order, so results do not depend on
// the thread count.
// Max and Min of floats propagate NaN as numpy's max (the first NaN; ArgMax / ArgMin point
// at it) and run hand-vectorized AVX-512 / AVX2 kernels chosen at run time
// (reduce_minmax.h), bitwise the same on every CPU.
// Gradients: Sum and Mean broadcast the incoming gradient back (BroadcastToShapeOf);
// Max/Min send it to the positions equal to the result, split evenly among ties (as TF);
// Prod multiplies by the product of the other elements (exact when x has zeros).
#include <cstdint>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

struct ReduceOptions {
  // Keep reduced dims with size 1 (so the result broadcasts against x). Default: false.
  bool keep_dims = false;
};

// Numeric dtypes (float32, float64, int32, int64, uint8). Mean of integers truncates.
Output Sum(const Scope& scope, Input x, std::vector<int64_t> axes = {}, ReduceOptions options = {});
Output Mean(const Scope& scope, Input x, std::vector<int64_t> axes = {},
            ReduceOptions options = {});
Output Max(const Scope& scope, Input x, std::vector<int64_t> axes = {}, ReduceOptions options = {});
Output Min(const Scope& scope, Input x, std::vector<int64_t> axes = {}, ReduceOptions options = {});
Output Prod(const Scope& scope, Input x, std::vector<int64_t> axes = {},
            ReduceOptions options = {});

// The index (int64) of the largest / smallest element along `axis` (the first on ties);
// the axis is removed from the shape. Not differentiable.
Output ArgMax(const Scope& scope, Input x, int64_t axis);
Output ArgMin(const Scope& scope, Input x, int64_t axis);

// `x` broadcast to `like`'s shape, where x is the result of reducing `like` over `axes`
// (with or without keep_dims). With empty axes: plain NumPy broadcasting. The gradient
// helper of Sum/Mean/Max/Min/Prod.
Output BroadcastToShapeOf(const Scope& scope, Output x, Output like,
                          std::vector<int64_t> axes = {});

// Registered by RegisterMathOps (math.h).
void RegisterReduceOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_REDUCE_H_
