// Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Expm1, Erf, Ceil and Atan2 (math_trig.h): one
// record per function, its kernel a vectorized map and its gradient the derivative's graph.
#include "loom/ops/math_trig.h"

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "loom/ops/elementwise.h"
#include "loom/ops/math.h"

namespace loom {
namespace {

#define LOOM_FLOAT_FUNCTOR(Name, expr) \
  struct Name {                        \
    template <typename T>              \
    T operator()(T x) const {          \
      return static_cast<T>(expr);     \
    }                                  \
  };
LOOM_FLOAT_FUNCTOR(SinF, std::sin(x))
LOOM_FLOAT_FUNCTOR(CosF, std::cos(x))
LOOM_FLOAT_FUNCTOR(TanF, std::tan(x))
LOOM_FLOAT_FUNCTOR(AsinF, std::asin(x))
LOOM_FLOAT_FUNCTOR(AcosF, std::acos(x))
LOOM_FLOAT_FUNCTOR(AtanF, std::atan(x))
LOOM_FLOAT_FUNCTOR(SinhF, std::sinh(x))
LOOM_FLOAT_FUNCTOR(CoshF, std::cosh(x))
LOOM_FLOAT_FUNCTOR(Expm1F, std::expm1(x))
LOOM_FLOAT_FUNCTOR(ErfF, std::erf(x))
LOOM_FLOAT_FUNCTOR(CeilF, std::ceil(x))
#undef LOOM_FLOAT_FUNCTOR

// dx from (scope, x, y, dy): the chain rule of one function.
using Derivative = Output (*)(const Scope&, Output x, Output y, Output dy);

// The op sweep's sample inside (-0.5, 0.5), where asin and acos are defined (the default
// sample is in [0.5, 1.5)).
OpSample UnitIntervalSample() {
  Tensor x = SampleDoubles({2, 3});
  for (double& v : x.flat<double>()) v -= 1.0;
  return OpSample{{x}, {}};
}

template <typename F>
OpDef FloatUnaryOp(std::string name, Derivative derivative, std::string no_gradient = "",
                   std::function<OpSample()> sample = nullptr) {
  OpDef op;
  op.name = std::move(name);
  op.sample = std::move(sample);
  op.num_inputs = 1;
  op.output_dtypes = {DTypeRule::SameAsInput(0)};
  op.shape = [](InferenceContext& c) {
    c.ExpectDType(0, {kFloat32, kFloat64});
    c.set_output(0, c.input_dtype(0), c.input_shape(0));
  };
  op.kernel = [](KernelContext& c) {
    const Tensor& x = c.input(0);
    Tensor out = c.ForwardInputOrAllocate(0, 0, x.shape());
    SwitchFloat(x.dtype(), c.node().op(), [&](auto tag) {
      using T = decltype(tag);
      internal::UnaryMap(c.pool(), x.data<T>(), out.data<T>(), x.NumElements(), F{});
    });
    c.set_output(0, std::move(out));
  };
  if (derivative != nullptr) {
    op.grad = [derivative](const GradContext& g) -> std::vector<GradOutput> {
      return {derivative(g.scope(), g.input(0), g.output(0), g.grad(0))};
    };
  }
  op.no_gradient = std::move(no_gradient);
  return op;
}

// 1 / sqrt(1 - x^2), the magnitude of asin' and acos'.
Output InvSqrtOneMinusSquare(const Scope& s, Output x) {
  return Rsqrt(s, Sub(s, Input(1.0), Square(s, x)));
}

// d/dx sin x = cos x
Output SinGrad(const Scope& s, Output x, Output, Output dy) { return Mul(s, dy, Cos(s, x)); }
const OpDef& SinOp() {
  static const OpDef op = FloatUnaryOp<SinF>("Sin", SinGrad);
  return op;
}

// d/dx cos x = -sin x
Output CosGrad(const Scope& s, Output x, Output, Output dy) {
  return Neg(s, Mul(s, dy, Sin(s, x)));
}
const OpDef& CosOp() {
  static const OpDef op = FloatUnaryOp<CosF>("Cos", CosGrad);
  return op;
}

// d/dx tan x = 1 + tan^2 x = 1 + y^2
Output TanGrad(const Scope& s, Output, Output y, Output dy) {
  return Mul(s, dy, Add(s, Square(s, y), Input(1.0)));
}
const OpDef& TanOp() {
  static const OpDef op = FloatUnaryOp<TanF>("Tan", TanGrad);
  return op;
}

// d/dx asin x = 1 / sqrt(1 - x^2)
Output AsinGrad(const Scope& s, Output x, Output, Output dy) {
  return Mul(s, dy, InvSqrtOneMinusSquare(s, x));
}
const OpDef& AsinOp() {
  static const OpDef op = FloatUnaryOp<AsinF>("Asin", AsinGrad, "", UnitIntervalSample);
  return op;
}

// d/dx acos x = -1 / sqrt(1 - x^2)
Output AcosGrad(const Scope& s, Output x, Output, Output dy) {
  return Neg(s, Mul(s, dy, InvSqrtOneMinusSquare(s, x)));
}
const OpDef& AcosOp() {
  static const OpDef op = FloatUnaryOp<AcosF>("Acos", AcosGrad, "", UnitIntervalSample);
  return op;
}

// d/dx atan x = 1 / (1 + x^2)
Output AtanGrad(const Scope& s, Output x, Output, Output dy) {
  return Div(s, dy, Add(s, Square(s, x), Input(1.0)));
}
const OpDef& AtanOp() {
  static const OpDef op = FloatUnaryOp<AtanF>("Atan", AtanGrad);
  return op;
}

// d/dx sinh x = cosh x
Output SinhGrad(const Scope& s, Output x, Output, Output dy) { return Mul(s, dy, Cosh(s, x)); }
const OpDef& SinhOp() {
  static const OpDef op = FloatUnaryOp<SinhF>("Sinh", SinhGrad);
  return op;
}

// d/dx cosh x = sinh x
Output CoshGrad(const Scope& s, Output x, Output, Output dy) { return Mul(s, dy, Sinh(s, x)); }
const OpDef& CoshOp() {
  static const OpDef op = FloatUnaryOp<CoshF>("Cosh", CoshGrad);
  return op;
}

// d/dx (exp(x) - 1) = exp(x) = y + 1
Output Expm1Grad(const Scope& s, Output, Output y, Output dy) {
  return Mul(s, dy, Add(s, y, Input(1.0)));
}
const OpDef& Expm1Op() {
  static const OpDef op = FloatUnaryOp<Expm1F>("Expm1", Expm1Grad);
  return op;
}

// d/dx erf x = 2 / sqrt(pi) * exp(-x^2)
Output ErfGrad(const Scope& s, Output x, Output, Output dy) {
  return Mul(s, dy, Mul(s, Exp(s, Neg(s, Square(s, x))), Input(2.0 / std::sqrt(std::numbers::pi))));
}
const OpDef& ErfOp() {
  static const OpDef op = FloatUnaryOp<ErfF>("Erf", ErfGrad);
  return op;
}

const OpDef& CeilOp() {
  static const OpDef op = FloatUnaryOp<CeilF>(
      "Ceil", nullptr, "Ceil is piecewise constant (zero gradient almost everywhere)");
  return op;
}

struct Atan2F {
  template <typename T>
  T operator()(T y, T x) const {
    return std::atan2(y, x);
  }
};

// d/dy atan2(y, x) = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2) (TF's _Atan2Grad), each
// summed back to its input's shape.
const OpDef& Atan2Op() {
  static const OpDef op = {
      .name = "Atan2",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            c.set_output(0, c.input_dtype(0),
                         BroadcastShapes(c, c.input_shape(0), c.input_shape(1)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& y = c.input(0);
            const Tensor& x = c.input(1);
            const Shape shape = internal::RuntimeBroadcastShape(c, y.shape(), x.shape());
            Tensor out = internal::ForwardAnyInputOrAllocate(c, {0, 1}, shape);
            SwitchFloat(y.dtype(), "Atan2", [&](auto tag) {
              using T = decltype(tag);
              internal::BinaryBroadcast(c.pool(), y.shape(), y.data<T>(), x.shape(), x.data<T>(),
                                        shape, out.data<T>(), Atan2F{});
            });
            c.set_output(0, std::move(out));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        Output y = g.input(0), x = g.input(1);
        Output scaled = Div(s, g.grad(0), Add(s, Square(s, x), Square(s, y)));
        return {SumToShapeOf(s, Mul(s, scaled, x), y),
                SumToShapeOf(s, Neg(s, Mul(s, scaled, y)), x)};
      },
  };
  return op;
}

Output BuildFloatUnary(const OpDef& op, const Scope& scope, Input x) {
  return scope.AddNode(op, {AsOutput(scope, x)}, {}, op.name)->output(0);
}

}  // namespace

Output Sin(const Scope& scope, Input x) { return BuildFloatUnary(SinOp(), scope, x); }
Output Cos(const Scope& scope, Input x) { return BuildFloatUnary(CosOp(), scope, x); }
Output Tan(const Scope& scope, Input x) { return BuildFloatUnary(TanOp(), scope, x); }
Output Asin(const Scope& scope, Input x) { return BuildFloatUnary(AsinOp(), scope, x); }
Output Acos(const Scope& scope, Input x) { return BuildFloatUnary(AcosOp(), scope, x); }
Output Atan(const Scope& scope, Input x) { return BuildFloatUnary(AtanOp(), scope, x); }
Output Sinh(const Scope& scope, Input x) { return BuildFloatUnary(SinhOp(), scope, x); }
Output Cosh(const Scope& scope, Input x) { return BuildFloatUnary(CoshOp(), scope, x); }
Output Expm1(const Scope& scope, Input x) { return BuildFloatUnary(Expm1Op(), scope, x); }
Output Erf(const Scope& scope, Input x) { return BuildFloatUnary(ErfOp(), scope, x); }
Output Ceil(const Scope& scope, Input x) { return BuildFloatUnary(CeilOp(), scope, x); }
Output Atan2(const Scope& scope, Input y, Input x) {
  Output a = AsOutput(scope, y);
  Output b = AsOutput(scope, x, a.dtype());
  return scope.AddNode(Atan2Op(), {a, b}, {}, "Atan2")->output(0);
}

void RegisterMathTrigOps(OpRegistry& registry) {
  for (const OpDef* op : {&SinOp(), &CosOp(), &TanOp(), &AsinOp(), &AcosOp(), &AtanOp(), &SinhOp(),
                          &CoshOp(), &Expm1Op(), &ErfOp(), &CeilOp(), &Atan2Op()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
