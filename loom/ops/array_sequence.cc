// Range, Cumsum and Cumprod: sequences built along one dimension (TF's Range, Cumsum and
// Cumprod).
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/attr_keys.h"
#include "loom/ops/math.h"

namespace loom {

using namespace array_internal;  // NOLINT: the array files' own helpers

namespace {

using op_attrs::kAxis;
inline constexpr Attr<bool> kExclusive{"exclusive"};
inline constexpr Attr<bool> kReverse{"reverse"};

// ---- Range ------------------------------------------------------------------------------

// The element count of [start, limit) in steps of delta, as TF's RangeOp computes it
// (integers exactly, floats by ceil(|(limit - start) / delta|)); fails as TF does on a zero
// delta or a start past the limit in delta's direction.
template <typename T, typename Ctx>
int64_t RangeSize(const Ctx& c, T start, T limit, T delta) {
  if (delta == 0) c.Fail("delta must not be 0 (start ", start, ", limit ", limit, ")");
  if (delta > 0 && start > limit) {
    c.Fail("start ", start, " is past limit ", limit, " for a positive delta ", delta,
           ": give start <= limit, or a negative delta");
  }
  if (delta < 0 && start < limit) {
    c.Fail("start ", start, " is below limit ", limit, " for a negative delta ", delta,
           ": give start >= limit, or a positive delta");
  }
  if constexpr (std::is_integral_v<T>) {
    const int64_t span = std::abs(static_cast<int64_t>(limit) - static_cast<int64_t>(start));
    const int64_t step = std::abs(static_cast<int64_t>(delta));
    return (span + step - 1) / step;
  } else {
    const double n = std::ceil(std::abs((static_cast<double>(limit) - static_cast<double>(start)) /
                                        static_cast<double>(delta)));
    if (!(n < 9.0e18))
      c.Fail("the range from ", start, " to ", limit, " by ", delta, " is not finite");
    return static_cast<int64_t>(n);
  }
}

template <typename Fn>
void SwitchRange(DType dtype, Fn&& fn) {
  switch (dtype) {
    case kFloat32:
      return fn(float{});
    case kFloat64:
      return fn(double{});
    case kInt32:
      return fn(int32_t{});
    case kInt64:
      return fn(int64_t{});
    default:
      ThrowUnsupportedDType(dtype, "Range", "float32, float64, int32 or int64");
  }
}

const OpDef& RangeOp() {
  static const OpDef op = {
      .name = "Range",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64});
            for (int i = 0; i < 3; ++i) c.ExpectRank(i, 0);
            c.ExpectSameDType(0, 1);
            c.ExpectSameDType(0, 2);
            const Tensor* start = c.input_constant(0);
            const Tensor* limit = c.input_constant(1);
            const Tensor* delta = c.input_constant(2);
            int64_t size = kUnknownDim;
            if (start && limit && delta) {
              SwitchRange(c.input_dtype(0), [&](auto tag) {
                using T = decltype(tag);
                size = RangeSize(c, start->scalar<T>(), limit->scalar<T>(), delta->scalar<T>());
              });
            }
            c.set_output(0, c.input_dtype(0), Shape({size}));
          },
      .kernel =
          [](KernelContext& c) {
            SwitchRange(c.input(0).dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T start = c.input(0).scalar<T>();
              const T delta = c.input(2).scalar<T>();
              const int64_t n = RangeSize(c, start, c.input(1).scalar<T>(), delta);
              Tensor y = c.AllocateOutput(0, Shape({n}));
              T* out = Raw<T>(y);
              // Accumulated as TF does (val += delta), so float ranges agree bit for bit.
              T v = start;
              for (int64_t i = 0; i < n; ++i, v += delta) out[i] = v;
            });
          },
      .no_gradient =
          "Range's output is integer-valued positions (TF does not differentiate it "
          "either)",
      .sample =
          [] {
            return OpSample{{Tensor::Scalar<double>(0.5), Tensor::Scalar<double>(3.0),
                             Tensor::Scalar<double>(0.75)},
                            {}};
          },
  };
  return op;
}

// ---- Cumsum, Cumprod --------------------------------------------------------------------

// The record of a running sum or product along `axis`: `step(acc, x)` folds one element in,
// from the identity `T(init)`.
template <typename Step>
OpDef ScanOp(const std::string& name, int init, const GradFn& grad) {
  OpDef op{
      .name = name,
      .num_inputs = 1,
      .attrs = {kAxis.Default(0), kExclusive.Default(false), kReverse.Default(false)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64});
            const Shape& in = c.input_shape(0);
            if (in.rank_known()) CanonicalAxis(c, c.attr(kAxis), in.rank());
            c.set_output(0, c.input_dtype(0), in);
          },
      .kernel =
          [name, init](KernelContext& c) {
            const Tensor& x = c.input(0);
            const int axis = CanonicalAxis(c, c.attr(kAxis), x.rank());
            const bool exclusive = c.attr(kExclusive), reverse = c.attr(kReverse);
            const std::vector<int64_t>& dims = x.shape().dims();
            const int64_t outer = Product(dims, 0, axis);
            const int64_t len = dims[axis];
            const int64_t inner = Product(dims, axis + 1, dims.size());
            Tensor y = c.AllocateOutput(0, x.shape());
            SwitchNumeric(x.dtype(), name, [&](auto tag) {
              using T = decltype(tag);
              const T* in = x.data<T>();
              T* out = y.data<T>();
              for (int64_t o = 0; o < outer; ++o) {
                for (int64_t i = 0; i < inner; ++i) {
                  const int64_t base = o * len * inner + i;
                  T acc = static_cast<T>(init);
                  for (int64_t k = 0; k < len; ++k) {
                    const int64_t at = base + (reverse ? len - 1 - k : k) * inner;
                    if (exclusive) {
                      out[at] = acc;
                      acc = Step{}(acc, in[at]);
                    } else {
                      acc = Step{}(acc, in[at]);
                      out[at] = acc;
                    }
                  }
                }
              }
            });
          },
      .grad = grad,
  };
  return op;
}

struct AddStep {
  template <typename T>
  T operator()(T a, T b) const {
    return a + b;
  }
};
struct MulStep {
  template <typename T>
  T operator()(T a, T b) const {
    return a * b;
  }
};

CumsumOptions ScanOptions(const GradContext& g, bool flip) {
  return {.exclusive = g.attr(kExclusive), .reverse = flip != g.attr(kReverse)};
}

const OpDef& CumsumOp() {
  static const OpDef op = ScanOp<AddStep>("Cumsum", 0, [](const GradContext& g) {
    // The sum's transpose: the same scan in the other direction (TF's _CumsumGrad).
    return std::vector<GradOutput>{
        Cumsum(g.scope(), g.grad(), g.attr(kAxis), ScanOptions(g, true))};
  });
  return op;
}

const OpDef& CumprodOp() {
  static const OpDef op = ScanOp<MulStep>("Cumprod", 1, [](const GradContext& g) {
    // TF's _CumprodGrad: d x = cumsum(y * dy, reversed) / x, y = cumprod(x) (so a zero in x
    // gives a NaN or infinite gradient, as in TF 1.15).
    const Scope& s = g.scope();
    Output y = Cumprod(s, g.input(0), g.attr(kAxis), ScanOptions(g, false));
    Output sums = Cumsum(s, Mul(s, y, g.grad()), g.attr(kAxis), ScanOptions(g, true));
    return std::vector<GradOutput>{Div(s, sums, g.input(0))};
  });
  return op;
}

}  // namespace

Output Range(const Scope& scope, Input start, Input limit, Input delta) {
  Output a = AsOutput(scope, start);
  Output b = AsOutput(scope, limit, a.dtype());
  Output d = AsOutput(scope, delta, a.dtype());
  return scope.AddNode(RangeOp(), {a, b, d}, {}, "Range")->output(0);
}

Output Cumsum(const Scope& scope, Input x, int64_t axis, CumsumOptions options) {
  return scope
      .AddNode(CumsumOp(), {AsOutput(scope, x)},
               {kAxis(axis), kExclusive(options.exclusive), kReverse(options.reverse)}, "Cumsum")
      ->output(0);
}

Output Cumprod(const Scope& scope, Input x, int64_t axis, CumsumOptions options) {
  return scope
      .AddNode(CumprodOp(), {AsOutput(scope, x)},
               {kAxis(axis), kExclusive(options.exclusive), kReverse(options.reverse)}, "Cumprod")
      ->output(0);
}

void array_internal::RegisterArraySequenceOps(OpRegistry& registry) {
  for (const OpDef* op : {&RangeOp(), &CumsumOp(), &CumprodOp()}) registry.Register(*op);
}

}  // namespace loom
