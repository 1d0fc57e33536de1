// tf.cond inside a while loop's region (region_executor.h's dead values): forward values,
// gradients against the numeric checker, nesting both ways, and training through one.
#include <gtest/gtest.h>

#include <cmath>

#include "loom/autodiff/gradients.h"
#include "loom/ops/control.h"
#include "loom/ops/math.h"
#include "loom/ops/math_trig.h"
#include "loom/ops/nn.h"
#include "loom/ops/ops_layer.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/runtime/while_loop.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::CodeOf;

std::vector<Output> One(Output x) { return {x}; }

Output CondOne(const Scope& s, Output pred, const std::function<Output(const Scope&)>& on_true,
               const std::function<Output(const Scope&)>& on_false) {
  return Cond(
      s, pred, [&](const Scope& b) { return One(on_true(b)); },
      [&](const Scope& b) { return One(on_false(b)); })[0];
}

// x = 0; while x < 10: x = x + 1 if x < 5 else x + 2, counting the true branch's runs in a
// variable: only the taken branch runs, so its assignment happens 5 times, not 8.
TEST(WhileCondTest, OnlyTheTakenBranchRunsInTheBody) {
  Graph graph;
  Scope root(graph);
  Variable count(root.WithOpName("count"), ScalarConst(root, int64_t{0}));
  Output x = WhileLoop(
      root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 10.0f); },
      [&](const Scope& s, const std::vector<Output>& v) {
        return One(CondOne(
            s, Less(s, v[0], 5.0f),
            [&](const Scope& b) {
              Output bump = AssignAdd(b, count, ScalarConst(b, int64_t{1}));
              return Add(b.WithControlDependencies({Operation(bump)}), v[0], 1.0f);
            },
            [&](const Scope& b) { return Add(b, v[0], 2.0f); }));
      },
      {ScalarConst(root, 0.0f)})[0];
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(root));
  EXPECT_FLOAT_EQ(session.Eval(x).scalar<float>(), 11.0f);  // 0..5 by ones, 7, 9, 11
  EXPECT_EQ(session.ReadVariable("count").scalar<int64_t>(), 5);
}

TEST(WhileCondTest, ACondInTheLoopConditionAndANestedCond) {
  // while (i < 3 if even(i) else i < 7): i += (1 if i < 4 else (2 if i < 6 else 3))
  Graph graph;
  Scope root(graph);
  Output i = WhileLoop(
      root,
      [](const Scope& s, const std::vector<Output>& v) {
        Output even = Equal(s, FloorMod(s, v[0], 2), 0);
        return CondOne(
            s, even, [&](const Scope& b) { return Less(b, v[0], 3); },
            [&](const Scope& b) { return Less(b, v[0], 7); });
      },
      [](const Scope& s, const std::vector<Output>& v) {
        return One(CondOne(
            s, Less(s, v[0], 4), [&](const Scope& b) { return Add(b, v[0], 1); },
            [&](const Scope& b) {
              return CondOne(
                  b, Less(b, v[0], 6), [&](const Scope& c) { return Add(c, v[0], 2); },
                  [&](const Scope& c) { return Add(c, v[0], 3); });
            }));
      },
      {ScalarConst(root, 0)})[0];
  Session session(graph);
  // 0 -> 1 (odd: 1 < 7) -> 2 (even: 2 < 3) -> 3 -> 4 (even: 4 < 3 fails): stop at 4.
  EXPECT_EQ(session.Eval(i).scalar<int32_t>(), 4);
}

// h_{t+1} = h_t * x if t < 2 else tanh(h_t + w); the value's gradient to h0, x and w.
Output PiecewiseLoop(const Scope& s, Output h0, Output x, Output w) {
  return WhileLoop(
      s, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 4); },
      [x, w](const Scope& b, const std::vector<Output>& v) {
        Output h = CondOne(
            b, Less(b, v[0], 2), [&](const Scope& c) { return Mul(c, v[1], x); },
            [&](const Scope& c) { return Tanh(c, Add(c, v[1], w)); });
        return std::vector<Output>{Add(b, v[0], 1), h};
      },
      {ScalarConst(s, 0), h0})[1];
}

TEST(WhileCondTest, GradientsThroughACondInTheBodyMatchTheNumericGradient) {
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& xs) {
        return PiecewiseLoop(s, xs[0], xs[1], xs[2]);
      },
      {RandomDoubles({2, 3}, 1), RandomDoubles({2, 3}, 2), RandomDoubles({3}, 3)});
  EXPECT_LT(err, 1e-6);
}

TEST(WhileCondTest, GradientsThroughACondInACondInTheBodyMatchTheNumericGradient) {
  // h = (h * x if t < 1 else h + x) if t < 3 else sin(h) * x, for 5 iterations.
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& xs) {
        Output x = xs[1];
        return WhileLoop(
            s, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 5); },
            [x](const Scope& b, const std::vector<Output>& v) {
              Output h = CondOne(
                  b, Less(b, v[0], 3),
                  [&](const Scope& c) {
                    return CondOne(
                        c, Less(c, v[0], 1), [&](const Scope& d) { return Mul(d, v[1], x); },
                        [&](const Scope& d) { return Add(d, v[1], x); });
                  },
                  [&](const Scope& c) { return Mul(c, Sin(c, v[1]), x); });
              return std::vector<Output>{Add(b, v[0], 1), h};
            },
            {ScalarConst(s, 0), xs[0]})[1];
      },
      {RandomDoubles({2, 2}, 4), RandomDoubles({2, 2}, 5)});
  EXPECT_LT(err, 1e-6);
}

TEST(WhileCondTest, TheGradientOfAValueUsedInOneBranchIsExact) {
  // y = x^2 * 3 (t = 0, 1: h *= x; t = 2: h *= 3); dy/dx = 6x.
  Graph graph;
  Scope root(graph);
  Output x = Placeholder(root, kFloat64, Shape({}));
  Output y = WhileLoop(
      root, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 3); },
      [x](const Scope& b, const std::vector<Output>& v) {
        Output h = CondOne(
            b, Less(b, v[0], 2), [&](const Scope& c) { return Mul(c, v[1], x); },
            [&](const Scope& c) { return Mul(c, v[1], 3.0); });
        return std::vector<Output>{Add(b, v[0], 1), h};
      },
      {ScalarConst(root, 0), ScalarConst(root, 1.0)})[1];
  Output dx = Gradients(root, {y}, {x})[0];
  Session session(graph);
  auto v = session.Run({{x, Tensor::Scalar(1.5)}}, {y, dx});
  EXPECT_DOUBLE_EQ(v[0].scalar<double>(), 1.5 * 1.5 * 3);
  EXPECT_DOUBLE_EQ(v[1].scalar<double>(), 6 * 1.5);
}

// Gradient descent through a guarded update in the body (h * w while |h| < 100, else h):
// y = w^3 (every step takes the product branch), loss = (y - 8)^2, so w goes to 2.
TEST(WhileCondTest, TrainsAVariableUsedInsideACondInTheLoop) {
  Graph graph;
  Scope root(graph);
  Variable w(root.WithOpName("w"), ScalarConst(root, 1.0));
  Output y = WhileLoop(
      root, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 3); },
      [&w](const Scope& b, const std::vector<Output>& v) {
        Output h = CondOne(
            b, Less(b, Abs(b, v[1]), 100.0), [&](const Scope& c) { return Mul(c, v[1], w); },
            [&](const Scope& c) { return Identity(c, v[1]); });
        return std::vector<Output>{Add(b, v[0], 1), h};
      },
      {ScalarConst(root, 0), ScalarConst(root, 1.0)})[1];
  Output loss = Square(root, Sub(root, y, 8.0));
  Output dw = Gradients(root, {loss}, {w})[0];
  ASSERT_TRUE(dw.valid());
  Output step = AssignSub(root, w, Mul(root, dw, 0.003));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(root));
  for (int i = 0; i < 300; ++i) session.RunTarget(Operation(step));
  EXPECT_LT(session.Eval(loss).scalar<double>(), 1e-6);
  EXPECT_NEAR(session.ReadVariable("w").scalar<double>(), 2.0, 1e-4);
}

// A while loop inside a cond's branch inside a while loop's body: runs only when taken.
TEST(WhileCondTest, AWhileInsideACondInsideAWhile) {
  // for i < 4: acc += (while v < 2i: v *= 2, from 1) if i is odd else 100.
  Graph graph;
  Scope root(graph);
  Variable runs(root.WithOpName("runs"), ScalarConst(root, int64_t{0}));
  Output acc = WhileLoop(
      root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 4); },
      [&](const Scope& s, const std::vector<Output>& v) {
        Output i = v[0];
        Output odd = Equal(s, FloorMod(s, i, 2), 1);
        Output add = CondOne(
            s, odd,
            [&](const Scope& b) {
              Output bound = Cast(b, Mul(b, i, 2), kFloat64);
              return WhileLoop(
                  b,
                  [bound](const Scope& c, const std::vector<Output>& u) {
                    return Less(c, u[0], bound);
                  },
                  [&](const Scope& c, const std::vector<Output>& u) {
                    Output bump = AssignAdd(c, runs, ScalarConst(c, int64_t{1}));
                    return One(Mul(c.WithControlDependencies({Operation(bump)}), u[0], 2.0));
                  },
                  {ScalarConst(b, 1.0)})[0];
            },
            [](const Scope& b) { return ScalarConst(b, 100.0); });
        return std::vector<Output>{Add(s, i, 1), Add(s, v[1], add)};
      },
      {ScalarConst(root, 0), ScalarConst(root, 0.0)})[1];
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(root));
  // i = 1: 1 -> 2 (one run); i = 3: 1 -> 2 -> 4 -> 8 (three runs).
  EXPECT_DOUBLE_EQ(session.Eval(acc).scalar<double>(), 100 + 2 + 100 + 8);
  EXPECT_EQ(session.ReadVariable("runs").scalar<int64_t>(), 1 + 3);
}

TEST(WhileCondTest, ABodyResultFromAnUntakenBranchIsAClearError) {
  // The body returns a Switch's output directly (no Merge): dead when the other side runs.
  Graph graph;
  Scope root(graph);
  Output x = WhileLoop(
      root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 3.0f); },
      [](const Scope& s, const std::vector<Output>& v) {
        return One(Switch(s, Add(s, v[0], 1.0f), Less(s, v[0], 1.0f)).output_true);
      },
      {ScalarConst(root, 0.0f)})[0];
  Session session(graph);
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Eval(x); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("untaken side of a tf.cond"), std::string::npos) << message;
  EXPECT_NE(message.find("after iteration 1"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom
