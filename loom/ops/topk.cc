// TopKV2 and its gradient (topk.h).
#include "loom/ops/topk.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>
#include <vector>

#include "loom/ops/array_internal.h"

namespace loom {

using array_internal::Raw;

namespace {

inline constexpr Attr<bool> kSorted{"sorted"};

// Up to this k, TopK selects with a heap (std::partial_sort); above it with nth_element and
// a sort of the k selected (measured in bench/topk_bench.py).
constexpr int64_t kHeapSelectMaxK = 32;

// k from a scalar int32/int64 tensor.
int64_t KValue(const Tensor& k) {
  return k.dtype() == kInt32 ? static_cast<int64_t>(Raw<int32_t>(k)[0]) : Raw<int64_t>(k)[0];
}

// Fails as TF's TopKV2 does on a negative k or one past the last dimension.
template <typename Ctx>
void CheckK(const Ctx& c, int64_t k, int64_t columns) {
  if (k < 0) c.Fail("need k >= 0, got k = ", k);
  if (columns >= 0 && k > columns) {
    c.Fail("input must have at least k = ", k, " columns (its last dimension), had ", columns,
           ": lower k or check the input's shape");
  }
}

// a before b in TopK's order: NaN first, then larger values, ties by the lower index.
template <typename T>
bool Before(const T* row, int32_t a, int32_t b) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(row[a]), nb = std::isnan(row[b]);
    if (na || nb) return na && nb ? a < b : na;
  }
  return row[a] > row[b] || (row[a] == row[b] && a < b);
}

const OpDef& TopKGradOp();

const OpDef& TopKV2Op() {
  static const OpDef op = {
      .name = "TopKV2",
      .num_inputs = 2,
      .attrs = {kSorted.Default(true)},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::Fixed(kInt32)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64});
            c.ExpectDType(1, {kInt32, kInt64});
            c.ExpectRank(1, 0);
            const Shape& in = c.input_shape(0);
            if (in.rank_known() && in.rank() == 0) {
              c.Fail("input must be at least 1-D (TopK selects along the last dimension)");
            }
            Shape out = Shape::Unknown();
            if (in.rank_known()) {
              std::vector<int64_t> dims = in.dims();
              dims.back() = kUnknownDim;
              if (const Tensor* k = c.input_constant(1)) {
                CheckK(c, KValue(*k), in.dims().back());
                dims.back() = KValue(*k);
              }
              out = Shape(std::move(dims));
            }
            c.set_output(0, c.input_dtype(0), out);
            c.set_output(1, kInt32, out);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            if (x.rank() == 0) c.Fail("input must be at least 1-D, got a scalar");
            const int64_t columns = x.shape().dims().back();
            const int64_t k = KValue(c.input(1));
            CheckK(c, k, columns);
            if (columns > std::numeric_limits<int32_t>::max()) {
              c.Fail("the last dimension ", columns, " does not fit the int32 indices");
            }
            std::vector<int64_t> dims = x.shape().dims();
            dims.back() = k;
            Tensor values = c.AllocateOutput(0, Shape(dims));
            Tensor indices = c.AllocateOutput(1, Shape(dims));
            const int64_t rows = columns == 0 ? 0 : x.NumElements() / columns;
            SwitchNumeric(x.dtype(), "TopKV2", [&](auto tag) {
              using T = decltype(tag);
              const T* in = Raw<T>(x);
              T* out = Raw<T>(values);
              int32_t* idx = Raw<int32_t>(indices);
              // Rows are independent: chunks of rows on the pool, ~64K elements each.
              const int64_t min_rows =
                  std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(columns, 1));
              c.pool().ParallelFor(rows, min_rows, [&](int64_t begin, int64_t end) {
                std::vector<int32_t> order(columns);
                for (int64_t r = begin; r < end; ++r) {
                  const T* row = in + r * columns;
                  std::iota(order.begin(), order.end(), 0);
                  auto before = [row](int32_t a, int32_t b) { return Before(row, a, b); };
                  // A heap of k for small k (most entries are rejected at its top); for a
                  // large k, selecting the first k in linear time and sorting them.
                  if (k <= kHeapSelectMaxK || k == columns) {
                    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
                  } else {
                    std::nth_element(order.begin(), order.begin() + k, order.end(), before);
                    std::sort(order.begin(), order.begin() + k, before);
                  }
                  for (int64_t j = 0; j < k; ++j) {
                    idx[r * k + j] = order[j];
                    out[r * k + j] = row[order[j]];
                  }
                }
              });
            });
            c.set_output(0, std::move(values));
            c.set_output(1, std::move(indices));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // d values[.., j] / d input[.., indices[.., j]] = 1: scatter the values' gradient.
        if (!g.grad(0).valid()) return {GradOutput(), GradOutput()};
        Output dx = g.scope()
                        .AddNode(TopKGradOp(), {g.grad(0), g.output(1), g.input(0)}, {}, "TopKGrad")
                        ->output(0);
        return {dx, GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), Tensor::Scalar<int32_t>(2)}, {}, false};
          },
  };
  return op;
}

// Inputs: dy [.., k], indices int32 [.., k], x (the TopK input, for its shape). Output: zeros
// shaped like x with dy[.., j] added at position indices[.., j] of each row.
const OpDef& TopKGradOp() {
  static const OpDef op = {
      .name = "TopKGrad",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(2)); },
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            const Tensor& indices = c.input(1);
            const Tensor& x = c.input(2);
            const int64_t columns = x.shape().dims().back();
            const int64_t k = dy.rank() == 0 ? 0 : dy.shape().dims().back();
            const int64_t rows = columns == 0 ? 0 : x.NumElements() / columns;
            if (dy.NumElements() != rows * k || indices.NumElements() != rows * k) {
              c.Fail("gradient ", dy.shape().ToString(), " and indices ",
                     indices.shape().ToString(), " do not match the input ", x.shape().ToString());
            }
            Tensor dx = c.AllocateOutput(0, x.shape());
            SwitchNumeric(dy.dtype(), "TopKGrad", [&](auto tag) {
              using T = decltype(tag);
              T* out = Raw<T>(dx);
              std::fill(out, out + dx.NumElements(), T{});
              const T* g = Raw<T>(dy);
              const int32_t* idx = Raw<int32_t>(indices);
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t j = 0; j < k; ++j) {
                  const int32_t at = idx[r * k + j];
                  if (at < 0 || at >= columns) c.Fail("index ", at, " outside [0, ", columns, ")");
                  out[r * columns + at] += g[r * k + j];
                }
              }
            });
            c.set_output(0, std::move(dx));
          },
      .no_gradient = "the second derivative of top_k is not implemented",
      .not_swept = "TopKGrad needs TopKV2's indices; topk_test.cc checks it through TopKV2",
  };
  return op;
}

// Inputs: condition (bool or numeric). Output: int64 [num_true, rank].
const OpDef& WhereOp() {
  static const OpDef op = {
      .name = "Where",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kBool, kFloat32, kFloat64, kInt32, kInt64, kUInt8});
            const Shape& in = c.input_shape(0);
            c.set_output(0, kInt64,
                         in.rank_known() ? Shape({kUnknownDim, in.rank()})
                                         : Shape({kUnknownDim, kUnknownDim}));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            std::vector<int64_t> flat;  // positions of the true elements
            auto collect = [&](auto tag) {
              using T = decltype(tag);
              const T* v = Raw<T>(x);
              for (int64_t i = 0; i < x.NumElements(); ++i)
                if (v[i] != T{}) flat.push_back(i);
            };
            if (x.dtype() == kBool) {
              collect(bool{});
            } else {
              SwitchNumeric(x.dtype(), "Where", collect);
            }
            const std::vector<int64_t>& dims = x.shape().dims();
            const int64_t rank = static_cast<int64_t>(dims.size());
            Tensor out = c.AllocateOutput(0, Shape({static_cast<int64_t>(flat.size()), rank}));
            int64_t* o = Raw<int64_t>(out);
            for (size_t n = 0; n < flat.size(); ++n) {
              int64_t rest = flat[n];
              for (int64_t d = rank - 1; d >= 0; --d) {
                o[n * rank + d] = rest % dims[d];
                rest /= dims[d];
              }
            }
            c.set_output(0, std::move(out));
          },
      .no_gradient = "Where's output is integer coordinates",
  };
  return op;
}

}  // namespace

Output Where(const Scope& scope, Input condition) {
  return scope.AddNode(WhereOp(), {AsOutput(scope, condition)}, {}, "Where")->output(0);
}

TopK TopKV2(const Scope& scope, Input input, Input k, bool sorted) {
  Output x = AsOutput(scope, input);
  Output kk = AsOutput(scope, k, kInt32);
  Node* node = scope.AddNode(TopKV2Op(), {x, kk}, {kSorted(sorted)}, "TopKV2");
  return {node->output(0), node->output(1)};
}

void RegisterTopKOps(OpRegistry& registry) {
  for (const OpDef* op : {&TopKV2Op(), &TopKGradOp(), &WhereOp()}) registry.Register(*op);
}

}  // namespace loom
