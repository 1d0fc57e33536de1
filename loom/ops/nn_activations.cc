// Activations and BiasAdd, each with its fused gradient op (TF's ReluGrad, SigmoidGrad, ...).
#include <algorithm>
#include <cmath>

#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"

namespace loom {
namespace nn_internal {

void FloatSameAsInput(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
}

void FloatBinarySameShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectSameDType(0, 1);
  if (!c.input_shape(0).IsCompatibleWith(c.input_shape(1))) {
    c.Fail("inputs must have the same shape, got ", c.input_shape(0), " and ", c.input_shape(1));
  }
  c.set_output(0, c.input_dtype(0), c.input_shape(0).MergeWith(c.input_shape(1)));
}

void ExpectSameRuntimeShape(const KernelContext& c, int i, int j) {
  if (c.input(i).shape() != c.input(j).shape()) {
    c.Fail("inputs ", i, " and ", j, " must have the same shape, got ", c.input(i).shape(), " and ",
           c.input(j).shape());
  }
}

}  // namespace nn_internal

namespace {

inline constexpr Attr<double> kAlpha{"alpha"};

using nn_internal::BinaryKernel;
using nn_internal::FloatBinarySameShape;
using nn_internal::FloatSameAsInput;
using nn_internal::kElementwiseChunk;
using nn_internal::UnaryKernel;

using nn_internal::AddOp;

// A (a, b) -> out element-wise gradient op; `reuse` is the input whose buffer it may take;
// `grad` its own gradient (second derivatives of the activation, as TF 1.15 has them).
template <typename Fn>
OpDef GradOpDef(const char* name, int reuse, Fn fn, const GradFn& grad) {
  return {
      .name = name,
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = FloatBinarySameShape,
      .kernel = [reuse, fn](KernelContext& c) { BinaryKernel(c, reuse, fn); },
      .grad = grad,
  };
}

// The gradient of a (dy, x) -> dy * f'(x) op whose f' is piecewise constant (ReLU, ReLU6,
// leaky ReLU): linear in dy, and zero in x (almost everywhere; TF 1.15 returns zeros).
GradFn PiecewiseLinearGrad(const OpDef& (*self)()) {
  return [self](const GradContext& g) -> std::vector<GradOutput> {
    return {AddOp(g.scope(), self(), {g.grad(0), g.input(1)}, g.node().attrs()), GradOutput()};
  };
}

// Gradient op inputs (TF's order): ReluGrad/Relu6Grad/LeakyReluGrad/SoftplusGrad take
// (gradients, features), EluGrad (gradients, outputs), SigmoidGrad/TanhGrad (y, dy).
const OpDef& ReluGradOp() {
  static const OpDef op = GradOpDef(
      "ReluGrad", 0, [](auto dy, auto x) { return nn_internal::ReluGradOf(dy, x); },
      PiecewiseLinearGrad(ReluGradOp));
  return op;
}

const OpDef& Relu6GradOp() {
  // d/dx min(max(x, 0), 6) = [0 < x < 6]; NaN at x = NaN
  static const OpDef op = GradOpDef(
      "Relu6Grad", 0,
      [](auto dy, auto x) { return x > 0 && x < 6 ? dy : (x != x ? x : decltype(dy)(0)); },
      PiecewiseLinearGrad(Relu6GradOp));
  return op;
}

const OpDef& EluGradOp() {
  // d/dx elu(x) = 1 for x > 0, exp(x) = y + 1 otherwise
  // Its own gradient: d dy = EluGrad(G, y); d y = G dy where y <= 0, else 0.
  static const OpDef op = GradOpDef(
      "EluGrad", 0, [](auto dy, auto y) { return y > 0 ? dy : dy * (y + 1); },
      [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const Output& y = g.input(1);
        Output d_y =
            Mul(s, Mul(s, g.grad(0), g.input(0)), Cast(s, LessEqual(s, y, 0.0), y.dtype()));
        return {AddOp(s, EluGradOp(), {g.grad(0), y}), d_y};
      });
  return op;
}

const OpDef& SigmoidGradOp() {
  // d/dx sigmoid(x) = y (1 - y)
  // Its own gradient: d y = G dy (1 - 2y); d dy = SigmoidGrad(y, G).
  static const OpDef op = GradOpDef(
      "SigmoidGrad", 1, [](auto y, auto dy) { return dy * y * (1 - y); },
      [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const Output& y = g.input(0);
        Output d_y = Mul(s, Mul(s, g.grad(0), g.input(1)), Sub(s, 1.0, Mul(s, y, 2.0)));
        return {d_y, AddOp(s, SigmoidGradOp(), {y, g.grad(0)})};
      });
  return op;
}

const OpDef& TanhGradOp() {
  // d/dx tanh(x) = 1 - y^2
  // Its own gradient: d y = -2 G dy y; d dy = TanhGrad(y, G).
  static const OpDef op = GradOpDef(
      "TanhGrad", 1, [](auto y, auto dy) { return dy * (1 - y * y); },
      [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const Output& y = g.input(0);
        Output d_y = Mul(s, Mul(s, g.grad(0), g.input(1)), Mul(s, y, -2.0));
        return {d_y, AddOp(s, TanhGradOp(), {y, g.grad(0)})};
      });
  return op;
}

const OpDef& SoftplusGradOp() {
  // d/dx log(1 + exp(x)) = sigmoid(x)
  // Its own gradient: d dy = SoftplusGrad(G, x); d x = G dy sigmoid'(x).
  static const OpDef op = GradOpDef(
      "SoftplusGrad", 0, [](auto dy, auto x) { return dy / (1 + std::exp(-x)); },
      [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const Output& x = g.input(1);
        Output d_x = AddOp(s, SigmoidGradOp(), {Sigmoid(s, x), Mul(s, g.grad(0), g.input(0))});
        return {AddOp(s, SoftplusGradOp(), {g.grad(0), x}), d_x};
      });
  return op;
}

const OpDef& LeakyReluGradOp() {
  static const OpDef op = {
      .name = "LeakyReluGrad",
      .num_inputs = 2,
      .attrs = {kAlpha.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = FloatBinarySameShape,
      .kernel =
          [](KernelContext& c) {
            // d/dx leaky_relu(x) = 1 for x > 0, alpha otherwise
            const double alpha = c.attr(kAlpha);
            BinaryKernel(c, 0, [alpha](auto dy, auto x) {
              return x > 0 ? dy : static_cast<decltype(dy)>(alpha) * dy;
            });
          },
      .grad = PiecewiseLinearGrad(LeakyReluGradOp),
      .not_swept = "built only by LeakyRelu's gradient rule; LeakyRelu's gradient check covers it",
  };
  return op;
}

// An activation y = fn(x) whose gradient is grad_op(dy, x) (or grad_op(dy, y) / (y, dy)).
enum class GradArgs { kDyX, kDyY, kYDy };

template <typename Fn>
OpDef ActivationOpDef(const char* name, Fn fn, const OpDef& (*grad_op)(), GradArgs args) {
  return {
      .name = name,
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = FloatSameAsInput,
      .kernel = [fn](KernelContext& c) { UnaryKernel(c, fn); },
      .grad = [grad_op, args](const GradContext& g) -> std::vector<GradOutput> {
        const Output& dy = g.grad(0);
        switch (args) {
          case GradArgs::kDyX:
            return {AddOp(g.scope(), grad_op(), {dy, g.input(0)})};
          case GradArgs::kDyY:
            return {AddOp(g.scope(), grad_op(), {dy, g.output(0)})};
          case GradArgs::kYDy:
            return {AddOp(g.scope(), grad_op(), {g.output(0), dy})};
        }
        return {GradOutput()};
      },
  };
}

// Relu and Relu6 propagate NaN as numpy's maximum/minimum do: `x <= 0` is false for NaN,
// so NaN passes through (one unordered compare and a blend per element; still vectorized).
const OpDef& ReluOp() {
  static const OpDef op = ActivationOpDef(
      "Relu", [](auto x) { return x <= 0 ? decltype(x)(0) : x; }, ReluGradOp, GradArgs::kDyX);
  return op;
}

const OpDef& Relu6Op() {
  static const OpDef op = ActivationOpDef(
      "Relu6",
      [](auto x) {
        const auto low = x <= 0 ? decltype(x)(0) : x;
        return low > 6 ? decltype(x)(6) : low;
      },
      Relu6GradOp, GradArgs::kDyX);
  return op;
}

const OpDef& EluOp() {
  static const OpDef op = ActivationOpDef(
      "Elu", [](auto x) { return x > 0 ? x : std::expm1(x); }, EluGradOp, GradArgs::kDyY);
  return op;
}

const OpDef& SigmoidOp() {
  static const OpDef op = ActivationOpDef(
      "Sigmoid", [](auto x) { return 1 / (1 + std::exp(-x)); }, SigmoidGradOp, GradArgs::kYDy);
  return op;
}

const OpDef& TanhOp() {
  static const OpDef op = ActivationOpDef(
      "Tanh", [](auto x) { return std::tanh(x); }, TanhGradOp, GradArgs::kYDy);
  return op;
}

const OpDef& SoftplusOp() {
  // x + log(1 + exp(-x)) for x > 0 never overflows exp.
  static const OpDef op = ActivationOpDef(
      "Softplus",
      [](auto x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); },
      SoftplusGradOp, GradArgs::kDyX);
  return op;
}

const OpDef& LeakyReluOp() {
  static const OpDef op = {
      .name = "LeakyRelu",
      .num_inputs = 1,
      .attrs = {kAlpha.Default(0.2)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = FloatSameAsInput,
      .kernel =
          [](KernelContext& c) {
            const double alpha = c.attr(kAlpha);
            UnaryKernel(
                c, [alpha](auto x) { return x > 0 ? x : static_cast<decltype(x)>(alpha) * x; });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {
            AddOp(g.scope(), LeakyReluGradOp(), {g.grad(0), g.input(0)}, {kAlpha(g.attr(kAlpha))})};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kAlpha(0.1)}};
          },
  };
  return op;
}

// ---- BiasAdd ----

const OpDef& BiasAddGradOp() {
  static const OpDef op = {
      .name = "BiasAddGrad",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            const Shape& s = c.input_shape(0);
            c.set_output(0, c.input_dtype(0),
                         s.rank_known() && s.rank() >= 1 ? Shape{s.dim(-1)} : Shape{kUnknownDim});
          },
      .kernel =
          [](KernelContext& c) {
            // Sums [rows, channels] over rows: each block of rows sums into its own
            // partial vector, then the partials are added.
            const Tensor& dy = c.input(0);
            if (dy.rank() < 1) c.Fail("input must have rank >= 1, got ", dy.shape());
            const int64_t channels = dy.dim(-1);
            const int64_t rows = channels == 0 ? 0 : dy.NumElements() / channels;
            Tensor out = c.AllocateOutput(0, Shape{channels});
            SwitchFloat(dy.dtype(), "BiasAddGrad", [&](auto tag) {
              using T = decltype(tag);
              const T* in = dy.data<T>();
              T* o = out.data<T>();
              const int64_t work_blocks = std::max<int64_t>(1, rows * channels / kElementwiseChunk);
              const int64_t blocks =
                  std::min<int64_t>({work_blocks, std::max<int64_t>(rows, 1),
                                     4 * static_cast<int64_t>(c.pool().num_threads())});
              std::vector<T> partial(blocks * channels, T(0));
              c.pool().ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
                internal::Vectorized([&] {
                  for (int64_t b = b0; b < b1; ++b) {
                    T* acc = partial.data() + b * channels;
                    for (int64_t r = rows * b / blocks; r < rows * (b + 1) / blocks; ++r) {
                      const T* row = in + r * channels;
                      for (int64_t j = 0; j < channels; ++j) acc[j] += row[j];
                    }
                  }
                });
              });
              for (int64_t j = 0; j < channels; ++j) o[j] = T(0);
              for (int64_t b = 0; b < blocks; ++b) {
                for (int64_t j = 0; j < channels; ++j) o[j] += partial[b * channels + j];
              }
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // The sum over every axis but the last: its gradient is G broadcast along them.
        return {BiasAdd(g.scope(), ZerosLike(g.scope(), g.input(0)), g.grad(0))};
      },
  };
  return op;
}

const OpDef& BiasAddOp() {
  static const OpDef op = {
      .name = "BiasAdd",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            c.ExpectRank(1, 1);
            const Shape& v = c.input_shape(0);
            const Shape& b = c.input_shape(1);
            if (v.rank_known() && v.rank() < 1) c.Fail("value must have rank >= 1, got ", v);
            if (v.rank_known() && b.rank_known() && v.dim(-1) != kUnknownDim &&
                b.dim(0) != kUnknownDim && v.dim(-1) != b.dim(0)) {
              c.Fail("bias of shape ", b, " does not match the last dimension of value ", v);
            }
            Shape out = v;
            if (v.rank_known() && b.rank_known() && v.dim(-1) == kUnknownDim) {
              out.set_dim(v.rank() - 1, b.dim(0));
            }
            c.set_output(0, c.input_dtype(0), out);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& value = c.input(0);
            const Tensor& bias = c.input(1);
            if (value.rank() < 1 || bias.rank() != 1 || value.dim(-1) != bias.dim(0)) {
              c.Fail("bias of shape ", bias.shape(), " does not match the last dimension of value ",
                     value.shape());
            }
            Tensor out = c.ForwardInputOrAllocate(0, 0, value.shape());
            const int64_t channels = bias.dim(0);
            const int64_t rows = channels == 0 ? 0 : value.NumElements() / channels;
            SwitchFloat(value.dtype(), "BiasAdd", [&](auto tag) {
              using T = decltype(tag);
              const T* in = value.data<T>();
              const T* b = bias.data<T>();
              T* o = out.data<T>();
              const int64_t min_rows =
                  std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(channels, 1));
              c.pool().ParallelFor(rows, min_rows, [&](int64_t r0, int64_t r1) {
                internal::Vectorized([&] {
                  for (int64_t r = r0; r < r1; ++r) {
                    const T* x = in + r * channels;
                    T* y = o + r * channels;
                    for (int64_t j = 0; j < channels; ++j) y[j] = x[j] + b[j];
                  }
                });
              });
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {g.grad(0), AddOp(g.scope(), BiasAddGradOp(), {g.grad(0)})};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({3})}, {}};
          },
  };
  return op;
}

Output Unary(const Scope& scope, const OpDef& op, const Input& x, AttrMap attrs = {}) {
  return scope.AddNode(op, {AsOutput(scope, x)}, std::move(attrs), op.name)->output(0);
}

}  // namespace

Output Relu(const Scope& scope, Input features) { return Unary(scope, ReluOp(), features); }
Output Relu6(const Scope& scope, Input features) { return Unary(scope, Relu6Op(), features); }
Output Elu(const Scope& scope, Input features) { return Unary(scope, EluOp(), features); }
Output LeakyRelu(const Scope& scope, Input features, double alpha) {
  return Unary(scope, LeakyReluOp(), features, {kAlpha(alpha)});
}
Output Sigmoid(const Scope& scope, Input x) { return Unary(scope, SigmoidOp(), x); }
Output Tanh(const Scope& scope, Input x) { return Unary(scope, TanhOp(), x); }
Output Softplus(const Scope& scope, Input features) { return Unary(scope, SoftplusOp(), features); }

Output BiasAdd(const Scope& scope, Input value, Input bias) {
  Output v = AsOutput(scope, value);
  Output b = AsOutput(scope, bias, v.dtype());
  return scope.AddNode(BiasAddOp(), {v, b}, {}, "BiasAdd")->output(0);
}

void RegisterNnOps(OpRegistry& registry) {
  nn_internal::RegisterNnActivationOps(registry);
  nn_internal::RegisterNnConvOps(registry);
  nn_internal::RegisterNnPoolOps(registry);
  nn_internal::RegisterNnLossOps(registry);
  nn_internal::RegisterNnNormOps(registry);
}

void nn_internal::RegisterNnActivationOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&ReluOp(), &ReluGradOp(), &Relu6Op(), &Relu6GradOp(), &EluOp(), &EluGradOp(),
        &LeakyReluOp(), &LeakyReluGradOp(), &SigmoidOp(), &SigmoidGradOp(), &TanhOp(),
        &TanhGradOp(), &SoftplusOp(), &SoftplusGradOp(), &BiasAddOp(), &BiasAddGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
