// Single steps of every optimizer against TF1's formulas evaluated here in float64,
// global-step semantics, Minimize convergence and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "loom/graph/collections.h"
#include "loom/graph/graph_def.h"
#include "loom/graph/graph_def_proto.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"
#include "loom/train/adagrad.h"
#include "loom/train/adam.h"
#include "loom/train/ftrl.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/learning_rate.h"
#include "loom/train/momentum.h"
#include "loom/train/rmsprop.h"
#include "loom/train/test_ops.h"

namespace loom::train {
namespace {

using loom::testing::ErrorOf;

using Vec = std::vector<double>;

const Vec kInit = {1.0, -2.0, 0.5, 0.0};
const std::vector<Vec> kGrads = {
    {0.1, -0.2, 0.3, 0.0}, {-0.5, 0.4, 0.05, 0.7}, {0.2, 0.2, -0.1, -0.3}};

// Applies kGrads one step at a time to a float64 variable "w" starting at kInit and returns
// the variable after each step.
std::vector<Vec> RunSteps(Optimizer& opt, Graph& graph) {
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector(kInit));
  auto g = Placeholder(s.WithOpName("g"), kFloat64, {4});
  Operation train = opt.ApplyGradients(s, {{GradOutput(g), w}});
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  std::vector<Vec> result;
  for (const Vec& grad : kGrads) {
    Tensor after = session.Run({{g, Tensor::FromVector(grad)}}, {w}, {train})[0];
    result.emplace_back(after.flat<double>().begin(), after.flat<double>().end());
  }
  return result;
}

// Per-element reference update: (w, g, step t starting at 1) -> new w, with its own state.
using Reference = std::function<double(double w, double g, int element, int t)>;

void ExpectMatches(Optimizer& opt, const Reference& update, double tol = 1e-12) {
  Graph graph;
  std::vector<Vec> got = RunSteps(opt, graph);
  Vec w = kInit;
  for (size_t t = 0; t < kGrads.size(); ++t) {
    for (int i = 0; i < 4; ++i) w[i] = update(w[i], kGrads[t][i], i, static_cast<int>(t) + 1);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(got[t][i], w[i], tol * std::max(1.0, std::abs(w[i])))
          << "step " << t + 1 << " element " << i;
    }
  }
  // The reference moved the variable, so the test can fail.
  EXPECT_NE(w, kInit);
}

TEST(OptimizerTest, GradientDescentMatchesTF1) {
  GradientDescent opt({.learning_rate = 0.1});
  ExpectMatches(opt, [](double w, double g, int, int) { return w - 0.1 * g; });
  EXPECT_TRUE(opt.GetSlotNames().empty());
}

TEST(OptimizerTest, MomentumMatchesTF1) {
  Momentum opt({.learning_rate = 0.1, .momentum = 0.9});
  Vec accum(4, 0.0);
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    accum[i] = 0.9 * accum[i] + g;
    return w - 0.1 * accum[i];
  });
}

TEST(OptimizerTest, NesterovMomentumMatchesTF1) {
  Momentum opt({.learning_rate = 0.1, .momentum = 0.9, .use_nesterov = true});
  Vec accum(4, 0.0);
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    accum[i] = 0.9 * accum[i] + g;
    return w - (0.1 * g + 0.1 * 0.9 * accum[i]);
  });
}

double AdamStep(Vec& m, Vec& v, double w, double g, int i, int t, double lr, double b1, double b2,
                double eps) {
  const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
  m[i] = b1 * m[i] + (1 - b1) * g;
  v[i] = b2 * v[i] + (1 - b2) * g * g;
  return w - lr_t * m[i] / (std::sqrt(v[i]) + eps);
}

TEST(OptimizerTest, AdamMatchesTF1WithBiasCorrectionInStepSize) {
  Adam opt({.learning_rate = 0.1, .beta1 = 0.8, .beta2 = 0.95, .epsilon = 1e-3});
  Vec m(4, 0.0), v(4, 0.0);
  ExpectMatches(opt, [&](double w, double g, int i, int t) {
    return AdamStep(m, v, w, g, i, t, 0.1, 0.8, 0.95, 1e-3);
  });
  EXPECT_EQ(opt.GetSlotNames(), (std::vector<std::string>{"m", "v"}));
}

TEST(OptimizerTest, AdamSlotsAndPowersAreNamedLikeTF1AndAdvance) {
  Graph graph;
  Adam opt;
  RunSteps(opt, graph);
  Output w = graph.GetOutput("w");
  EXPECT_EQ(opt.GetSlot(w, "m").node->name(), "w/Adam");
  EXPECT_EQ(opt.GetSlot(w, "v").node->name(), "w/Adam_1");
  EXPECT_EQ(opt.beta1_power().node->name(), "beta1_power");
  EXPECT_FALSE(opt.GetSlot(w, "nope").valid());
  // Only w is trainable: slots and powers are not.
  ASSERT_EQ(graph.TrainableVariables().size(), 1u);
  EXPECT_EQ(graph.TrainableVariables()[0]->name(), "w");
}

TEST(OptimizerTest, AdamFloat32MatchesFloat64Reference) {
  Graph graph;
  Scope s(graph);
  std::vector<float> init(kInit.begin(), kInit.end());
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector(init));
  auto g = Placeholder(s.WithOpName("g"), kFloat32, {4});
  Adam opt({.learning_rate = 0.01});
  Operation train = opt.ApplyGradients(s, {{GradOutput(g), w}});
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  Vec m(4, 0.0), v(4, 0.0), ref = kInit;
  for (size_t t = 0; t < kGrads.size(); ++t) {
    std::vector<float> gf(kGrads[t].begin(), kGrads[t].end());
    Tensor got = session.Run({{g, Tensor::FromVector(gf)}}, {w}, {train})[0];
    for (int i = 0; i < 4; ++i) {
      ref[i] = AdamStep(m, v, ref[i], kGrads[t][i], i, t + 1, 0.01, 0.9, 0.999, 1e-8);
      EXPECT_NEAR(got.data<float>()[i], ref[i], 1e-5) << "step " << t + 1 << " element " << i;
    }
  }
}

TEST(OptimizerTest, AdagradMatchesTF1) {
  Adagrad opt({.learning_rate = 0.1});  // initial_accumulator_value 0.1
  Vec accum(4, 0.1);
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    accum[i] += g * g;
    return w - 0.1 * g / std::sqrt(accum[i]);
  });
}

TEST(OptimizerTest, RMSPropMatchesTF1) {
  RMSProp opt({.learning_rate = 0.1, .decay = 0.9, .momentum = 0.5, .epsilon = 1e-6});
  Vec ms(4, 1.0), mom(4, 0.0);  // TF1 starts rms at ones
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    ms[i] = 0.9 * ms[i] + 0.1 * g * g;
    mom[i] = 0.5 * mom[i] + 0.1 * g / std::sqrt(ms[i] + 1e-6);
    return w - mom[i];
  });
  EXPECT_EQ(opt.GetSlotNames(), (std::vector<std::string>{"momentum", "rms"}));
}

TEST(OptimizerTest, CenteredRMSPropMatchesTF1) {
  RMSProp opt({.learning_rate = 0.1, .decay = 0.8, .momentum = 0.3, .centered = true});
  Vec ms(4, 1.0), mg(4, 0.0), mom(4, 0.0);
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    ms[i] = 0.8 * ms[i] + 0.2 * g * g;
    mg[i] = 0.8 * mg[i] + 0.2 * g;
    mom[i] = 0.3 * mom[i] + 0.1 * g / std::sqrt(ms[i] - mg[i] * mg[i] + 1e-10);
    return w - mom[i];
  });
  EXPECT_EQ(opt.GetSlotNames(), (std::vector<std::string>{"mg", "momentum", "rms"}));
}

// TF1's ApplyFtrl for one element.
double FtrlStep(double& accum, double& linear, double w, double g, double lr, double l1, double l2,
                double lr_power) {
  const double new_accum = accum + g * g;
  linear += g - (std::pow(new_accum, -lr_power) - std::pow(accum, -lr_power)) / lr * w;
  accum = new_accum;
  if (std::abs(linear) <= l1) return 0.0;
  const double sign = linear > 0 ? 1.0 : -1.0;
  return (l1 * sign - linear) / (std::pow(new_accum, -lr_power) / lr + 2 * l2);
}

TEST(OptimizerTest, FtrlWithL1AndL2MatchesTF1) {
  Ftrl opt({.learning_rate = 0.5,
            .l1_regularization_strength = 0.05,
            .l2_regularization_strength = 0.1});
  Vec accum(4, 0.1), linear(4, 0.0);
  Vec zeros_seen(4, 0.0);
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    double next = FtrlStep(accum[i], linear[i], w, g, 0.5, 0.05, 0.1, -0.5);
    if (next == 0.0) zeros_seen[i] = 1;
    return next;
  });
  // l1 clipped some coordinates to exactly zero and left others nonzero.
  EXPECT_GT(zeros_seen[3] + zeros_seen[0] + zeros_seen[1] + zeros_seen[2], 0.0);
}

TEST(OptimizerTest, FtrlWithOtherLearningRatePowerMatchesTF1) {
  Ftrl opt({.learning_rate = 0.3,
            .learning_rate_power = -0.7,
            .initial_accumulator_value = 0.2,
            .l2_regularization_strength = 0.01});
  Vec accum(4, 0.2), linear(4, 0.0);
  ExpectMatches(opt, [&](double w, double g, int i, int) {
    return FtrlStep(accum[i], linear[i], w, g, 0.3, 0.0, 0.01, -0.7);
  });
}

TEST(OptimizerTest, LearningRateCanBeAFedTensor) {
  Graph graph;
  Scope s(graph);
  auto lr = Placeholder(s.WithOpName("lr"), kFloat32, Shape{});
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0}));
  auto g = Const(s, Tensor::FromVector<double>({1.0, -1.0}));
  Operation train = GradientDescent({.learning_rate = lr}).ApplyGradients(s, {{GradOutput(g), w}});
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  session.RunTarget(train, {{lr, Tensor::Scalar<float>(0.5f)}});
  session.RunTarget(train, {{lr, Tensor::Scalar<float>(0.25f)}});
  Tensor got = session.ReadVariable("w");
  EXPECT_DOUBLE_EQ(got.data<double>()[0], 1.0 - 0.75);
  EXPECT_DOUBLE_EQ(got.data<double>()[1], 2.0 + 0.75);
}

// ---- Global step ----

bool DependsOn(const Node* node, const Node* target) {
  if (node == target) return true;
  for (const Output& in : node->inputs())
    if (DependsOn(in.node, target)) return true;
  for (const Node* c : node->control_inputs())
    if (DependsOn(c, target)) return true;
  return false;
}

TEST(GlobalStepTest, GetOrCreateReturnsOneNonTrainableInt64Scalar) {
  Graph graph;
  Scope s(graph);
  EXPECT_FALSE(GetGlobalStep(graph).valid());
  Variable a = GlobalStep(s.NewSubScope("inner"));
  Variable b = GlobalStep(s);
  EXPECT_EQ(a.node, b.node);
  EXPECT_EQ(a.node->name(), "global_step");
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.shape(), Shape{});
  EXPECT_TRUE(graph.TrainableVariables().empty());
  EXPECT_EQ(GetGlobalStep(graph).initializer.node, a.initializer.node);
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  EXPECT_EQ(session.Eval(a).scalar<int64_t>(), 0);
}

TEST(GlobalStepTest, ANonVariableNamedGlobalStepIsRejected) {
  Graph graph;
  Scope s(graph);
  Const(s.WithOpName("global_step"), Tensor::Scalar<float>(1.0f));
  EXPECT_THROW(GlobalStep(s), Error);
}

// The global step is the variable registered in GraphKeys::kGlobalStep, whatever its
// name; a variable merely named "global_step" is not it.
TEST(GlobalStepTest, IsFoundByRegistrationNotByName) {
  Graph graph;
  Scope s(graph);
  Variable impostor(s.WithOpName("global_step"), Tensor::Scalar<int64_t>(0), {.trainable = false});
  EXPECT_FALSE(GetGlobalStep(graph).valid());
  try {
    GlobalStep(s);
    FAIL() << "created a second node named global_step";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("VariableV2 'global_step'"), std::string::npos) << e.message();
  }

  Graph other;
  Scope o(other);
  Variable step(o.WithOpName("my_step"), Tensor::Scalar<int64_t>(5), {.trainable = false});
  other.collections().Add(GraphKeys::kGlobalStep, VariableRef{step, step.initializer});
  EXPECT_EQ(GetGlobalStep(other).node, step.node);
  EXPECT_EQ(GlobalStep(o).initializer.node, step.initializer.node);
  // A second registered step is an error, not a silent pick.
  Variable extra(o.WithOpName("extra"), Tensor::Scalar<int64_t>(0), {.trainable = false});
  other.collections().Add(GraphKeys::kGlobalStep, VariableRef{extra, extra.initializer});
  EXPECT_THROW(GetGlobalStep(other), Error);
}

TEST(GlobalStepTest, SurvivesAGraphDefRoundTrip) {
  Graph graph;
  Scope s(graph);
  Variable step = GlobalStep(s);
  OpRegistry registry;
  RegisterStateOps(registry);
  Graph loaded;
  ImportGraphDef(ToGraphDef(graph), registry, loaded);
  Variable found = GetGlobalStep(loaded);
  ASSERT_TRUE(found.valid());
  EXPECT_EQ(found.node->name(), "global_step");
  EXPECT_EQ(found.initializer.name(), step.initializer.name());
  EXPECT_EQ(GlobalStep(Scope(loaded)).node, found.node);  // found, not created again
  Session session(loaded);
  session.RunTarget(found.initializer);
  EXPECT_EQ(session.Eval(found).scalar<int64_t>(), 0);
}

TEST(GlobalStepTest, IncrementsOncePerStepAfterTheUpdates) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0}));
  auto target = Const(s, Tensor::FromVector<double>({0.0, 0.0}));
  auto loss = testing::SquaredError(s, w, target);
  auto step = GlobalStep(s);
  // lr is 0.25 while the step is 0 and 0 afterwards: the first update must see step 0, so
  // the increment has to come after the update reads it.
  auto lr = PiecewiseConstant(s, step, {0}, {0.25, 0.0});
  Operation train = GradientDescent({.learning_rate = lr}).Minimize(s, loss, step);
  EXPECT_EQ(train.node->op(), "AssignAdd");
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (graph.node(id)->op() == "ApplyGradientDescent") {
      EXPECT_TRUE(DependsOn(train.node, graph.node(id)));
    }
  }
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  std::vector<Tensor> out = session.Run({}, {w, step}, {train});
  // d/dw sum(w^2) = 2w; w - 0.25 * 2w = w / 2.
  EXPECT_DOUBLE_EQ(out[0].data<double>()[0], 0.5);
  EXPECT_DOUBLE_EQ(out[0].data<double>()[1], 1.0);
  EXPECT_EQ(out[1].scalar<int64_t>(), 1);
  out = session.Run({}, {w, step}, {train});
  EXPECT_DOUBLE_EQ(out[0].data<double>()[0], 0.5);  // lr is now 0
  EXPECT_EQ(out[1].scalar<int64_t>(), 2);
}

TEST(GlobalStepTest, AdamIncrementsStepAfterPowers) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0}));
  auto loss = testing::SquaredError(s, w, Const(s, Tensor::FromVector<double>({0.0, 0.0})));
  Adam adam({.beta1 = 0.5});
  Operation train = adam.Minimize(s, loss, GlobalStep(s));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  for (int i = 0; i < 3; ++i) session.RunTarget(train);
  EXPECT_EQ(session.ReadVariable("global_step").scalar<int64_t>(), 3);
  EXPECT_DOUBLE_EQ(session.ReadVariable("beta1_power").scalar<double>(), std::pow(0.5, 4));
}

// ---- Minimize ----

struct NamedFactory {
  std::string name;
  std::function<std::unique_ptr<Optimizer>()> make;
  int steps;
};

std::vector<NamedFactory> Factories() {
  return {
      {"GradientDescent",
       [] {
         return std::make_unique<GradientDescent>(GradientDescentOptions{.learning_rate = 0.1});
       },
       200},
      {"Momentum",
       [] { return std::make_unique<Momentum>(MomentumOptions{.learning_rate = 0.05}); }, 300},
      {"Nesterov",
       [] {
         return std::make_unique<Momentum>(
             MomentumOptions{.learning_rate = 0.05, .use_nesterov = true});
       },
       300},
      {"Adam", [] { return std::make_unique<Adam>(AdamOptions{.learning_rate = 0.05}); }, 1000},
      {"Adagrad", [] { return std::make_unique<Adagrad>(AdagradOptions{.learning_rate = 0.5}); },
       1000},
      {"RMSProp", [] { return std::make_unique<RMSProp>(RMSPropOptions{.learning_rate = 0.01}); },
       1000},
      {"CenteredRMSProp",
       [] {
         return std::make_unique<RMSProp>(RMSPropOptions{.learning_rate = 0.01, .centered = true});
       },
       1000},
      {"Ftrl", [] { return std::make_unique<Ftrl>(FtrlOptions{.learning_rate = 0.5}); }, 1000},
  };
}

TEST(MinimizeTest, EveryOptimizerConvergesOnAQuadratic) {
  const std::vector<double> target = {0.5, 1.0, -1.0, 2.0};
  for (const NamedFactory& f : Factories()) {
    SCOPED_TRACE(f.name);
    Graph graph;
    Scope s(graph);
    auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, -2.0, 3.0, 0.5}));
    auto loss = testing::SquaredError(s, w, Const(s, Tensor::FromVector(target)));
    auto step = GlobalStep(s);
    Operation train = f.make()->Minimize(s, loss, step);
    Session session(graph, {.intra_op_threads = 2});
    session.RunTarget(GlobalVariablesInitializer(s));
    const double initial = session.Eval(loss).scalar<double>();
    for (int i = 0; i < f.steps; ++i) session.RunTarget(train);
    const double final_loss = session.Eval(loss).scalar<double>();
    EXPECT_LT(final_loss, 1e-3 * initial) << "from " << initial;
    EXPECT_EQ(session.Eval(step).scalar<int64_t>(), f.steps);
  }
}

// ---- Errors ----

TEST(OptimizerErrorsTest, NonScalarOrIntegerLossIsRejected) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0, 3.0}));
  std::string message =
      ErrorOf([&] { GradientDescent().Minimize(s, Identity(s.WithOpName("vector_loss"), w)); },
              ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("vector_loss"), std::string::npos) << message;
  EXPECT_NE(message.find("scalar"), std::string::npos) << message;
  message =
      ErrorOf([&] { Adam().Minimize(s, ScalarConst<int64_t>(s, 3)); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("int64"), std::string::npos) << message;
}

// TF's minimize takes a loss of shape [1] (what a Reshape or a keepdims reduction gives);
// it trains exactly like the scalar loss.
TEST(OptimizerTest, SingleElementLossOfRankOneOrTwoTrainsLikeAScalar) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1}, std::vector<int64_t>{1, 1}}) {
    Graph graph;
    Scope s(graph);
    auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({3.0}));
    auto loss = Reshape(s, Square(s, w), shape);
    Operation train = GradientDescent({.learning_rate = 0.25}).Minimize(s, loss);
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    session.RunTarget(train);
    // w -= 0.25 * 2w
    EXPECT_DOUBLE_EQ(session.ReadVariable("w").data<double>()[0], 1.5);
  }
}

TEST(OptimizerErrorsTest, NoGradientNamesTheVariables) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("weights"), Tensor::FromVector<double>({1.0, 2.0}));
  auto b = Variable(s.WithOpName("bias"), Tensor::FromVector<double>({0.0, 0.0}));
  // No gradient reaches w (StopGradient) nor b (SquaredError passes none to its target).
  auto loss = testing::SquaredError(s, StopGradient(s, w), b);
  std::string message = ErrorOf([&] { Adam().Minimize(s, loss); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'weights'"), std::string::npos) << message;
  EXPECT_NE(message.find("'bias'"), std::string::npos) << message;
  EXPECT_NE(message.find(loss.name()), std::string::npos) << message;
  // ApplyGradients alone reports it too.
  message = ErrorOf(
      [&] {
        Adam().ApplyGradients(s, {{GradOutput(), w}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'weights'"), std::string::npos) << message;
}

TEST(OptimizerErrorsTest, NoVariablesOrANonVariableIsRejected) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<double>({1.0}));
  auto loss = testing::SquaredError(s, x, x);
  std::string message =
      ErrorOf([&] { GradientDescent().Minimize(s, loss); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("no variables"), std::string::npos) << message;
  message = ErrorOf([&] { GradientDescent().Minimize(s, loss, Output(), {x}); },
                    ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("not a variable"), std::string::npos) << message;
}

TEST(OptimizerErrorsTest, MismatchedGradientAndBadGlobalStepAreRejected) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0}));
  auto wrong_shape = Const(s, Tensor::FromVector<double>({1.0, 2.0, 3.0}));
  std::string message = ErrorOf(
      [&] {
        Momentum().ApplyGradients(s, {{GradOutput(wrong_shape), w}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'w'"), std::string::npos) << message;
  auto wrong_dtype = Const(s, Tensor::FromVector<float>({1.0f, 2.0f}));
  ErrorOf(
      [&] {
        Momentum().ApplyGradients(s, {{GradOutput(wrong_dtype), w}});
      },
      ErrorCode::kInvalidArgument);
  auto g = Const(s, Tensor::FromVector<double>({1.0, 2.0}));
  message = ErrorOf(
      [&] {
        Momentum().ApplyGradients(s, {{GradOutput(g), w}}, w);
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("global_step"), std::string::npos) << message;
}

TEST(OptimizerErrorsTest, UninitializedSlotIsAFailedPreconditionNamingIt) {
  Graph graph;
  Scope s(graph);
  auto w = Variable(s.WithOpName("w"), Tensor::FromVector<double>({1.0, 2.0}));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));  // before the slots exist
  auto g = Const(s, Tensor::FromVector<double>({1.0, 2.0}));
  Operation train = Adagrad().ApplyGradients(s, {{GradOutput(g), w}});
  std::string message = ErrorOf([&] { session.RunTarget(train); }, ErrorCode::kFailedPrecondition);
  EXPECT_NE(message.find("w/Adagrad"), std::string::npos) << message;
}

TEST(OptimizerErrorsTest, InvalidOptionsAreRejected) {
  EXPECT_THROW(Adagrad({.initial_accumulator_value = 0.0}), Error);
  EXPECT_THROW(Ftrl({.learning_rate_power = 0.5}), Error);
  EXPECT_THROW(Ftrl({.l1_regularization_strength = -1}), Error);
}

}  // namespace
}  // namespace loom::train
