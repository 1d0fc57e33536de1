#ifndef LOOM_OPS_ARRAY_H_
#define LOOM_OPS_ARRAY_H_

// Array ops: reshaping, transposing, joining, splitting, slicing, gathering and padding
// tensors, and ops that describe shapes. Static arguments (shapes, permutations, axes,
// slice bounds) are attributes, so shape inference is exact at construction; the few ops
// that take a shape as a tensor (Reshape to a shape tensor, Fill) are for gradients and
// for dimensions known only at run time.
//
//   auto images = Reshape(s, x, {-1, 28, 28, 1});         // zero-copy view
//   auto rows = Gather(s, embeddings, ids);                // sparse gradient for the table
//   auto last = StridedSlice(s, h, {0, -1}, {0, 0}, {1, 1},
//                            {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 2});
//
// Negative axes count from the end, as in numpy. Shape errors at construction name the
// node and the shapes; run-time errors (a Gather index out of range) name the index and
// the valid range. Kernels handle every dtype (strings included) unless noted.
// Ops without gradients say why (OpDef::no_gradient): shape descriptions are integers,
// OneHot's input is integer indices, Fill's value gradient would need a reduction.
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

// x with the same elements in shape `shape`; one entry may be -1 (inferred). Zero-copy.
Output Reshape(const Scope& scope, Input x, const std::vector<int64_t>& shape);
// Reshape to the value of `shape`, an int32/int64 vector computed in the graph (one -1
// allowed). Shape inference sees through Const, ShapeOf, Concat and Slice producers.
Output Reshape(const Scope& scope, Input x, Output shape);
// x reshaped to the run-time shape of `like` (same element count); the gradient
// primitive for ops that only reshape.
Output ReshapeLike(const Scope& scope, Input x, Output like);

// Output dim i is input dim perm[i]. REQUIRES: perm is a permutation of [0, rank).
Output Transpose(const Scope& scope, Input x, const std::vector<int64_t>& perm);
// Inserts a dim of size 1 at `axis` (in [-rank-1, rank]).
Output ExpandDims(const Scope& scope, Input x, int64_t axis);
// Removes the size-1 dims listed in `axes`, or all size-1 dims when `axes` is empty.
Output Squeeze(const Scope& scope, Input x, const std::vector<int64_t>& axes = {});

// Joins same-dtype tensors along `axis`; other dims must match.
Output Concat(const Scope& scope, const std::vector<Output>& values, int64_t axis);
// Splits x into num_split equal parts along `axis` (its size must divide evenly).
std::vector<Output> Split(const Scope& scope, Input x, int64_t num_split, int64_t axis);

// The block starting at `begin` of extent `size` (-1: to the end of that dim).
Output Slice(const Scope& scope, Input x, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size);

// Python slicing, TF's tf.strided_slice: entry i of begin/end/strides is one slice spec;
// bit i of a mask applies to spec i. begin_mask/end_mask: ignore begin[i]/end[i] (take
// the whole range); shrink_axis_mask: take the single index begin[i] and drop the dim;
// new_axis_mask: insert a dim of size 1 (x[:, None]); ellipsis_mask: spec i stands for
// as many full dims as needed (x[..., 0]). Out-of-range bounds clamp like Python.
struct StridedSliceMasks {
  int64_t begin_mask = 0;        // Default: 0
  int64_t end_mask = 0;          // Default: 0
  int64_t shrink_axis_mask = 0;  // Default: 0
  int64_t new_axis_mask = 0;     // Default: 0
  int64_t ellipsis_mask = 0;     // Default: 0
};
Output StridedSlice(const Scope& scope, Input x, const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                    StridedSliceMasks masks = {});

// Rows of `params` along `axis` selected by `indices` (int32/int64, any shape): output
// shape params[:axis] + indices.shape + params[axis+1:]. For axis 0 the gradient w.r.t.
// params is sparse (IndexedSlices), so an optimizer touches only the gathered rows.
// An index outside [0, params.dim(axis)) fails at run time naming it.
Output Gather(const Scope& scope, Input params, Input indices, int64_t axis = 0);

// TF's Range: start, start + delta, ... while short of limit (exclusive), the scalars of one
// dtype (float32, float64, int32, int64; limit and delta literals take start's dtype). Its
// length is known at construction when all three are constants; a zero delta, or a start
// past the limit in delta's direction, fails naming the node. Not differentiable.
Output Range(const Scope& scope, Input start, Input limit, Input delta);

// TF's Cumsum: running sums along `axis`; `exclusive` leaves each element out of its own
// sum (the first is 0), `reverse` sums from the end. float32, float64, int32, int64.
struct CumsumOptions {
  bool exclusive = false;
  bool reverse = false;
};
Output Cumsum(const Scope& scope, Input x, int64_t axis = 0, CumsumOptions options = {});
// TF's Cumprod: running products, with Cumsum's options (an exclusive product starts at 1).
// Its gradient is TF's, cumsum(y * dy, reversed) / x: NaN or infinite where x is 0.
Output Cumprod(const Scope& scope, Input x, int64_t axis = 0, CumsumOptions options = {});

// A one-hot encoding of integer `indices`: a new dim of size `depth` at `axis` (-1: last)
// holding `on` at the index and `off` elsewhere (all `off` for an index outside
// [0, depth)). dtype: float32, float64, int32 or int64.
Output OneHot(const Scope& scope, Input indices, int64_t depth, double on = 1.0, double off = 0.0,
              int64_t axis = -1, DType dtype = kFloat32);

// x repeated multiples[i] times along each dim i.
Output Tile(const Scope& scope, Input x, const std::vector<int64_t>& multiples);
// x surrounded by paddings[i].first values before and .second after along dim i, all
// equal to `constant`. Numeric dtypes only.
Output Pad(const Scope& scope, Input x, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           double constant = 0.0);

// A tensor of shape `dims` filled with the scalar `value` (its dtype is the output's).
Output Fill(const Scope& scope, const std::vector<int64_t>& dims, Input value);
// A tensor of shape `dims` filled with the scalar `value`, dims given as an int64/int32
// vector tensor (for shapes known only at run time).
Output Fill(const Scope& scope, Output dims, Input value);
// Constant-free zeros/ones of a fully defined shape (no data stored in the graph).
Output Zeros(const Scope& scope, const Shape& shape, DType dtype = kFloat32);
Output Ones(const Scope& scope, const Shape& shape, DType dtype = kFloat32);

// x's shape as an int64 vector, its element count and its rank as int64 scalars, taken
// at run time (so unknown dims are filled in). Named ShapeOf because loom::Shape is a type.
Output ShapeOf(const Scope& scope, Input x);
Output Size(const Scope& scope, Input x);
Output Rank(const Scope& scope, Input x);

// What is known at construction about the value of `shape_tensor`, a 1-D integer tensor
// describing a shape: exact for a Const, the static shape of x for ShapeOf(x), and
// elementwise through Concat and Slice of those. Shape::Unknown() when even its length is
// unknown; kUnknownDim for entries only known at run time.
Shape StaticShapeValue(const Output& shape_tensor);

void RegisterArrayOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_ARRAY_H_
