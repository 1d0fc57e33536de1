#include "loom/runtime/while_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "loom/autodiff/gradients.h"
#include "loom/graph/graph_def.h"
#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/ops_layer.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::CodeOf;
using testing::ErrorOf;

// (i, x) -> (i + 1, x * 2) while i < limit.
std::vector<Output> Doubling(const Scope& root, Output limit, Output x0,
                             WhileOptions options = {}) {
  return WhileLoop(
      root, [&](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], limit); },
      [](const Scope& s, const std::vector<Output>& v) {
        return std::vector<Output>{Add(s, v[0], 1), Mul(s, v[1], 2.0f)};
      },
      {ScalarConst(root, 0), x0}, std::move(options));
}

TEST(WhileLoopTest, RunsTheBodyWhileTheConditionHolds) {
  Graph graph;
  Scope root(graph);
  Output limit = Placeholder(root, kInt32, Shape({}));
  std::vector<Output> out =
      Doubling(root, limit, Const(root, Tensor::FromVector<float>({1.0f, 3.0f})));
  Session session(graph);
  for (int n : {0, 1, 5}) {
    auto v = session.Run({{limit, Tensor::Scalar<int32_t>(n)}}, out);
    EXPECT_EQ(v[0].scalar<int32_t>(), n);
    EXPECT_FLOAT_EQ(v[1].data<float>()[0], std::ldexp(1.0f, n));
    EXPECT_FLOAT_EQ(v[1].data<float>()[1], 3.0f * std::ldexp(1.0f, n));
  }
  EXPECT_EQ(out[1].shape(), Shape({2}));
}

TEST(WhileLoopTest, MaximumIterationsStopsTheLoop) {
  Graph graph;
  Scope root(graph);
  std::vector<Output> out =
      Doubling(root, ScalarConst(root, 100), ScalarConst(root, 1.0f), {.maximum_iterations = 3});
  Session session(graph);
  auto v = session.Run({}, out);
  EXPECT_EQ(v[0].scalar<int32_t>(), 3);
  EXPECT_FLOAT_EQ(v[1].scalar<float>(), 8.0f);
}

TEST(WhileLoopTest, ATripCountFromTheDataAndAStatefulBody) {
  // while x < limit: x *= 1.5, counting the iterations in a variable (a ref input).
  Graph graph;
  Scope root(graph);
  Variable count(root.WithOpName("count"), ScalarConst(root, int64_t{0}));
  Output limit = Placeholder(root, kFloat32, Shape({}));
  WhileBuilder loop(root, {ScalarConst(root, 1.0f)});
  Output x = loop.loop_vars()[0];
  Output bump = AssignAdd(loop.scope(), count, ScalarConst(loop.scope(), int64_t{1}));
  Output next = Mul(loop.scope().WithControlDependencies({Operation(bump)}), x, 1.5f);
  std::vector<Output> out = loop.Finish(Less(loop.scope(), x, limit), {next});
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(root));
  auto v = session.Run({{limit, Tensor::Scalar(10.0f)}}, out);
  EXPECT_FLOAT_EQ(v[0].scalar<float>(), std::pow(1.5f, 6));  // 1.5^5 = 7.6 < 10 <= 1.5^6
  EXPECT_EQ(session.ReadVariable("count").scalar<int64_t>(), 6);
}

TEST(WhileLoopTest, ShapeInvariantsLetAShapeGrowWhereDeclared) {
  Graph graph;
  Scope root(graph);
  auto body = [](const Scope& s, const std::vector<Output>& v) {
    return std::vector<Output>{Add(s, v[0], 1), Concat(s, {v[1], v[1]}, 0)};
  };
  auto cond = [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 3); };
  std::string message = ErrorOf([&] {
    WhileLoop(root, cond, body,
              {ScalarConst(root, 0), Const(root, Tensor::FromVector<float>({1.0f}))});
  });
  EXPECT_NE(message.find("loop variable 1"), std::string::npos) << message;
  EXPECT_NE(message.find("shape_invariants"), std::string::npos) << message;

  std::vector<Output> out = WhileLoop(
      root, cond, body, {ScalarConst(root, 0), Const(root, Tensor::FromVector<float>({1.0f}))},
      {.shape_invariants = {std::nullopt, Shape({-1})}});
  Session session(graph);
  EXPECT_EQ(session.Run({}, out)[1].shape(), Shape({8}));
}

TEST(WhileLoopTest, AShapeChangeTheInvariantForbidsFailsAtRunTime) {
  Graph graph;
  Scope root(graph);
  Output p = Placeholder(root, kFloat32);  // unknown shape: only the run can tell
  std::vector<Output> out = WhileLoop(
      root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 2); },
      [&](const Scope& s, const std::vector<Output>& v) {
        return std::vector<Output>{Add(s, v[0], 1), Identity(s, p)};
      },
      {ScalarConst(root, 0), Const(root, Tensor::FromVector<float>({1.0f, 2.0f}))});
  Session session(graph);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{p, Tensor::FromVector<float>({1, 2, 3})}}, out);
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("loop variable 1"), std::string::npos) << message;
  EXPECT_NE(message.find("after iteration 0"), std::string::npos) << message;
  EXPECT_EQ(session.Run({{p, Tensor::FromVector<float>({5, 6})}}, out)[1].data<float>()[1], 6.0f);
}

TEST(WhileLoopTest, AnErrorInTheBodyNamesTheNodeAndTheIteration) {
  Graph graph;
  Scope root(graph);
  Output p = Placeholder(root, kFloat32);
  std::vector<Output> out = WhileLoop(
      root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 5); },
      [&](const Scope& s, const std::vector<Output>& v) {
        // Broadcasts while x has one element; fails once it has two.
        Output grown = Concat(s, {v[1], Slice(s, v[1], {0}, {1})}, 0);
        return std::vector<Output>{Add(s, v[0], 1), Add(s.WithOpName("bad_add"), grown, p)};
      },
      {ScalarConst(root, 0), Const(root, Tensor::FromVector<float>({1.0f}))},
      {.shape_invariants = {std::nullopt, Shape({-1})}});
  Session session(graph);
  std::string message = ErrorOf([&] {
    session.Run({{p, Tensor::FromVector<float>({1, 2})}}, out);
  });
  EXPECT_NE(message.find("while/bad_add"), std::string::npos) << message;
  EXPECT_NE(message.find("iteration 1 of While 'while/While'"), std::string::npos) << message;
}

TEST(WhileLoopTest, FetchingAValueInsideTheLoopIsAClearError) {
  Graph graph;
  Scope root(graph);
  WhileBuilder loop(root, {ScalarConst(root, 1.0f)});
  Output inside = Mul(loop.scope(), loop.loop_vars()[0], 2.0f);
  loop.Finish(Less(loop.scope(), loop.loop_vars()[0], 10.0f), {inside});
  Session session(graph);
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Eval(inside); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("has a value only inside the loop"), std::string::npos) << message;
  EXPECT_NE(message.find("'while'"), std::string::npos) << message;
}

TEST(WhileLoopTest, BuildErrorsNameTheLoop) {
  Graph graph;
  Scope root(graph);
  WhileBuilder loop(root, {ScalarConst(root, 1.0f)});
  EXPECT_NE(ErrorOf([&] {
              loop.Finish(loop.loop_vars()[0], {loop.loop_vars()[0]});
            }).find("must be a scalar bool"),
            std::string::npos);
  WhileBuilder loop2(root, {ScalarConst(root, 1.0f)});
  EXPECT_NE(ErrorOf([&] {
              loop2.Finish(Less(loop2.scope(), loop2.loop_vars()[0], 1.0f),
                           {ScalarConst(loop2.scope(), 1)});
            }).find("loop variable 0 is int32"),
            std::string::npos);
}

// x^n by n repeated multiplies (n = 3), x captured by the body.
TEST(WhileGradTest, PowerLoopMatchesTheNumericGradient) {
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& xs) {
        Output x = xs[0];
        return WhileLoop(
            s, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 3); },
            [x](const Scope& b, const std::vector<Output>& v) {
              return std::vector<Output>{Add(b, v[0], 1), Mul(b, v[1], x)};
            },
            {ScalarConst(s, 0), OnesLike(s, x)})[1];
      },
      {RandomDoubles({2, 3})});
  EXPECT_LT(err, 1e-6);
}

TEST(WhileGradTest, PowerLoopGradientIsNTimesXToTheNMinusOne) {
  Graph graph;
  Scope root(graph);
  Output x = Placeholder(root, kFloat64, Shape({}));
  Output y = WhileLoop(
      root, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 4); },
      [x](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{Add(b, v[0], 1), Mul(b, v[1], x)};
      },
      {ScalarConst(root, 0), ScalarConst(root, 1.0)})[1];
  Output dx = Gradients(root, {y}, {x})[0];
  Session session(graph);
  auto v = session.Run({{x, Tensor::Scalar(1.5)}}, {y, dx});
  EXPECT_DOUBLE_EQ(v[0].scalar<double>(), std::pow(1.5, 4));
  EXPECT_DOUBLE_EQ(v[1].scalar<double>(), 4 * std::pow(1.5, 3));
}

// while sum(y) < 20: y = y * x + y — the trip count depends on the values.
TEST(WhileGradTest, DataDependentTripCountMatchesTheNumericGradient) {
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& xs) {
        Output x = xs[0];
        return WhileLoop(
            s,
            [](const Scope& b, const std::vector<Output>& v) {
              return Less(b, Sum(b, v[0]), 20.0);
            },
            [x](const Scope& b, const std::vector<Output>& v) {
              return std::vector<Output>{Add(b, Mul(b, v[0], x), v[0])};
            },
            {xs[1]})[0];
      },
      {RandomDoubles({2, 3}, 1, 0.5, 1.0), RandomDoubles({2, 3}, 2, 0.5, 1.5)});
  EXPECT_LT(err, 1e-6);
}

// h_{t+1} = tanh(h_t W + x_t), x_t = inputs[t]: a captured weight used by every step.
Output Rnn(const Scope& s, Output h0, Output w, Output inputs, int steps) {
  return WhileLoop(
      s, [steps](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], steps); },
      [w, inputs](const Scope& b, const std::vector<Output>& v) {
        Output x_t = Gather(b, inputs, v[0]);
        return std::vector<Output>{Add(b, v[0], 1), Tanh(b, Add(b, MatMul(b, v[1], w), x_t))};
      },
      {ScalarConst(s, 0), h0})[1];
}

TEST(WhileGradTest, RnnWithACapturedWeightMatchesTheNumericGradient) {
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& xs) { return Rnn(s, xs[0], xs[1], xs[2], 4); },
      {RandomDoubles({2, 3}, 1), RandomDoubles({3, 3}, 2), RandomDoubles({4, 2, 3}, 3)});
  EXPECT_LT(err, 1e-6);
}

// Runs from several threads at once: each step's gradient takes its own step's record.
TEST(WhileGradTest, ConcurrentRunsEachGetTheirOwnGradient) {
  Graph graph;
  Scope root(graph);
  Output x = Placeholder(root, kFloat64, Shape({}));
  Output y = WhileLoop(
      root, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 3); },
      [x](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{Add(b, v[0], 1), Mul(b, v[1], x)};
      },
      {ScalarConst(root, 0), ScalarConst(root, 1.0)})[1];
  Output dx = Gradients(root, {y}, {x})[0];
  Session session(graph, {.intra_op_threads = 2});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const double v = 1.0 + t + 0.01 * i;
        auto out = session.Run({{x, Tensor::Scalar(v)}}, {y, dx});
        if (std::abs(out[0].scalar<double>() - v * v * v) > 1e-9 ||
            std::abs(out[1].scalar<double>() - 3 * v * v) > 1e-9) {
          ++wrong;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(WhileGradTest, BackPropFalseGivesNoGradient) {
  Graph graph;
  Scope root(graph);
  Output x = Placeholder(root, kFloat64, Shape({}));
  Output y = WhileLoop(
      root, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 2); },
      [x](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{Add(b, v[0], 1), Mul(b, v[1], x)};
      },
      {ScalarConst(root, 0), ScalarConst(root, 1.0)}, {.back_prop = false})[1];
  EXPECT_FALSE(Gradients(root, {y}, {x})[0].valid());
}

// Gradient descent on a variable used inside the loop: y = w^3 (three multiplies),
// loss = (y - 8)^2, so w goes to 2.
TEST(WhileGradTest, TrainsAVariableUsedInsideTheLoop) {
  Graph graph;
  Scope root(graph);
  Variable w(root.WithOpName("w"), ScalarConst(root, 1.2));
  Output y = WhileLoop(
      root, [](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], 3); },
      [&w](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{Add(b, v[0], 1), Mul(b, v[1], w)};
      },
      {ScalarConst(root, 0), ScalarConst(root, 1.0)})[1];
  Output loss = Square(root, Sub(root, y, 8.0));
  Output dw = Gradients(root, {loss}, {w})[0];
  ASSERT_TRUE(dw.valid());
  Output step = AssignSub(root, w, Mul(root, dw, 0.003));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(root));
  const double first = session.Eval(loss).scalar<double>();
  for (int i = 0; i < 300; ++i) session.RunTarget(Operation(step));
  EXPECT_GT(first, 10.0);
  EXPECT_LT(session.Eval(loss).scalar<double>(), 1e-6);
  EXPECT_NEAR(session.ReadVariable("w").scalar<double>(), 2.0, 1e-4);
}

// for i < 4: acc += (for j < i: s += 1), and x^4 as two nested squarings loops.
TEST(WhileLoopTest, NestedLoopsRunAndOnlyTheirGradientIsRefused) {
  Graph graph;
  Scope root(graph);
  std::vector<Output> out = WhileLoop(
      root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 4); },
      [](const Scope& s, const std::vector<Output>& v) {
        Output i = v[0];
        Output inner = WhileLoop(
            s, [i](const Scope& b, const std::vector<Output>& w) { return Less(b, w[0], i); },
            [](const Scope& b, const std::vector<Output>& w) {
              return std::vector<Output>{Add(b, w[0], 1), Add(b, w[1], 1.0)};
            },
            {ScalarConst(s, 0), ScalarConst(s, 0.0)})[1];
        return std::vector<Output>{Add(s, i, 1), Add(s, v[1], inner)};
      },
      {ScalarConst(root, 0), ScalarConst(root, 0.0)});
  Session session(graph);
  EXPECT_DOUBLE_EQ(session.Run({}, out)[1].scalar<double>(), 0.0 + 1 + 2 + 3);

  Output x = Placeholder(root, kFloat64, Shape({}));
  auto squarings = [&](bool inner_back_prop) {
    return WhileLoop(
        root, [](const Scope& s, const std::vector<Output>& v) { return Less(s, v[0], 2); },
        [&](const Scope& s, const std::vector<Output>& v) {
          Output y = WhileLoop(
              s, [](const Scope& b, const std::vector<Output>& w) { return Less(b, w[0], 1); },
              [&](const Scope& b, const std::vector<Output>& w) {
                return std::vector<Output>{Add(b, w[0], 1), Mul(b, w[1], x)};
              },
              {ScalarConst(s, 0), v[1]}, {.back_prop = inner_back_prop})[1];
          return std::vector<Output>{Add(s, v[0], 1), y};
        },
        {ScalarConst(root, 0), ScalarConst(root, 1.0)})[1];
  };
  Output y = squarings(true);
  EXPECT_DOUBLE_EQ(session.Eval(y, {{x, Tensor::Scalar(3.0)}}).scalar<double>(), 9.0);
  EXPECT_EQ(CodeOf([&] { Gradients(root, {y}, {x}); }), ErrorCode::kUnimplemented);
  // With the inner loop's back_prop off, nothing flows through it: no gradient at all.
  EXPECT_FALSE(Gradients(root, {squarings(false)}, {x})[0].valid());
}

TEST(WhileLoopTest, RoundTripsThroughGraphDef) {
  Graph graph;
  Scope root(graph);
  Output limit = Placeholder(root.WithOpName("limit"), kInt32, Shape({}));
  Output x = Placeholder(root.WithOpName("x"), kFloat64, Shape({2, 3}));
  Output w = Placeholder(root.WithOpName("w"), kFloat64, Shape({3, 3}));
  Output h = WhileLoop(
      root, [&](const Scope& b, const std::vector<Output>& v) { return Less(b, v[0], limit); },
      [w](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{Add(b, v[0], 1), Tanh(b, MatMul(b, v[1], w))};
      },
      {ScalarConst(root, 0), x})[1];
  Output dw = Gradients(root, {h}, {w})[0];
  OpRegistry registry;
  RegisterOpsLayerOps(registry);
  RegisterWhileOps(registry);
  Graph loaded;
  ImportSerializedGraph(SerializeGraph(graph), registry, loaded);
  EXPECT_EQ(SerializeGraph(loaded), SerializeGraph(graph));
  FeedList feeds = {{limit, Tensor::Scalar<int32_t>(3)},
                    {x, RandomDoubles({2, 3})},
                    {w, RandomDoubles({3, 3}, 2)}};
  FeedList loaded_feeds;
  for (const auto& [out, value] : feeds)
    loaded_feeds.push_back({loaded.GetOutput(out.name()), value});
  Session a(graph), b(loaded);
  auto va = a.Run(feeds, {h, dw});
  auto vb = b.Run(loaded_feeds, {loaded.GetOutput(h.name()), loaded.GetOutput(dw.name())});
  EXPECT_TRUE(va[0].Equals(vb[0]));
  EXPECT_TRUE(va[1].Equals(vb[1]));
}

}  // namespace
}  // namespace loom
