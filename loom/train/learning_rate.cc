#include "loom/train/learning_rate.h"

#include <cmath>
#include <numbers>

#include "loom/train/training_kernels.h"

namespace loom::train {
namespace {

inline constexpr Attr<int64_t> kDecaySteps{"decay_steps"};
inline constexpr Attr<double> kDecayRate{"decay_rate"};
inline constexpr Attr<bool> kStaircase{"staircase"};
inline constexpr Attr<std::vector<int64_t>> kBoundaries{"boundaries"};
inline constexpr Attr<std::vector<double>> kValues{"values"};
inline constexpr Attr<bool> kCycle{"cycle"};
inline constexpr Attr<double> kEndLearningRate{"end_learning_rate"};
inline constexpr Attr<double> kPower{"power"};
inline constexpr Attr<double> kAlpha{"alpha"};

// A schedule's value at global step t from the base learning rate and the node's attrs.
using ScheduleFn = double (*)(const Node& node, double t, double lr);

// The op record of a schedule: inputs (global_step[, learning_rate]), one scalar output of
// learning_rate's dtype (float32 without one).
OpDef MakeScheduleOp(std::string name, bool has_learning_rate, std::vector<AttrDef> attrs,
                     ScheduleFn fn, const AttrMap& sample_attrs) {
  OpDef op;
  op.name = std::move(name);
  op.num_inputs = has_learning_rate ? 2 : 1;
  op.attrs = std::move(attrs);
  op.output_dtypes = {has_learning_rate ? DTypeRule::SameAsInput(1) : DTypeRule::Fixed(kFloat32)};
  op.sample = [has_learning_rate, sample_attrs] {
    OpSample s{{Tensor::Scalar<int64_t>(5)}, sample_attrs, /*check_gradient=*/false};
    if (has_learning_rate) s.inputs.push_back(Tensor::Scalar<double>(0.1));
    return s;
  };
  op.shape = [has_learning_rate](InferenceContext& c) {
    c.ExpectDType(0, {kInt64, kInt32});
    c.ExpectRank(0, 0);
    DType out = kFloat32;
    if (has_learning_rate) {
      c.ExpectDType(1, {kFloat32, kFloat64});
      c.ExpectRank(1, 0);
      out = c.input_dtype(1);
    }
    c.set_output(0, out, Shape{});
  };
  op.kernel = [has_learning_rate, fn](KernelContext& c) {
    const double t = internal::ScalarInput(c, 0);
    const double lr = has_learning_rate ? internal::ScalarInput(c, 1) : 0.0;
    const double value = fn(c.node(), t, lr);
    Tensor out = c.AllocateOutput(0, Shape{});
    if (out.dtype() == kFloat64) {
      out.data<double>()[0] = value;
    } else {
      out.data<float>()[0] = static_cast<float>(value);
    }
    c.set_output(0, out);
  };
  op.no_gradient = "learning-rate schedules are not differentiable";
  return op;
}

double DecaySteps(const Node& node) { return static_cast<double>(node.attr(kDecaySteps)); }

// t / decay_steps, floored when the node's staircase attr is set.
double DecayProgress(const Node& n, double t) {
  const double p = t / DecaySteps(n);
  return n.attr(kStaircase) ? std::floor(p) : p;
}

const OpDef& ExponentialDecayOp() {
  static const OpDef op =
      MakeScheduleOp("ExponentialDecay", true,
                     {kDecaySteps.Required(), kDecayRate.Required(), kStaircase.Default(false)},
                     [](const Node& n, double t, double lr) {
                       return lr * std::pow(n.attr(kDecayRate), DecayProgress(n, t));
                     },
                     {kDecaySteps(10), kDecayRate(0.5)});
  return op;
}

const OpDef& InverseTimeDecayOp() {
  static const OpDef op =
      MakeScheduleOp("InverseTimeDecay", true,
                     {kDecaySteps.Required(), kDecayRate.Required(), kStaircase.Default(false)},
                     [](const Node& n, double t, double lr) {
                       return lr / (1.0 + n.attr(kDecayRate) * DecayProgress(n, t));
                     },
                     {kDecaySteps(10), kDecayRate(0.5)});
  return op;
}

const OpDef& NaturalExpDecayOp() {
  static const OpDef op =
      MakeScheduleOp("NaturalExpDecay", true,
                     {kDecaySteps.Required(), kDecayRate.Required(), kStaircase.Default(false)},
                     [](const Node& n, double t, double lr) {
                       return lr * std::exp(-n.attr(kDecayRate) * DecayProgress(n, t));
                     },
                     {kDecaySteps(10), kDecayRate(0.5)});
  return op;
}

const OpDef& PiecewiseConstantOp() {
  static const OpDef op =
      MakeScheduleOp("PiecewiseConstant", false, {kBoundaries.Required(), kValues.Required()},
                     [](const Node& n, double t, double) {
                       const auto& boundaries = n.attr(kBoundaries);
                       const auto& values = n.attr(kValues);
                       size_t i = 0;
                       while (i < boundaries.size() && t > static_cast<double>(boundaries[i])) ++i;
                       return values[i];
                     },
                     {kBoundaries(std::vector<int64_t>{3}), kValues(std::vector<double>{1, 2})});
  return op;
}

const OpDef& PolynomialDecayOp() {
  static const OpDef op =
      MakeScheduleOp("PolynomialDecay", true,
                     {kDecaySteps.Required(), kEndLearningRate.Default(0.0001), kPower.Default(1.0),
                      kCycle.Default(false)},
                     [](const Node& n, double t, double lr) {
                       double decay_steps = DecaySteps(n);
                       if (n.attr(kCycle)) {
                         // Restart every decay_steps; at t == 0 the first cycle is used.
                         decay_steps *= t == 0 ? 1.0 : std::ceil(t / decay_steps);
                       } else {
                         t = std::min(t, decay_steps);
                       }
                       const double end = n.attr(kEndLearningRate);
                       return (lr - end) * std::pow(1.0 - t / decay_steps, n.attr(kPower)) + end;
                     },
                     {kDecaySteps(10)});
  return op;
}

const OpDef& CosineDecayOp() {
  static const OpDef op = MakeScheduleOp(
      "CosineDecay", true, {kDecaySteps.Required(), kAlpha.Default(0.0)},
      [](const Node& n, double t, double lr) {
        const double decay_steps = DecaySteps(n);
        t = std::min(t, decay_steps);
        const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * t / decay_steps));
        const double alpha = n.attr(kAlpha);
        return lr * ((1.0 - alpha) * cosine + alpha);
      },
      {kDecaySteps(10)});
  return op;
}

void CheckDecaySteps(const Scope& scope, std::string_view op, int64_t decay_steps) {
  if (decay_steps <= 0) {
    throw InvalidArgument(op, " '", scope.FullName(op), "': decay_steps must be positive, got ",
                          decay_steps);
  }
}

Output AddSchedule(const Scope& scope, const OpDef& op, Input learning_rate, Output global_step,
                   AttrMap attrs) {
  Output lr = AsOutput(scope, learning_rate, kFloat32);
  return scope.AddNode(op, {global_step, lr}, std::move(attrs), op.name)->output(0);
}

}  // namespace

Output ExponentialDecay(const Scope& scope, Input learning_rate, Output global_step,
                        int64_t decay_steps, double decay_rate, bool staircase) {
  CheckDecaySteps(scope, "ExponentialDecay", decay_steps);
  return AddSchedule(scope, ExponentialDecayOp(), learning_rate, global_step,
                     {kDecaySteps(decay_steps), kDecayRate(decay_rate), kStaircase(staircase)});
}

Output InverseTimeDecay(const Scope& scope, Input learning_rate, Output global_step,
                        int64_t decay_steps, double decay_rate, bool staircase) {
  CheckDecaySteps(scope, "InverseTimeDecay", decay_steps);
  return AddSchedule(scope, InverseTimeDecayOp(), learning_rate, global_step,
                     {kDecaySteps(decay_steps), kDecayRate(decay_rate), kStaircase(staircase)});
}

Output NaturalExpDecay(const Scope& scope, Input learning_rate, Output global_step,
                       int64_t decay_steps, double decay_rate, bool staircase) {
  CheckDecaySteps(scope, "NaturalExpDecay", decay_steps);
  return AddSchedule(scope, NaturalExpDecayOp(), learning_rate, global_step,
                     {kDecaySteps(decay_steps), kDecayRate(decay_rate), kStaircase(staircase)});
}

Output PiecewiseConstant(const Scope& scope, Output global_step, std::vector<int64_t> boundaries,
                         std::vector<double> values) {
  if (values.size() != boundaries.size() + 1) {
    throw InvalidArgument("PiecewiseConstant '", scope.FullName("PiecewiseConstant"),
                          "': ", values.size(), " values for ", boundaries.size(),
                          " boundaries; pass one more value than boundaries");
  }
  for (size_t i = 1; i < boundaries.size(); ++i) {
    if (boundaries[i] <= boundaries[i - 1]) {
      throw InvalidArgument("PiecewiseConstant '", scope.FullName("PiecewiseConstant"),
                            "': boundaries must increase, but boundary ", i, " (", boundaries[i],
                            ") follows ", boundaries[i - 1]);
    }
  }
  return scope
      .AddNode(PiecewiseConstantOp(), {global_step},
               {kBoundaries(std::move(boundaries)), kValues(std::move(values))},
               "PiecewiseConstant")
      ->output(0);
}

Output PolynomialDecay(const Scope& scope, Input learning_rate, Output global_step,
                       int64_t decay_steps, double end_learning_rate, double power, bool cycle) {
  CheckDecaySteps(scope, "PolynomialDecay", decay_steps);
  return AddSchedule(scope, PolynomialDecayOp(), learning_rate, global_step,
                     {kDecaySteps(decay_steps), kEndLearningRate(end_learning_rate), kPower(power),
                      kCycle(cycle)});
}

Output CosineDecay(const Scope& scope, Input learning_rate, Output global_step, int64_t decay_steps,
                   double alpha) {
  CheckDecaySteps(scope, "CosineDecay", decay_steps);
  return AddSchedule(scope, CosineDecayOp(), learning_rate, global_step,
                     {kDecaySteps(decay_steps), kAlpha(alpha)});
}

void RegisterLearningRateOps(OpRegistry& registry) {
  for (const OpDef* op : {&ExponentialDecayOp(), &InverseTimeDecayOp(), &NaturalExpDecayOp(),
                          &PiecewiseConstantOp(), &PolynomialDecayOp(), &CosineDecayOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom::train
