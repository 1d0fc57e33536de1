#include "loom/ops/topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "loom/autodiff/gradients.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

template <typename T>
std::vector<T> Flat(const Tensor& t) {
  auto v = t.flat<T>();
  return std::vector<T>(v.begin(), v.end());
}

// The float64 reference: a stable sort of each row's positions by value, descending.
void ReferenceTopK(const std::vector<double>& x, int64_t columns, int64_t k,
                   std::vector<double>& values, std::vector<int32_t>& indices) {
  for (size_t r = 0; r * columns < x.size(); ++r) {
    std::vector<int32_t> order(columns);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return x[r * columns + a] > x[r * columns + b]; });
    for (int64_t j = 0; j < k; ++j) {
      indices.push_back(order[j]);
      values.push_back(x[r * columns + order[j]]);
    }
  }
}

TEST(TopKTest, LargestFirstTiesByLowerIndex) {
  Graph graph;
  Scope s(graph);
  // TF 1.15's documented tie rule: equal values keep the lower index first.
  const std::vector<double> x = {1, 3, 3, 2, 3, -1, 0.5, 0.5, 7, -2, 4, 4};
  auto t = TopKV2(s, Const(s, Tensor::FromVector<double>(x, {2, 6})), 4);
  EXPECT_EQ(t.values.shape(), Shape({2, 4}));
  EXPECT_EQ(t.indices.dtype(), kInt32);
  Session session(graph);
  auto out = session.Run({}, {t.values, t.indices});
  std::vector<double> want_values;
  std::vector<int32_t> want_indices;
  ReferenceTopK(x, 6, 4, want_values, want_indices);
  EXPECT_EQ(Flat<double>(out[0]), want_values);
  EXPECT_EQ(Flat<int32_t>(out[1]), want_indices);
  // By hand: row 0 is 3 (1), 3 (2), 3 (4), 2 (3); row 1 is 7 (2), 4 (4), 4 (5), 0.5 (0).
  EXPECT_EQ(Flat<int32_t>(out[1]), (std::vector<int32_t>{1, 2, 4, 3, 2, 4, 5, 0}));
}

TEST(TopKTest, RandomRowsMatchTheReferenceInEveryDType) {
  std::vector<double> x(3 * 4 * 9);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::round(10 * std::sin(1.7 * i));  // ties
  std::vector<double> want_values;
  std::vector<int32_t> want_indices;
  ReferenceTopK(x, 9, 5, want_values, want_indices);
  for (DType dtype : {kFloat32, kFloat64, kInt32, kInt64}) {
    Graph graph;
    Scope s(graph);
    auto in = Cast(s, Const(s, Tensor::FromVector<double>(x, {3, 4, 9})), dtype);
    auto k = Placeholder(s, kInt32, {});
    auto t = TopKV2(s, in, k);
    EXPECT_EQ(t.values.shape(), Shape({3, 4, kUnknownDim}));  // k known at run time only
    Session session(graph);
    auto out =
        session.Run({{k, Tensor::Scalar<int32_t>(5)}}, {Cast(s, t.values, kFloat64), t.indices});
    EXPECT_EQ(out[0].shape(), Shape({3, 4, 5}));
    EXPECT_EQ(Flat<double>(out[0]), want_values) << DTypeName(dtype);
    EXPECT_EQ(Flat<int32_t>(out[1]), want_indices) << DTypeName(dtype);
  }
}

// Enough rows for several chunks on the pool, and each selection path (a heap for k <= 32,
// nth_element above, a full sort for k = the row length): the reference's answer, ties too.
TEST(TopKTest, ManyRowsOnThePoolEverySelectionPath) {
  std::vector<double> x(3000 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::round(50 * std::sin(0.37 * i));
  for (int64_t k : {7, 33, 50, 64}) {
    std::vector<double> want_values;
    std::vector<int32_t> want_indices;
    ReferenceTopK(x, 64, k, want_values, want_indices);
    Graph graph;
    Scope s(graph);
    auto t = TopKV2(s, Const(s, Tensor::FromVector<double>(x, {3000, 64})), k);
    Session session(graph, {.intra_op_threads = 2});
    auto out = session.Run({}, {t.values, t.indices});
    EXPECT_EQ(Flat<double>(out[0]), want_values) << k;
    EXPECT_EQ(Flat<int32_t>(out[1]), want_indices) << k;
  }
}

TEST(TopKTest, NanRanksFirstAndKZeroIsEmpty) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<float>({1.f, NAN, 5.f, NAN}));
  auto t = TopKV2(s, x, 3);
  auto none = TopKV2(s, x, 0);
  Session session(graph);
  auto out = session.Run({}, {t.indices, none.values});
  EXPECT_EQ(Flat<int32_t>(out[0]), (std::vector<int32_t>{1, 3, 2}));
  EXPECT_EQ(out[1].shape(), Shape({0}));
}

TEST(TopKTest, BadKAndScalarsFailNamingTheNode) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {2, 3});
  std::string m = ErrorOf([&] { TopKV2(s.WithOpName("top"), x, 4); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("'top'"), std::string::npos) << m;
  EXPECT_NE(m.find("at least k = 4 columns"), std::string::npos) << m;
  m = ErrorOf([&] { TopKV2(s, x, -1); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("k >= 0"), std::string::npos) << m;
  m = ErrorOf([&] { TopKV2(s, Const(s, Tensor::Scalar<float>(1.f)), 1); },
              ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("at least 1-D"), std::string::npos) << m;
  // k fed at run time: the same check when the op runs.
  auto k = Placeholder(s, kInt32, {});
  auto t = TopKV2(s.WithOpName("fed"), x, k);
  Session session(graph);
  m = ErrorOf(
      [&] {
        session.Run({{x, Tensor(kFloat32, {2, 3})}, {k, Tensor::Scalar<int32_t>(7)}}, {t.values});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("at least k = 7 columns"), std::string::npos) << m;
}

// The gradient scatters into the input's shape: numeric check in float64 (distinct values,
// so the selection does not change within the step), and the hand-worked positions.
TEST(TopKGradTest, ScattersIntoTheInputsShape) {
  EXPECT_LT(MaxGradientError([](const Scope& s,
                                const std::vector<Output>& x) { return TopKV2(s, x[0], 3).values; },
                             {RandomDoubles({4, 2, 6}, 3)}),
            1e-8);
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<double>({0.1, 0.9, 0.5, 0.3}));
  auto t = TopKV2(s, x, 2);
  // d sum([10, 20] * values) / dx: 10 at index 1 (0.9), 20 at index 2 (0.5).
  auto dx = Gradients(s, {Mul(s, t.values, Const(s, Tensor::FromVector<double>({10, 20})))}, {x});
  Session session(graph);
  EXPECT_EQ(Flat<double>(session.Eval(dx[0])), (std::vector<double>{0, 10, 20, 0}));
}

// tf.where(condition): row-major coordinates of the true elements, bool or nonzero.
TEST(WhereTest, CoordinatesOfTrueElements) {
  Graph graph;
  Scope s(graph);
  auto b = Const(s, Tensor::FromVector<bool>({true, false, false, true, true, false}, {2, 3}));
  auto w = Where(s, b);
  EXPECT_EQ(w.shape(), Shape({kUnknownDim, 2}));
  auto f = Where(s, Const(s, Tensor::FromVector<float>({0.f, -2.f, 0.f, 0.5f})));
  auto none = Where(s, Const(s, Tensor::FromVector<int32_t>({0, 0}, {1, 2})));
  Session session(graph);
  auto out = session.Run({}, {w, f, none});
  EXPECT_EQ(out[0].shape(), Shape({3, 2}));
  EXPECT_EQ(Flat<int64_t>(out[0]), (std::vector<int64_t>{0, 0, 1, 0, 1, 1}));
  EXPECT_EQ(Flat<int64_t>(out[1]), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(out[2].shape(), Shape({0, 2}));
}

}  // namespace
}  // namespace loom
