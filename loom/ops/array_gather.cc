// Gather (with its gradient op, dense or as IndexedSlices) and OneHot.
#include <algorithm>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/attr_keys.h"

namespace loom {

using namespace array_internal;  // NOLINT: the array files' own helpers

namespace {

using op_attrs::kAxis;
using op_attrs::kDType;
inline constexpr Attr<int64_t> kDepth{"depth"};
inline constexpr Attr<double> kOn{"on"};
inline constexpr Attr<double> kOff{"off"};

template <typename I>
void CheckIndices(const KernelContext& c, const I* idx, int64_t n, int64_t limit, int axis,
                  const Shape& params) {
  for (int64_t i = 0; i < n; ++i) {
    if (idx[i] < 0 || idx[i] >= limit) {
      c.Fail("indices[", i, "] = ", static_cast<int64_t>(idx[i]), " is out of range [0, ", limit,
             ") for dim ", axis, " of params ", params);
    }
  }
}

// Calls fn(const I* indices) with I the index type.
template <typename Fn>
void WithIndices(const Tensor& indices, Fn&& fn) {
  if (indices.dtype() == kInt32)
    fn(indices.data<int32_t>());
  else
    fn(indices.data<int64_t>());
}

const OpDef& GatherGradOp();

const OpDef& GatherOp() {
  static const OpDef op = {
      .name = "Gather",
      .num_inputs = 2,
      .attrs = {kAxis.Default(0)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(1, {kInt32, kInt64});
            const Shape& params = c.input_shape(0);
            const Shape& indices = c.input_shape(1);
            if (!params.rank_known() || !indices.rank_known()) {
              return c.set_output(0, c.input_dtype(0), Shape::Unknown());
            }
            if (params.rank() == 0) c.Fail("params must have rank >= 1, got a scalar");
            int axis = CanonicalAxis(c, c.attr(kAxis), params.rank());
            std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + axis);
            dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
            dims.insert(dims.end(), params.dims().begin() + axis + 1, params.dims().end());
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& params = c.input(0);
            const Tensor& indices = c.input(1);
            if (params.rank() == 0) c.Fail("params must have rank >= 1, got a scalar");
            const int axis = CanonicalAxis(c, c.attr(kAxis), params.rank());
            const auto& pd = params.shape().dims();
            const int64_t outer = Product(pd, 0, axis);
            const int64_t limit = pd[axis];
            const int64_t inner = Product(pd, axis + 1, pd.size());
            const int64_t n = indices.NumElements();
            std::vector<int64_t> dims(pd.begin(), pd.begin() + axis);
            dims.insert(dims.end(), indices.shape().dims().begin(), indices.shape().dims().end());
            dims.insert(dims.end(), pd.begin() + axis + 1, pd.end());
            Tensor y = c.AllocateOutput(0, Shape(dims));
            WithIndices(indices, [&](const auto* idx) {
              CheckIndices(c, idx, n, limit, axis, params.shape());
              if (y.NumElements() == 0) return;
              SwitchStorage(params.dtype(), [&](auto tag) {
                using T = decltype(tag);
                const T* in = Raw<T>(params);
                T* out = Raw<T>(y);
                // One row per (outer, index) pair; rows are contiguous runs of `inner`.
                c.pool().ParallelFor(
                    outer * n, std::max<int64_t>(1, 8192 / inner), [&](int64_t b, int64_t e) {
                      for (int64_t row = b; row < e; ++row) {
                        const int64_t o = row / n, i = row % n;
                        std::copy_n(in + (o * limit + idx[i]) * inner, inner, out + row * inner);
                      }
                    });
              });
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const Output params = g.input(0), indices = g.input(1);
        const Shape& ps = params.shape();
        const int64_t axis = g.attr(kAxis);
        if (axis == 0 || (ps.rank_known() && axis == -ps.rank())) {
          // d/dparams is sparse: the rows of dy, one per index, at those indices.
          Output flat_indices = Reshape(s, indices, std::vector<int64_t>{-1});
          Output values;
          Shape row = ps.rank_known() ? ps.WithoutLeadingDim() : Shape::Unknown();
          if (row.fully_defined()) {
            std::vector<int64_t> dims = {-1};
            dims.insert(dims.end(), row.dims().begin(), row.dims().end());
            values = Reshape(s, g.grad(0), dims);
          } else {
            Output row_shape = Slice(s, ShapeOf(s, params), {1}, {-1});
            values =
                Reshape(s, g.grad(0),
                        Concat(s, {Const(s, Tensor::FromVector<int64_t>({-1})), row_shape}, 0));
          }
          return {GradOutput::Sparse(flat_indices, values, ShapeOfOrConst(s, params)),
                  GradOutput()};
        }
        Output shape = ShapeOfOrConst(s, params);
        return {s.AddNode(GatherGradOp(), {indices, g.grad(0), shape}, {kAxis(axis)}, "GatherGrad")
                    ->output(0),
                GradOutput()};
      },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({4, 3}), Tensor::FromVector<int64_t>({3, 0, 3})}, {kAxis(0)}, false};
          },
  };
  return op;
}

// Inputs: indices, dy and params' shape (int64 vector); output: the dense gradient of
// Gather along `axis`, dy's rows summed into the rows they were read from.
const OpDef& GatherGradOp() {
  static const OpDef op = {
      .name = "GatherGrad",
      .num_inputs = 3,
      .attrs = {kAxis.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.set_output(0, c.input_dtype(1), StaticShapeValue(c.input(2)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& dy = c.input(1);
            auto pd = DimsFromTensor(c, c.input(2), "params shape");
            if (pd.empty()) c.Fail("params must have rank >= 1");
            const int axis = CanonicalAxis(c, c.attr(kAxis), static_cast<int>(pd.size()));
            const int64_t outer = Product(pd, 0, axis), limit = pd[axis];
            const int64_t inner = Product(pd, axis + 1, pd.size());
            const int64_t n = indices.NumElements();
            if (dy.NumElements() != outer * n * inner) {
              c.Fail("gradient ", dy.shape(), " does not match params ", DimsString(pd),
                     " gathered at ", indices.shape());
            }
            Tensor dx = Tensor::Zeros(dy.dtype(), Shape(pd));
            c.set_output(0, dx);
            WithIndices(indices, [&](const auto* idx) {
              CheckIndices(c, idx, n, limit, axis, Shape(pd));
              SwitchNumeric(dy.dtype(), "GatherGrad", [&](auto tag) {
                using T = decltype(tag);
                const T* g = dy.data<T>();
                T* out = dx.data<T>();
                // Different `o` write disjoint blocks, so chunks over `o` never race.
                c.pool().ParallelFor(outer,
                                     std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n * inner)),
                                     [&](int64_t b, int64_t e) {
                                       for (int64_t o = b; o < e; ++o)
                                         for (int64_t i = 0; i < n; ++i) {
                                           T* dst = out + (o * limit + idx[i]) * inner;
                                           const T* src = g + (o * n + i) * inner;
                                           for (int64_t k = 0; k < inner; ++k) dst[k] += src[k];
                                         }
                                     });
                return 0;
              });
            });
          },
      .grad =
          [](const GradContext& g) {
            return std::vector<GradOutput>{GradOutput(),
                                           Gather(g.scope(), g.grad(0), g.input(0), g.attr(kAxis)),
                                           GradOutput()};
          },
      .not_swept =
          "built only by Gather's gradient rule; Gather's sample and gather tests cover it",
  };
  return op;
}

// ---- OneHot -----------------------------------------------------------------------------

const OpDef& OneHotOp() {
  static const OpDef op = {
      .name = "OneHot",
      .num_inputs = 1,
      .attrs = {kDepth.Required(), kOn.Default(1.0), kOff.Default(0.0), kAxis.Default(-1),
                kDType.Default(kFloat32)},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64, kUInt8});
            const int64_t depth = c.attr(kDepth);
            if (depth < 0) c.Fail("depth must be non-negative, got ", depth);
            DType dtype = c.attr(kDType);
            if (dtype != kFloat32 && dtype != kFloat64 && dtype != kInt32 && dtype != kInt64) {
              c.Fail("dtype must be float32, float64, int32 or int64, got ", DTypeName(dtype));
            }
            const Shape& in = c.input_shape(0);
            if (!in.rank_known()) return c.set_output(0, dtype, Shape::Unknown());
            int64_t axis = c.attr(kAxis);
            if (axis < -1 || axis > in.rank()) {
              c.Fail("axis ", axis, " must be -1 or in [0, ", in.rank(), "] for indices ", in);
            }
            std::vector<int64_t> dims = in.dims();
            dims.insert(axis == -1 ? dims.end() : dims.begin() + axis, depth);
            c.set_output(0, dtype, Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const int64_t depth = c.attr(kDepth);
            int64_t axis = c.attr(kAxis);
            if (axis == -1) axis = indices.rank();
            if (axis < 0 || axis > indices.rank()) {
              c.Fail("axis ", axis, " must be -1 or in [0, ", indices.rank(), "] for indices ",
                     indices.shape());
            }
            std::vector<int64_t> dims = indices.shape().dims();
            const int64_t outer = Product(dims, 0, axis);
            const int64_t inner = Product(dims, axis, dims.size());
            dims.insert(dims.begin() + axis, depth);
            Tensor y = c.AllocateOutput(0, Shape(dims));
            SwitchNumeric(y.dtype(), "OneHot", [&](auto tag) {
              using T = decltype(tag);
              const T on = static_cast<T>(c.attr(kOn));
              const T off = static_cast<T>(c.attr(kOff));
              T* out = y.data<T>();
              std::fill_n(out, y.NumElements(), off);
              SwitchNumeric(indices.dtype(), "OneHot indices", [&](auto itag) {
                using I = decltype(itag);
                const I* idx = indices.data<I>();
                for (int64_t o = 0; o < outer; ++o) {
                  for (int64_t i = 0; i < inner; ++i) {
                    const int64_t k = static_cast<int64_t>(idx[o * inner + i]);
                    if (k >= 0 && k < depth) out[(o * depth + k) * inner + i] = on;
                  }
                }
                return 0;
              });
              return 0;
            });
          },
      .no_gradient = "OneHot's input is integer indices",
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 2, 1})}, {kDepth(3)}};
          },
  };
  return op;
}

}  // namespace

Output Gather(const Scope& scope, Input params, Input indices, int64_t axis) {
  Output p = AsOutput(scope, params);
  Output i = AsOutput(scope, indices);
  return scope.AddNode(GatherOp(), {p, i}, {kAxis(axis)}, "Gather")->output(0);
}

Output OneHot(const Scope& scope, Input indices, int64_t depth, double on, double off, int64_t axis,
              DType dtype) {
  return scope
      .AddNode(OneHotOp(), {AsOutput(scope, indices)},
               {kDepth(depth), kOn(on), kOff(off), kAxis(axis), kDType(dtype)}, "OneHot")
      ->output(0);
}

void array_internal::RegisterArrayGatherOps(OpRegistry& registry) {
  for (const OpDef* op : {&GatherOp(), &GatherGradOp(), &OneHotOp()}) registry.Register(*op);
}

}  // namespace loom
