#include "loom/ops/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/autodiff/gradients.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"
#include "loom/testing/values.h"

namespace loom {
namespace {

using testing::ErrorOf;

using Xs = std::vector<Output>;

using testing::Values;

// A float64 reference: reduce `x` (row-major, `dims`) over `mask` with fn, keep_dims shape.
std::vector<double> Reference(const Tensor& x, const std::vector<bool>& mask, double init,
                              const std::function<double(double, double)>& fn) {
  const auto& dims = x.shape().dims();
  const int rank = dims.size();
  std::vector<int64_t> out_dims(dims);
  for (int d = 0; d < rank; ++d)
    if (mask[d]) out_dims[d] = 1;
  int64_t out_n = 1;
  for (auto d : out_dims) out_n *= d;
  std::vector<double> out(out_n, init);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < x.NumElements(); ++e) {
    int64_t rest = e, o = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rest % dims[d];
      rest /= dims[d];
    }
    for (int d = rank - 1; d >= 0; --d) {
      o += (mask[d] ? 0 : idx[d]) * stride;
      stride *= out_dims[d];
    }
    out[o] = fn(out[o], x.data<double>()[e]);
  }
  return out;
}

TEST(ReduceTest, SmallValuesAndShapes) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  Session session(graph);
  EXPECT_EQ(Sum(s, x).shape(), Shape({}));
  EXPECT_EQ(session.Eval(Sum(s, x)).scalar<float>(), 21);
  EXPECT_EQ(Values<float>(session.Eval(Sum(s, x, {0}))), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(Values<float>(session.Eval(Sum(s, x, {-1}))), (std::vector<float>{6, 15}));
  auto kept = Mean(s, x, {1}, {.keep_dims = true});
  EXPECT_EQ(kept.shape(), Shape({2, 1}));
  EXPECT_EQ(Values<float>(session.Eval(kept)), (std::vector<float>{2, 5}));
  EXPECT_EQ(Values<float>(session.Eval(Max(s, x, {0}))), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(Values<float>(session.Eval(Min(s, x, {1}))), (std::vector<float>{1, 4}));
  EXPECT_EQ(session.Eval(Prod(s, x)).scalar<float>(), 720);
  EXPECT_EQ(session.Eval(Mean(s, x)).scalar<float>(), 3.5);
  auto xi = Const(s, Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 7}, {2, 3}));
  EXPECT_EQ(Values<int32_t>(session.Eval(Mean(s, xi, {1}))), (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(Values<int32_t>(session.Eval(Sum(s, xi, {0, 1}, {.keep_dims = true}))),
            (std::vector<int32_t>{22}));
}

TEST(ReduceTest, ManyAxesSetsMatchReference) {
  Tensor x = RandomDoubles({3, 4, 5, 6}, 9);
  const std::vector<std::vector<int64_t>> axes_sets = {
      {}, {0}, {1}, {3}, {0, 2}, {1, 3}, {0, 1, 2, 3}, {-1, -3}, {2, 1}};
  Graph graph;
  Scope s(graph);
  auto c = Const(s, x);
  Session session(graph, {.intra_op_threads = 3});
  for (const auto& axes : axes_sets) {
    std::vector<bool> mask(4, axes.empty());
    for (auto a : axes) mask[a < 0 ? a + 4 : a] = true;
    auto sum = Values<double>(session.Eval(Sum(s, c, axes, {.keep_dims = true})));
    auto max = Values<double>(session.Eval(Max(s, c, axes)));
    auto min = Values<double>(session.Eval(Min(s, c, axes)));
    auto ref_sum = Reference(x, mask, 0, [](double a, double b) { return a + b; });
    auto ref_max = Reference(x, mask, -1e300, [](double a, double b) { return std::max(a, b); });
    auto ref_min = Reference(x, mask, 1e300, [](double a, double b) { return std::min(a, b); });
    ASSERT_EQ(sum.size(), ref_sum.size());
    for (size_t i = 0; i < sum.size(); ++i) {
      EXPECT_NEAR(sum[i], ref_sum[i], 1e-12);
      EXPECT_EQ(max[i], ref_max[i]);
      EXPECT_EQ(min[i], ref_min[i]);
    }
  }
}

TEST(ReduceTest, LargeFloatSumIsAccurateAndThreadIndependent) {
  const int64_t n = 1 << 20;
  Tensor x(kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) x.data<float>()[i] = 0.1f + (i % 7) * 0.01f;
  double ref = 0;
  for (float v : x.flat<float>()) ref += v;
  float results[2];
  for (int threads : {1, 2}) {
    Graph graph;
    Scope s(graph);
    Session session(graph, {.intra_op_threads = threads});
    results[threads - 1] = session.Eval(Sum(s, Const(s, x))).scalar<float>();
  }
  EXPECT_EQ(results[0], results[1]);
  EXPECT_NEAR(results[0], ref, ref * 1e-6);
}

TEST(ReduceTest, EmptyAndArg) {
  Graph graph;
  Scope s(graph);
  auto empty = Const(s, Tensor::Zeros(kFloat32, {0, 3}));
  auto x = Const(s, Tensor::FromVector<float>({3, 9, 9, 1, 7, 0}, {2, 3}));
  Session session(graph);
  EXPECT_EQ(Values<float>(session.Eval(Sum(s, empty, {0}))), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(Values<float>(session.Eval(Prod(s, empty, {0}))), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(session.Eval(Max(s, empty, {0})).data<float>()[0],
            -std::numeric_limits<float>::infinity());
  auto am = ArgMax(s, x, 1);
  EXPECT_EQ(am.dtype(), kInt64);
  EXPECT_EQ(am.shape(), Shape({2}));
  EXPECT_EQ(Values<int64_t>(session.Eval(am)), (std::vector<int64_t>{1, 1}));  // first tie
  EXPECT_EQ(Values<int64_t>(session.Eval(ArgMin(s, x, 1))), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(Values<int64_t>(session.Eval(ArgMax(s, x, 0))), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(Values<int64_t>(session.Eval(ArgMin(s, x, -2))), (std::vector<int64_t>{1, 1, 1}));
}

TEST(ReduceTest, BadAxesNameTheNode) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {2, 3});
  std::string message = ErrorOf([&] { Sum(s.WithOpName("total"), x, {2}); });
  EXPECT_NE(message.find("total"), std::string::npos) << message;
  EXPECT_NE(message.find("[2,3]"), std::string::npos) << message;
  message = ErrorOf([&] { Mean(s.WithOpName("twice"), x, {1, -1}); });
  EXPECT_NE(message.find("twice"), std::string::npos) << message;
  message = ErrorOf([&] { ArgMax(s.WithOpName("am"), x, -3); });
  EXPECT_NE(message.find("am"), std::string::npos) << message;
}

TEST(ReduceGradTest, SumMeanProdAllAxesSets) {
  const std::vector<std::vector<int64_t>> axes_sets = {{}, {0}, {1}, {-1}, {0, 2}};
  for (bool keep : {false, true}) {
    for (const auto& axes : axes_sets) {
      ReduceOptions o{.keep_dims = keep};
      Tensor x = RandomDoubles({2, 3, 4}, 11, 0.5, 1.5);
      EXPECT_LT(
          MaxGradientError([&](const Scope& s, const Xs& v) { return Sum(s, v[0], axes, o); }, {x}),
          1e-6);
      EXPECT_LT(MaxGradientError(
                    [&](const Scope& s, const Xs& v) { return Mean(s, v[0], axes, o); }, {x}),
                1e-6);
      EXPECT_LT(MaxGradientError(
                    [&](const Scope& s, const Xs& v) { return Prod(s, v[0], axes, o); }, {x}),
                1e-6);
    }
  }
}

TEST(ReduceGradTest, ProdWithAZero) {
  Tensor x = Tensor::FromVector<double>({0.0, 2.0, 3.0, 1.5, 0.5, 4.0}, {2, 3});
  EXPECT_LT(MaxGradientError([](const Scope& s, const Xs& v) { return Prod(s, v[0], {1}); }, {x}),
            1e-6);
  Graph graph;
  Scope s(graph);
  auto xs = Placeholder(s, kFloat64, {3});
  auto g = Gradients(s, {Prod(s, xs)}, {xs})[0];
  Session session(graph);
  EXPECT_EQ(Values<double>(session.Run({{xs, Tensor::FromVector<double>({0, 2, 3})}}, {g})[0]),
            (std::vector<double>{6, 0, 0}));
  // Two zeros in one group: every gradient is zero.
  EXPECT_EQ(Values<double>(session.Run({{xs, Tensor::FromVector<double>({0, 0, 3})}}, {g})[0]),
            (std::vector<double>{0, 0, 0}));
}

TEST(ReduceGradTest, MaxMinWithoutAndWithTies) {
  for (bool keep : {false, true}) {
    for (const std::vector<int64_t>& axes :
         std::vector<std::vector<int64_t>>{{}, {0}, {1}, {0, 2}}) {
      Tensor x = RandomDoubles({2, 3, 4}, 13);  // distinct values: no ties
      ReduceOptions o{.keep_dims = keep};
      EXPECT_LT(
          MaxGradientError([&](const Scope& s, const Xs& v) { return Max(s, v[0], axes, o); }, {x}),
          1e-6);
      EXPECT_LT(
          MaxGradientError([&](const Scope& s, const Xs& v) { return Min(s, v[0], axes, o); }, {x}),
          1e-6);
    }
  }
  // A tie splits the gradient evenly (TF's rule).
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {4});
  auto grad = Gradients(s, {Max(s, x)}, {x})[0];
  Session session(graph);
  Tensor g = session.Run({{x, Tensor::FromVector<double>({1, 5, 5, 2})}}, {grad})[0];
  EXPECT_EQ(Values<double>(g), (std::vector<double>{0, 0.5, 0.5, 0}));
}

TEST(ReduceGradTest, BroadcastToShapeOfRoundTrip) {
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const Xs& v) {
                  return Mul(s, BroadcastToShapeOf(s, v[0], v[1], {1}), v[1]);
                },
                {RandomDoubles({2, 4}, 1), RandomDoubles({2, 3, 4}, 2)}),
            1e-6);
}

}  // namespace
}  // namespace loom
