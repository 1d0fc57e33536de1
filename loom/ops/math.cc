#include "loom/ops/math.h"

#include <cmath>
#include <type_traits>

#include "loom/ops/elementwise.h"
#include "loom/ops/math_internal.h"
#include "loom/ops/matmul.h"
#include "loom/ops/reduce.h"

namespace loom {
namespace {

using namespace math_internal;  // NOLINT: the math files' own helpers

using internal::BinaryBroadcast;
using internal::ForwardAnyInputOrAllocate;
using internal::RuntimeBroadcastShape;
using internal::TernaryBroadcast;
using internal::UnaryMap;

// ---------------------------------------------------------------------------------------
// Element functors: plain inline calls, instantiated per dtype, so the loops vectorize.

#define LOOM_UNARY_FUNCTOR(Name, expr) \
  struct Name {                        \
    template <typename T>              \
    T operator()(T x) const {          \
      return static_cast<T>(expr);     \
    }                                  \
  };
LOOM_UNARY_FUNCTOR(NegF, -x)
LOOM_UNARY_FUNCTOR(SquareF, x* x)
LOOM_UNARY_FUNCTOR(SignF, (T(0) < x) - (x < T(0)))
LOOM_UNARY_FUNCTOR(ExpF, std::exp(x))
LOOM_UNARY_FUNCTOR(LogF, std::log(x))
LOOM_UNARY_FUNCTOR(Log1pF, std::log1p(x))
LOOM_UNARY_FUNCTOR(SqrtF, std::sqrt(x))
LOOM_UNARY_FUNCTOR(RsqrtF, T(1) / std::sqrt(x))
LOOM_UNARY_FUNCTOR(ReciprocalF, T(1) / x)
LOOM_UNARY_FUNCTOR(FloorF, std::floor(x))
// Half to even (the default rounding mode), as TF's Round and ONNX's: 2.5 -> 2, -1.5 -> -2.
LOOM_UNARY_FUNCTOR(RoundF, std::nearbyint(x))
#undef LOOM_UNARY_FUNCTOR

struct AbsF {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (std::is_floating_point_v<T>) {
      return std::fabs(x);
    } else {
      return x < 0 ? static_cast<T>(-x) : x;
    }
  }
};

struct LogicalNotF {
  bool operator()(bool x) const { return !x; }
};

#define LOOM_BINARY_FUNCTOR(Name, Out, expr) \
  struct Name {                              \
    template <typename T>                    \
    Out operator()(T a, T b) const {         \
      return static_cast<Out>(expr);         \
    }                                        \
  };
LOOM_BINARY_FUNCTOR(AddF, T, a + b)
LOOM_BINARY_FUNCTOR(SubF, T, a - b)
LOOM_BINARY_FUNCTOR(MulF, T, a* b)
// Integer division by zero is caught by the kernel before these run. The one overflowing
// quotient, the most negative value over -1, wraps to itself (two's complement, as numpy
// does) instead of trapping: `WrapNeg` negates without signed overflow.
template <typename T>
T WrapNeg(T a) {
  return static_cast<T>(static_cast<std::make_unsigned_t<T>>(0) -
                        static_cast<std::make_unsigned_t<T>>(a));
}
struct DivF {  // truncating for integers, as C++ and TF's Div / TruncateDiv
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (b == -1) return WrapNeg(a);
    }
    return static_cast<T>(a / b);
  }
};
// TF's FloorDiv: the quotient rounded toward -inf (Python's //); floor(a / b) for floats.
struct FloorDivF {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (b == -1) return WrapNeg(a);
      const T q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(a / b);
    } else {
      return std::floor(a / b);
    }
  }
};
// TF's FloorMod: the remainder with the divisor's sign (Python's %), a == FloorDiv(a, b) * b
// + FloorMod(a, b); for floats from fmod, exact, as TF's functor (not a - floor(a/b) * b).
struct FloorModF {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (b == -1) return T{0};
      const T r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(a % b);
    } else {
      const T r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
  }
};
// NaN propagates as in numpy's maximum/minimum: `a != a` is true only for NaN (and always
// false for integers, where it folds away); a NaN `b` wins because `a > b` is false.
LOOM_BINARY_FUNCTOR(MaximumF, T, a > b || a != a ? a : b)
LOOM_BINARY_FUNCTOR(MinimumF, T, a < b || a != a ? a : b)
LOOM_BINARY_FUNCTOR(PowF, T, std::pow(a, b))
LOOM_BINARY_FUNCTOR(EqualF, bool, a == b)
LOOM_BINARY_FUNCTOR(NotEqualF, bool, a != b)
LOOM_BINARY_FUNCTOR(LessF, bool, a < b)
LOOM_BINARY_FUNCTOR(LessEqualF, bool, a <= b)
LOOM_BINARY_FUNCTOR(GreaterF, bool, a > b)
LOOM_BINARY_FUNCTOR(GreaterEqualF, bool, a >= b)
LOOM_BINARY_FUNCTOR(LogicalAndF, bool, a&& b)
LOOM_BINARY_FUNCTOR(LogicalOrF, bool, a || b)
#undef LOOM_BINARY_FUNCTOR

// ---------------------------------------------------------------------------------------
// Shape rules and kernels shared by the records below.

ShapeFn UnaryShape(Domain d) {
  return [d](InferenceContext& c) {
    ExpectDomain(c, 0, d);
    c.set_output(0, c.input_dtype(0), c.input_shape(0));
  };
}

ShapeFn BinaryShape(Domain d, bool bool_out) {
  return [d, bool_out](InferenceContext& c) {
    ExpectDomain(c, 0, d);
    c.ExpectSameDType(0, 1);
    c.set_output(0, bool_out ? kBool : c.input_dtype(0),
                 BroadcastShapes(c, c.input_shape(0), c.input_shape(1)));
  };
}

template <typename F, Domain D>
void UnaryKernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor out = c.ForwardInputOrAllocate(0, 0, x.shape());
  Dispatch<D>(x.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    UnaryMap(c.pool(), x.data<T>(), out.data<T>(), x.NumElements(), F{});
  });
}

template <typename F, Domain D>
void BinaryKernel(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Shape shape = RuntimeBroadcastShape(c, a.shape(), b.shape());
  Tensor out = ForwardAnyInputOrAllocate(c, {0, 1}, shape);
  Dispatch<D>(a.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    using TO = decltype(F{}(T{}, T{}));
    if constexpr ((std::is_same_v<F, DivF> || std::is_same_v<F, FloorDivF> ||
                   std::is_same_v<F, FloorModF>)&&std::is_integral_v<T>) {
      for (T v : b.flat<T>()) {
        if (v == 0) c.Fail("integer division by zero (divisor ", b.shape(), ")");
      }
    }
    BinaryBroadcast(c.pool(), a.shape(), a.data<T>(), b.shape(), b.data<T>(), shape, out.data<TO>(),
                    F{});
  });
}

template <typename F, Domain D, int kNumInputs>
OpDef ElementwiseOp(std::string name, GradFn grad, std::string no_gradient = "",
                    std::function<OpSample()> sample = nullptr) {
  OpDef op;
  op.name = std::move(name);
  op.num_inputs = kNumInputs;
  op.sample = std::move(sample);
  if constexpr (kNumInputs == 1) {
    op.output_dtypes = {DTypeRule::SameAsInput(0)};
    op.shape = UnaryShape(D);
    op.kernel = UnaryKernel<F, D>;
  } else {
    constexpr bool kBoolOut = std::is_same_v<decltype(F{}(1.0f, 1.0f)), bool> ||
                              std::is_same_v<F, LogicalAndF> || std::is_same_v<F, LogicalOrF>;
    op.output_dtypes = {kBoolOut ? DTypeRule::Fixed(kBool) : DTypeRule::SameAsInput(0)};
    op.shape = BinaryShape(D, kBoolOut);
    op.kernel = BinaryKernel<F, D>;
  }
  op.grad = std::move(grad);
  op.no_gradient = std::move(no_gradient);
  return op;
}

// ---------------------------------------------------------------------------------------
// Binary arithmetic. x = input 0, y = input 1, z = output, dz = incoming gradient; every
// input gradient is reduced to the input's shape by SumToShapeOf.

const OpDef& AddOp() {
  static const OpDef op = ElementwiseOp<AddF, Domain::kNumeric, 2>(
      "Add", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx (x + y) = 1, d/dy = 1
        const Scope& s = g.scope();
        return {SumToShapeOf(s, g.grad(), g.input(0)), SumToShapeOf(s, g.grad(), g.input(1))};
      });
  return op;
}

const OpDef& SubOp() {
  static const OpDef op = ElementwiseOp<
      SubF, Domain::kNumeric, 2>("Sub", [](const GradContext& g) -> std::vector<GradOutput> {
    // d/dx (x - y) = 1, d/dy = -1
    const Scope& s = g.scope();
    return {SumToShapeOf(s, g.grad(), g.input(0)), SumToShapeOf(s, Neg(s, g.grad()), g.input(1))};
  });
  return op;
}

const OpDef& MulOp() {
  static const OpDef op = ElementwiseOp<MulF, Domain::kNumeric, 2>(
      "Mul", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx (x * y) = y, d/dy = x
        const Scope& s = g.scope();
        return {SumToShapeOf(s, Mul(s, g.grad(), g.input(1)), g.input(0)),
                SumToShapeOf(s, Mul(s, g.input(0), g.grad()), g.input(1))};
      });
  return op;
}

const OpDef& DivOp() {
  static const OpDef op = ElementwiseOp<DivF, Domain::kNumeric, 2>(
      "Div", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx (x / y) = 1/y, d/dy = -x/y^2 = -z/y
        const Scope& s = g.scope();
        Output y = g.input(1);
        return {SumToShapeOf(s, Div(s, g.grad(), y), g.input(0)),
                SumToShapeOf(s, Neg(s, Mul(s, g.grad(), Div(s, g.output(), y))), y)};
      });
  return op;
}

const OpDef& FloorDivOp() {
  static const OpDef op = ElementwiseOp<FloorDivF, Domain::kNumeric, 2>(
      "FloorDiv", nullptr,
      "FloorDiv is piecewise constant (zero gradient almost everywhere); wrap it in "
      "StopGradient where that is meant");
  return op;
}

const OpDef& FloorModOp() {
  static const OpDef op = ElementwiseOp<FloorModF, Domain::kNumeric, 2>(
      "FloorMod", [](const GradContext& g) -> std::vector<GradOutput> {
        // z = x - floor(x / y) * y: d/dx = 1, d/dy = -floor(x / y) (TF's rule)
        const Scope& s = g.scope();
        Output x = g.input(0), y = g.input(1);
        return {SumToShapeOf(s, g.grad(), x),
                SumToShapeOf(s, Neg(s, Mul(s, g.grad(), FloorDiv(s, x, y))), y)};
      });
  return op;
}

const OpDef& PowOp() {
  static const OpDef op = ElementwiseOp<PowF, Domain::kFloat, 2>(
      "Pow", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx x^y = y x^(y-1); d/dy x^y = x^y log(x) = z log(x), taken as 0 where x <= 0
        const Scope& s = g.scope();
        Output x = g.input(0), y = g.input(1), dz = g.grad();
        Output dx = Mul(s, dz, Mul(s, y, Pow(s, x, Sub(s, y, 1.0))));
        Output log_x = Select(s, Greater(s, x, 0.0), Log(s, x), ZeroOf(s, x));
        Output dy = Mul(s, dz, Mul(s, g.output(), log_x));
        return {SumToShapeOf(s, dx, x), SumToShapeOf(s, dy, y)};
      });
  return op;
}

const OpDef& MaximumOp() {
  static const OpDef op = ElementwiseOp<MaximumF, Domain::kNumeric, 2>(
      "Maximum", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx max(x, y) = [x >= y], d/dy = [x < y] (a tie goes to x, as in TF)
        const Scope& s = g.scope();
        Output x = g.input(0), y = g.input(1), dz = g.grad();
        Output zero = ZeroOf(s, dz);
        return {SumToShapeOf(s, Select(s, GreaterEqual(s, x, y), dz, zero), x),
                SumToShapeOf(s, Select(s, Less(s, x, y), dz, zero), y)};
      });
  return op;
}

const OpDef& MinimumOp() {
  static const OpDef op = ElementwiseOp<MinimumF, Domain::kNumeric, 2>(
      "Minimum", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx min(x, y) = [x <= y], d/dy = [x > y]
        const Scope& s = g.scope();
        Output x = g.input(0), y = g.input(1), dz = g.grad();
        Output zero = ZeroOf(s, dz);
        return {SumToShapeOf(s, Select(s, LessEqual(s, x, y), dz, zero), x),
                SumToShapeOf(s, Select(s, Greater(s, x, y), dz, zero), y)};
      });
  return op;
}

// ---------------------------------------------------------------------------------------
// Unary math. x = input, y = output, dy = incoming gradient.

const OpDef& NegOp() {
  static const OpDef op = ElementwiseOp<NegF, Domain::kNumeric, 1>(
      "Neg", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx -x = -1
        return {Neg(g.scope(), g.grad())};
      });
  return op;
}

const OpDef& AbsOp() {
  static const OpDef op = ElementwiseOp<AbsF, Domain::kNumeric, 1>(
      "Abs", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx |x| = sign(x) (0 at 0)
        return {Mul(g.scope(), g.grad(), Sign(g.scope(), g.input(0)))};
      });
  return op;
}

const OpDef& SquareOp() {
  static const OpDef op = ElementwiseOp<SquareF, Domain::kNumeric, 1>(
      "Square", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx x^2 = 2x
        const Scope& s = g.scope();
        return {Mul(s, g.grad(), Mul(s, g.input(0), 2.0))};
      });
  return op;
}

const OpDef& ExpOp() {
  static const OpDef op = ElementwiseOp<ExpF, Domain::kFloat, 1>(
      "Exp", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx exp(x) = exp(x) = y
        return {Mul(g.scope(), g.grad(), g.output())};
      });
  return op;
}

const OpDef& LogOp() {
  static const OpDef op = ElementwiseOp<LogF, Domain::kFloat, 1>(
      "Log", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx log(x) = 1/x
        return {Div(g.scope(), g.grad(), g.input(0))};
      });
  return op;
}

const OpDef& Log1pOp() {
  static const OpDef op = ElementwiseOp<Log1pF, Domain::kFloat, 1>(
      "Log1p", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx log(1 + x) = 1/(1 + x)
        const Scope& s = g.scope();
        return {Div(s, g.grad(), Add(s, g.input(0), 1.0))};
      });
  return op;
}

const OpDef& SqrtOp() {
  static const OpDef op = ElementwiseOp<SqrtF, Domain::kFloat, 1>(
      "Sqrt", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx sqrt(x) = 1 / (2 sqrt(x)) = 0.5 / y
        const Scope& s = g.scope();
        return {Div(s, Mul(s, g.grad(), 0.5), g.output())};
      });
  return op;
}

const OpDef& RsqrtOp() {
  static const OpDef op = ElementwiseOp<RsqrtF, Domain::kFloat, 1>(
      "Rsqrt", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx x^(-1/2) = -1/2 x^(-3/2) = -0.5 y^3
        const Scope& s = g.scope();
        Output y = g.output();
        return {Mul(s, g.grad(), Mul(s, Mul(s, Square(s, y), y), -0.5))};
      });
  return op;
}

const OpDef& ReciprocalOp() {
  static const OpDef op = ElementwiseOp<ReciprocalF, Domain::kFloat, 1>(
      "Reciprocal", [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx 1/x = -1/x^2 = -y^2
        const Scope& s = g.scope();
        return {Neg(s, Mul(s, g.grad(), Square(s, g.output())))};
      });
  return op;
}

const OpDef& SignOp() {
  static const OpDef op = ElementwiseOp<SignF, Domain::kNumeric, 1>(
      "Sign", nullptr, "Sign is piecewise constant (zero gradient almost everywhere)");
  return op;
}

const OpDef& FloorOp() {
  static const OpDef op = ElementwiseOp<FloorF, Domain::kFloat, 1>(
      "Floor", nullptr, "Floor is piecewise constant (zero gradient almost everywhere)");
  return op;
}

const OpDef& RoundOp() {
  static const OpDef op = ElementwiseOp<RoundF, Domain::kFloat, 1>(
      "Round", nullptr, "Round is piecewise constant (zero gradient almost everywhere)");
  return op;
}

// ---------------------------------------------------------------------------------------
// Comparisons and logic: bool outputs, not differentiable.

constexpr const char* kBoolOutput = "its output is bool";

OpSample BoolSample(int num_inputs) {
  OpSample s;
  s.inputs.push_back(Tensor::FromVector<bool>({true, false}));
  if (num_inputs == 2) s.inputs.push_back(Tensor::FromVector<bool>({true, true}));
  return s;
}

const OpDef& EqualOp() {
  static const OpDef op =
      ElementwiseOp<EqualF, Domain::kComparable, 2>("Equal", nullptr, kBoolOutput);
  return op;
}
const OpDef& NotEqualOp() {
  static const OpDef op =
      ElementwiseOp<NotEqualF, Domain::kComparable, 2>("NotEqual", nullptr, kBoolOutput);
  return op;
}
const OpDef& LessOp() {
  static const OpDef op = ElementwiseOp<LessF, Domain::kNumeric, 2>("Less", nullptr, kBoolOutput);
  return op;
}
const OpDef& LessEqualOp() {
  static const OpDef op =
      ElementwiseOp<LessEqualF, Domain::kNumeric, 2>("LessEqual", nullptr, kBoolOutput);
  return op;
}
const OpDef& GreaterOp() {
  static const OpDef op =
      ElementwiseOp<GreaterF, Domain::kNumeric, 2>("Greater", nullptr, kBoolOutput);
  return op;
}
const OpDef& GreaterEqualOp() {
  static const OpDef op =
      ElementwiseOp<GreaterEqualF, Domain::kNumeric, 2>("GreaterEqual", nullptr, kBoolOutput);
  return op;
}
const OpDef& LogicalAndOp() {
  static const OpDef op = ElementwiseOp<LogicalAndF, Domain::kBool, 2>(
      "LogicalAnd", nullptr, kBoolOutput, [] { return BoolSample(2); });
  return op;
}
const OpDef& LogicalOrOp() {
  static const OpDef op = ElementwiseOp<LogicalOrF, Domain::kBool, 2>(
      "LogicalOr", nullptr, kBoolOutput, [] { return BoolSample(2); });
  return op;
}
const OpDef& LogicalNotOp() {
  static const OpDef op = ElementwiseOp<LogicalNotF, Domain::kBool, 1>(
      "LogicalNot", nullptr, kBoolOutput, [] { return BoolSample(1); });
  return op;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Builders.

namespace {
Output BuildBinary(const OpDef& op, const Scope& scope, const Input& x, const Input& y) {
  auto [a, b] = AsOutputs(scope, x, y);
  return scope.AddNode(op, {a, b}, {}, op.name)->output(0);
}
Output BuildUnary(const OpDef& op, const Scope& scope, const Input& x) {
  return scope.AddNode(op, {AsOutput(scope, x)}, {}, op.name)->output(0);
}
}  // namespace

Output Add(const Scope& s, Input x, Input y) { return BuildBinary(AddOp(), s, x, y); }
Output Sub(const Scope& s, Input x, Input y) { return BuildBinary(SubOp(), s, x, y); }
Output Mul(const Scope& s, Input x, Input y) { return BuildBinary(MulOp(), s, x, y); }
Output Div(const Scope& s, Input x, Input y) { return BuildBinary(DivOp(), s, x, y); }
Output Maximum(const Scope& s, Input x, Input y) { return BuildBinary(MaximumOp(), s, x, y); }
Output Minimum(const Scope& s, Input x, Input y) { return BuildBinary(MinimumOp(), s, x, y); }
Output Pow(const Scope& s, Input x, Input y) { return BuildBinary(PowOp(), s, x, y); }
Output FloorDiv(const Scope& s, Input x, Input y) { return BuildBinary(FloorDivOp(), s, x, y); }
Output FloorMod(const Scope& s, Input x, Input y) { return BuildBinary(FloorModOp(), s, x, y); }

Output Neg(const Scope& s, Input x) { return BuildUnary(NegOp(), s, x); }
Output Abs(const Scope& s, Input x) { return BuildUnary(AbsOp(), s, x); }
Output Square(const Scope& s, Input x) { return BuildUnary(SquareOp(), s, x); }
Output Sign(const Scope& s, Input x) { return BuildUnary(SignOp(), s, x); }
Output Exp(const Scope& s, Input x) { return BuildUnary(ExpOp(), s, x); }
Output Log(const Scope& s, Input x) { return BuildUnary(LogOp(), s, x); }
Output Log1p(const Scope& s, Input x) { return BuildUnary(Log1pOp(), s, x); }
Output Sqrt(const Scope& s, Input x) { return BuildUnary(SqrtOp(), s, x); }
Output Rsqrt(const Scope& s, Input x) { return BuildUnary(RsqrtOp(), s, x); }
Output Reciprocal(const Scope& s, Input x) { return BuildUnary(ReciprocalOp(), s, x); }
Output Floor(const Scope& s, Input x) { return BuildUnary(FloorOp(), s, x); }
Output Round(const Scope& s, Input x) { return BuildUnary(RoundOp(), s, x); }

Output Equal(const Scope& s, Input x, Input y) { return BuildBinary(EqualOp(), s, x, y); }
Output NotEqual(const Scope& s, Input x, Input y) { return BuildBinary(NotEqualOp(), s, x, y); }
Output Less(const Scope& s, Input x, Input y) { return BuildBinary(LessOp(), s, x, y); }
Output LessEqual(const Scope& s, Input x, Input y) { return BuildBinary(LessEqualOp(), s, x, y); }
Output Greater(const Scope& s, Input x, Input y) { return BuildBinary(GreaterOp(), s, x, y); }
Output GreaterEqual(const Scope& s, Input x, Input y) {
  return BuildBinary(GreaterEqualOp(), s, x, y);
}
Output LogicalAnd(const Scope& s, Input x, Input y) { return BuildBinary(LogicalAndOp(), s, x, y); }
Output LogicalOr(const Scope& s, Input x, Input y) { return BuildBinary(LogicalOrOp(), s, x, y); }
Output LogicalNot(const Scope& s, Input x) { return BuildUnary(LogicalNotOp(), s, x); }

void RegisterMathOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&AddOp(),        &SubOp(),        &MulOp(),      &DivOp(),          &PowOp(),
        &MaximumOp(),    &MinimumOp(),    &NegOp(),      &AbsOp(),          &SquareOp(),
        &ExpOp(),        &LogOp(),        &Log1pOp(),    &SqrtOp(),         &RsqrtOp(),
        &ReciprocalOp(), &SignOp(),       &FloorOp(),    &EqualOp(),        &NotEqualOp(),
        &LessOp(),       &LessEqualOp(),  &GreaterOp(),  &GreaterEqualOp(), &LogicalAndOp(),
        &LogicalOrOp(),  &LogicalNotOp(), &FloorDivOp(), &FloorModOp(),     &RoundOp()}) {
    registry.Register(*op);
  }
  math_internal::RegisterMathSelectOps(registry);
  RegisterReduceOps(registry);
  RegisterMatMulOps(registry);
}

}  // namespace loom
