#include <algorithm>
#include <type_traits>

#include "loom/ops/attr_keys.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/reduce.h"
#include "loom/ops/reduce_internal.h"
#include "loom/ops/reduce_minmax.h"

namespace loom {
namespace {

using op_attrs::kAxis;

using internal::kMinParallelChunk;
using reduce_internal::ReducedShape;
using reduce_internal::ReduceMask;

// ---------------------------------------------------------------------------------------
// ArgMax / ArgMin.

template <bool kMax>
void ArgKernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int64_t axis_attr = c.attr(kAxis);
  auto mask = ReduceMask(c.node(), x.shape(), {axis_attr});
  int axis = 0;
  while (!mask[axis]) ++axis;
  const int64_t n = x.dim(axis);
  if (n == 0)
    c.Fail("cannot take ", c.node().op(), " over empty axis ", axis_attr, " of ", x.shape());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  Tensor out = c.AllocateOutput(0, ReducedShape(x.shape(), mask, false));
  int64_t* idx = out.data<int64_t>();
  SwitchNumeric(x.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    const int64_t min_chunk = std::max<int64_t>(1, kMinParallelChunk / n);
    if constexpr (std::is_floating_point_v<T>) {
      if (inner == 1) {
        // Contiguous rows: the vector kernels (reduce_minmax.h), same first-NaN rule.
        const reduce_internal::MinMaxIsa isa = reduce_internal::ActiveMinMaxIsa();
        c.pool().ParallelFor(outer, min_chunk, [&](int64_t begin, int64_t end) {
          for (int64_t a = begin; a < end; ++a) {
            idx[a] = reduce_internal::ArgMinMaxOf<kMax>(isa, in + a * n, n);
          }
        });
        return 0;
      }
    }
    c.pool().ParallelFor(outer * inner, min_chunk, [&](int64_t begin, int64_t end) {
      std::vector<T> best;
      int64_t pos = begin;
      while (pos < end) {
        const int64_t a = pos / inner, c0 = pos % inner;
        const int64_t c1 = std::min(inner, c0 + (end - pos));
        const T* base = in + a * n * inner;
        best.assign(base + c0, base + c1);
        int64_t* o = idx + a * inner;
        for (int64_t k = c0; k < c1; ++k) o[k] = 0;
        for (int64_t r = 1; r < n; ++r) {
          const T* row = base + r * inner;
          for (int64_t k = c0; k < c1; ++k) {
            // The first NaN wins, as numpy's argmax and Max (reduce.cc) have it: a NaN
            // replaces a number, nothing replaces a NaN (`b != b`).
            const T b = best[k - c0];
            const bool better = (kMax ? row[k] > b : row[k] < b) || (row[k] != row[k] && b == b);
            if (better) {
              best[k - c0] = row[k];
              o[k] = r;
            }
          }
        }
        pos += c1 - c0;
      }
    });
    return 0;
  });
}

void ArgShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64, kUInt8});
  const Shape& x = c.input_shape(0);
  if (!x.rank_known()) return c.set_output(0, kInt64, Shape::Unknown());
  auto mask = ReduceMask(c.node(), x, {c.attr(kAxis)});
  c.set_output(0, kInt64, ReducedShape(x, mask, false));
}

const OpDef& ArgMaxOp() {
  static const OpDef op = {
      .name = "ArgMax",
      .num_inputs = 1,
      .attrs = {kAxis.Required()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = ArgShape,
      .kernel = ArgKernel<true>,
      .no_gradient = "its output is an integer index",
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kAxis(1)}};
          },
  };
  return op;
}

const OpDef& ArgMinOp() {
  static const OpDef op = {
      .name = "ArgMin",
      .num_inputs = 1,
      .attrs = {kAxis.Required()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = ArgShape,
      .kernel = ArgKernel<false>,
      .no_gradient = "its output is an integer index",
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kAxis(0)}};
          },
  };
  return op;
}

}  // namespace

Output ArgMax(const Scope& s, Input x, int64_t axis) {
  return s.AddNode(ArgMaxOp(), {AsOutput(s, x)}, {kAxis(axis)}, "ArgMax")->output(0);
}
Output ArgMin(const Scope& s, Input x, int64_t axis) {
  return s.AddNode(ArgMinOp(), {AsOutput(s, x)}, {kAxis(axis)}, "ArgMin")->output(0);
}

void reduce_internal::RegisterArgReduceOps(OpRegistry& registry) {
  registry.Register(ArgMaxOp());
  registry.Register(ArgMinOp());
}

}  // namespace loom
