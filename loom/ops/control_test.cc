#include "loom/ops/control.h"

#include <gtest/gtest.h>

#include "loom/autodiff/gradients.h"
#include "loom/graph/graph_def.h"
#include "loom/ops/math.h"
#include "loom/ops/ops_layer.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::CodeOf;

Tensor Bool(bool b) { return Tensor::Scalar<bool>(b); }
float ScalarOf(const Tensor& t) { return t.data<float>()[0]; }

int CountOps(const Graph& graph, const std::string& op) {
  int n = 0;
  for (int i = 0; i < graph.num_nodes(); ++i) n += graph.node(i)->op() == op;
  return n;
}

TEST(ControlTest, EachBranchComputesItsOwnValue) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Output y = Cond(
      s, pred, [&](const Scope& b) { return std::vector<Output>{Mul(b, x, 2.0f)}; },
      [&](const Scope& b) { return std::vector<Output>{Add(b, x, 1.0f)}; })[0];
  EXPECT_EQ(y.node->op(), "Merge");
  EXPECT_EQ(y.node->name(), "cond/Merge");
  Session session(graph);
  const Tensor three = Tensor::Scalar<float>(3);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(true)}, {x, three}}, {y})[0]), 6.0f);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(false)}, {x, three}}, {y})[0]), 4.0f);
  // x is switched once per branch (and pred once for the pivots): three Switches.
  EXPECT_EQ(CountOps(graph, "Switch"), 3);
}

TEST(ControlTest, ConstantsInABranchAreDeadWhenTheOtherRuns) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  Output y = Cond(
      s, pred, [&](const Scope& b) { return std::vector<Output>{ScalarConst(b, 1.0f)}; },
      [&](const Scope& b) { return std::vector<Output>{ScalarConst(b, 2.0f)}; })[0];
  // A constant has no data input, so it hangs on the branch's pivot.
  const Node* one = y.node->input(1).node;
  ASSERT_EQ(one->op(), "Const");
  ASSERT_EQ(one->control_inputs().size(), 1u);
  EXPECT_EQ(one->control_inputs()[0]->name(), "cond/switch_t");
  Session session(graph);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(true)}}, {y})[0]), 1.0f);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(false)}}, {y})[0]), 2.0f);
}

TEST(ControlTest, SideEffectsOfTheUntakenBranchDoNotRun) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  Variable v(s.WithOpName("v"), ScalarConst(s, 0.0f));
  Output y = Cond(
      s, pred, [&](const Scope& b) { return std::vector<Output>{AssignAdd(b, v, 1.0f)}; },
      [&](const Scope& b) { return std::vector<Output>{AssignAdd(b, v, 10.0f)}; })[0];
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(true)}}, {y})[0]), 1.0f);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(true)}}, {y})[0]), 2.0f);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(false)}}, {y})[0]), 12.0f);
  EXPECT_EQ(ScalarOf(session.ReadVariable("v")), 12.0f);
}

TEST(ControlTest, NestedCondsPickOneOfFour) {
  Graph graph;
  Scope s(graph);
  auto a = Placeholder(s.WithOpName("a"), kBool, Shape{});
  auto b = Placeholder(s.WithOpName("b"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Variable count(s.WithOpName("count"), ScalarConst(s, 0.0f));
  auto inner = [&](float t, float f) {
    return [&, t, f](const Scope& sc) {
      return Cond(
          sc, b,
          [&, t](const Scope& in) {
            return std::vector<Output>{Add(in, Mul(in, x, t), AssignAdd(in, count, 1.0f))};
          },
          [&, f](const Scope& in) { return std::vector<Output>{Mul(in, x, f)}; });
    };
  };
  Output y = Cond(s, a, inner(1, 2), inner(3, 4))[0];
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  const Tensor x1 = Tensor::Scalar<float>(1);
  // count is bumped only by the two (_, b=true) leaves, before they add it.
  EXPECT_EQ(ScalarOf(session.Run({{a, Bool(true)}, {b, Bool(true)}, {x, x1}}, {y})[0]), 2.0f);
  EXPECT_EQ(ScalarOf(session.Run({{a, Bool(true)}, {b, Bool(false)}, {x, x1}}, {y})[0]), 2.0f);
  EXPECT_EQ(ScalarOf(session.Run({{a, Bool(false)}, {b, Bool(true)}, {x, x1}}, {y})[0]), 5.0f);
  EXPECT_EQ(ScalarOf(session.Run({{a, Bool(false)}, {b, Bool(false)}, {x, x1}}, {y})[0]), 4.0f);
  EXPECT_EQ(ScalarOf(session.ReadVariable("count")), 2.0f);
}

TEST(ControlTest, FetchingADeadValueFailsNamingTheSwitch) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Output inside;
  Cond(
      s, pred,
      [&](const Scope& b) {
        inside = Mul(b.WithOpName("double"), x, 2.0f);
        return std::vector<Output>{inside};
      },
      [&](const Scope& b) { return std::vector<Output>{Identity(b, x)}; });
  Session session(graph);
  const Tensor one = Tensor::Scalar<float>(1);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(true)}, {x, one}}, {inside})[0]), 2.0f);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{pred, Bool(false)}, {x, one}}, {inside});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("cond/double:0"), std::string::npos) << message;
  EXPECT_NE(message.find("Switch 'cond/Switch"), std::string::npos) << message;
}

TEST(ControlTest, ADeadTargetAndWhatDependsOnItDoNotRun) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  Variable v(s.WithOpName("v"), ScalarConst(s, 0.0f));
  Output bump;
  Cond(
      s, pred,
      [&](const Scope& b) {
        bump = AssignAdd(b, v, 1.0f);
        return std::vector<Output>{bump};
      },
      [&](const Scope& b) { return std::vector<Output>{ScalarConst(b, 0.0f)}; });
  // Outside the cond, a control dependency on the branch's op makes it dead too.
  Output after = AssignAdd(s.WithControlDependencies({bump}), v, 100.0f);
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  session.Run({{pred, Bool(false)}}, {}, {bump, after});
  EXPECT_EQ(ScalarOf(session.ReadVariable("v")), 0.0f);
  session.Run({{pred, Bool(true)}}, {}, {bump, after});
  EXPECT_EQ(ScalarOf(session.ReadVariable("v")), 101.0f);
}

TEST(ControlTest, AnExternalResultPassesThroughItsSwitch) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{2});
  auto z = Placeholder(s.WithOpName("z"), kFloat32, Shape{-1});
  Output y = Cond(
      s, pred, [&](const Scope&) { return std::vector<Output>{x}; },
      [&](const Scope&) { return std::vector<Output>{z}; })[0];
  EXPECT_EQ(y.shape(), Shape{-1});  // what [2] and [-1] share
  Session session(graph);
  const Tensor xv = Tensor::FromVector<float>({1, 2}, {2});
  const Tensor zv = Tensor::FromVector<float>({5, 6, 7}, {3});
  EXPECT_TRUE(session.Run({{pred, Bool(true)}, {x, xv}, {z, zv}}, {y})[0].Equals(xv));
  EXPECT_TRUE(session.Run({{pred, Bool(false)}, {x, xv}, {z, zv}}, {y})[0].Equals(zv));
}

TEST(ControlTest, MismatchedBranchesAndPredicatesFailClearly) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  auto one = [&](const Scope& b) { return std::vector<Output>{Identity(b, x)}; };
  auto none = [](const Scope&) { return std::vector<Output>{}; };
  auto as_int = [&](const Scope& b) { return std::vector<Output>{Cast(b, x, kInt32)}; };
  EXPECT_NE(testing::ErrorOf([&] { Cond(s, pred, one, none); }).find("1 results"),
            std::string::npos);
  EXPECT_NE(testing::ErrorOf([&] { Cond(s, pred, one, as_int); }).find("int32"), std::string::npos);
  EXPECT_NE(testing::ErrorOf([&] { Cond(s, x, one, one); }).find("bool scalar"), std::string::npos);
  auto vec = Placeholder(s.WithOpName("vec"), kBool, Shape{3});
  EXPECT_NE(testing::ErrorOf([&] { Switch(s, x, vec); }).find("scalar"), std::string::npos);
  // A failed branch leaves the graph outside every context.
  EXPECT_FALSE(InCondBranch(graph));
}

TEST(ControlTest, VariablesBuiltInABranchLiveOutsideIt) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  Output init = ScalarConst(s, 5.0f);
  Output y = Cond(
      s, pred,
      [&](const Scope& b) {
        EXPECT_TRUE(InCondBranch(graph));
        Variable w(b.WithOpName("w"), init);
        EXPECT_EQ(w.node->context(), nullptr);
        EXPECT_EQ(w.initializer.node->context(), nullptr);
        return std::vector<Output>{Mul(b, w, 2.0f)};
      },
      [&](const Scope& b) { return std::vector<Output>{ScalarConst(b, 0.0f)}; })[0];
  Session session(graph);
  // The initializer runs although the branch that made the variable is not taken.
  session.RunTarget(GlobalVariablesInitializer(s));
  EXPECT_EQ(ScalarOf(session.ReadVariable("cond/w")), 5.0f);
  EXPECT_EQ(ScalarOf(session.Run({{pred, Bool(true)}}, {y})[0]), 10.0f);
  // An initial value made inside the branch cannot initialize a variable outside it.
  std::string message = testing::ErrorOf([&] {
    Cond(
        s, pred,
        [&](const Scope& b) {
          Variable bad(b.WithOpName("bad"), ScalarConst(b, 1.0f));
          return std::vector<Output>{bad};
        },
        [&](const Scope& b) { return std::vector<Output>{ScalarConst(b, 0.0f)}; });
  });
  EXPECT_NE(message.find("inside a cond branch"), std::string::npos) << message;
}

TEST(ControlTest, MergeWithoutSwitchForwardsItsFirstInput) {
  Graph graph;
  Scope s(graph);
  MergeOutputs m = Merge(s, {ScalarConst(s, 3.0f), ScalarConst(s, 4.0f)});
  Session session(graph);
  std::vector<Tensor> out = session.Run({}, {m.output, m.value_index});
  EXPECT_EQ(ScalarOf(out[0]), 3.0f);
  EXPECT_EQ(out[1].data<int32_t>()[0], 0);
}

// d/dx of cond(p, x0 * x1, x0 ^ 2 + x1) in float64, with each branch taken.
TEST(ControlTest, GradientsMatchNumericOnBothBranches) {
  for (bool taken : {true, false}) {
    const double err = MaxGradientError(
        [taken](const Scope& s, const std::vector<Output>& x) {
          Output pred = ScalarConst(s, taken);
          return Cond(
              s, pred, [&](const Scope& b) { return std::vector<Output>{Mul(b, x[0], x[1])}; },
              [&](const Scope& b) {
                return std::vector<Output>{Add(b, Square(b, x[0]), x[1])};
              })[0];
        },
        {RandomDoubles({2, 3}, 1), RandomDoubles({2, 3}, 2)});
    EXPECT_LT(err, 1e-6) << "branch " << taken;
  }
}

TEST(ControlTest, GradientsThroughNestedConds) {
  for (int leaf = 0; leaf < 4; ++leaf) {
    const double err = MaxGradientError(
        [leaf](const Scope& s, const std::vector<Output>& x) {
          Output a = ScalarConst(s, leaf < 2);
          Output b = ScalarConst(s, leaf % 2 == 0);
          auto inner = [&](double k) {
            return [&, k](const Scope& sc) {
              return Cond(
                  sc, b, [&](const Scope& in) { return std::vector<Output>{Mul(in, x[0], k)}; },
                  [&](const Scope& in) { return std::vector<Output>{Mul(in, x[0], x[0])}; });
            };
          };
          return Cond(s, a, inner(2.0), inner(3.0))[0];
        },
        {RandomDoubles({3}, 4)});
    EXPECT_LT(err, 1e-6) << "leaf " << leaf;
  }
}

TEST(ControlTest, AValueUsedInOneBranchGetsZeroGradientFromTheOther) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  auto w = Placeholder(s.WithOpName("w"), kFloat32, Shape{});
  Output y = Cond(
      s, pred, [&](const Scope& b) { return std::vector<Output>{Mul(b, x, w)}; },
      [&](const Scope& b) { return std::vector<Output>{Identity(b, x)}; })[0];
  std::vector<Output> grads = Gradients(s, {y}, {x, w});
  Session session(graph);
  const FeedList base = {{x, Tensor::Scalar<float>(3)}, {w, Tensor::Scalar<float>(5)}};
  FeedList on_true = base, on_false = base;
  on_true.push_back({pred, Bool(true)});
  on_false.push_back({pred, Bool(false)});
  std::vector<Tensor> t = session.Run(on_true, grads);
  EXPECT_EQ(ScalarOf(t[0]), 5.0f);
  EXPECT_EQ(ScalarOf(t[1]), 3.0f);
  std::vector<Tensor> f = session.Run(on_false, grads);
  EXPECT_EQ(ScalarOf(f[0]), 1.0f);
  EXPECT_EQ(ScalarOf(f[1]), 0.0f);  // a live zero, as in TF1
}

TEST(ControlTest, GraphDefRoundTripKeepsTheCond) {
  Graph graph;
  Scope s(graph);
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Output y = Cond(
      s, pred, [&](const Scope& b) { return std::vector<Output>{Mul(b, x, 2.0f)}; },
      [&](const Scope& b) { return std::vector<Output>{Sum(b, ScalarConst(b, 7.0f))}; })[0];
  OpRegistry registry;
  RegisterOpsLayerOps(registry);
  const std::string bytes = SerializeGraph(graph);
  Graph loaded;
  ImportSerializedGraph(bytes, registry, loaded);
  EXPECT_EQ(SerializeGraph(loaded), bytes);
  const Node* merge = loaded.FindNode(y.node->name());
  ASSERT_NE(merge, nullptr);
  EXPECT_EQ(merge->op(), "Merge");
  EXPECT_EQ(merge->num_outputs(), 2);
  EXPECT_EQ(loaded.FindNode("cond/Switch")->num_outputs(), 2);
  Session session(loaded);
  Output ly = loaded.GetOutput(y.name());
  const Output lp = loaded.GetOutput("pred"), lx = loaded.GetOutput("x");
  const Tensor four = Tensor::Scalar<float>(4);
  EXPECT_EQ(ScalarOf(session.Run({{lp, Bool(true)}, {lx, four}}, {ly})[0]), 8.0f);
  EXPECT_EQ(ScalarOf(session.Run({{lp, Bool(false)}, {lx, four}}, {ly})[0]), 7.0f);
}

// tf.Assert: a false condition fails the Run naming the node and showing the data; a true
// one lets what waits on it (by a control input) run; in the untaken branch of a cond it
// does not check.
TEST(ControlTest, AssertFailsTheRunOnlyWhenItsConditionIsFalse) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape{3});
  Operation check = Assert(s.WithOpName("check"), GreaterEqual(s, Min(s, x), 0.0f), {x}, 2);
  Output y = Identity(s.WithOpName("y").WithControlDependencies({check}), x);
  Session session(graph);
  const Tensor good = Tensor::FromVector<float>({1, 2, 3});
  EXPECT_TRUE(session.Run({{x, good}}, {y})[0].Equals(good));
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{x, Tensor::FromVector<float>({4, -5, 6})}}, {y});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Assert 'check'"), std::string::npos) << message;
  EXPECT_NE(message.find("assertion failed: float32[3] [4 -5 ...]"), std::string::npos) << message;
  // Inside a branch it checks only when that branch runs.
  auto pred = Placeholder(s.WithOpName("pred"), kBool, Shape{});
  Output z = Cond(
      s, pred,
      [&](const Scope& b) {
        Operation a = Assert(b, GreaterEqual(b, Min(b, x), 0.0f), {x});
        return std::vector<Output>{Identity(b.WithControlDependencies({a}), x)};
      },
      [&](const Scope& b) { return std::vector<Output>{Neg(b, x)}; })[0];
  const Tensor bad = Tensor::FromVector<float>({-1, 2, 3});
  EXPECT_TRUE(session.Run({{x, bad}, {pred, Bool(false)}}, {z})[0].Equals(
      Tensor::FromVector<float>({1, -2, -3})));
  EXPECT_EQ(CodeOf([&] {
              session.Run({{x, bad}, {pred, Bool(true)}}, {z});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_THROW(Assert(s, x, {}), Error);  // a float condition
}

}  // namespace
}  // namespace loom
