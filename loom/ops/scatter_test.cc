#include "loom/ops/scatter.h"

#include <gtest/gtest.h>

#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

std::vector<double> Doubles(const Tensor& t) {
  auto v = t.flat<double>();
  return {v.begin(), v.end()};
}

// TF's documented examples of gather_nd and scatter_nd, worked by hand.
TEST(ScatterTest, GatherNdAndScatterNdAsDocumented) {
  Graph graph;
  Scope s(graph);
  auto params = Const(s, Tensor::FromVector<double>({1, 2, 3, 4}, {2, 2}));  // [[a, b], [c, d]]
  auto elements = GatherNd(s, params, Const(s, Tensor::FromVector<int64_t>({0, 0, 1, 1}, {2, 2})));
  auto rows = GatherNd(s, params, Const(s, Tensor::FromVector<int32_t>({1, 0}, {2, 1})));
  EXPECT_EQ(elements.shape(), Shape({2}));
  EXPECT_EQ(rows.shape(), Shape({2, 2}));
  // scatter_nd(indices=[[4], [3], [1], [7]], updates=[9, 10, 11, 12], shape=[8]).
  auto scattered = ScatterNd(s, Const(s, Tensor::FromVector<int64_t>({4, 3, 1, 7}, {4, 1})),
                             Const(s, Tensor::FromVector<double>({9, 10, 11, 12})),
                             Const(s, Tensor::FromVector<int64_t>({8})));
  EXPECT_EQ(scattered.shape(), Shape({8}));
  // Repeated indices add up.
  auto twice = ScatterNd(s, Const(s, Tensor::FromVector<int64_t>({1, 1}, {2, 1})),
                         Const(s, Tensor::FromVector<double>({2, 5})),
                         Const(s, Tensor::FromVector<int64_t>({3})));
  Session session(graph);
  auto out = session.Run({}, {elements, rows, scattered, twice});
  EXPECT_EQ(Doubles(out[0]), (std::vector<double>{1, 4}));
  EXPECT_EQ(Doubles(out[1]), (std::vector<double>{3, 4, 1, 2}));
  EXPECT_EQ(Doubles(out[2]), (std::vector<double>{0, 11, 0, 10, 9, 0, 0, 12}));
  EXPECT_EQ(Doubles(out[3]), (std::vector<double>{0, 7, 0}));
}

TEST(ScatterTest, UnsortedSegmentSumAsDocumented) {
  Graph graph;
  Scope s(graph);
  // TF's example: c = [[1, 2, 3, 4], [5, 6, 7, 8], [4, 3, 2, 1]], ids [0, 1, 0], 2 segments:
  // [[5, 5, 5, 5], [5, 6, 7, 8]]. A negative id drops its row.
  auto c = Const(s, Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 4, 3, 2, 1}, {3, 4}));
  auto sums = UnsortedSegmentSum(s, c, Const(s, Tensor::FromVector<int32_t>({0, 1, 0})), 2);
  auto dropped = UnsortedSegmentSum(s, c, Const(s, Tensor::FromVector<int64_t>({-1, 1, 0})), 3);
  EXPECT_EQ(sums.shape(), Shape({2, 4}));
  Session session(graph);
  auto out = session.Run({}, {sums, dropped});
  EXPECT_EQ(Doubles(out[0]), (std::vector<double>{5, 5, 5, 5, 5, 6, 7, 8}));
  EXPECT_EQ(Doubles(out[1]), (std::vector<double>{4, 3, 2, 1, 5, 6, 7, 8, 0, 0, 0, 0}));
}

TEST(ScatterTest, OutOfRangeIndicesFailNamingThem) {
  Graph graph;
  Scope s(graph);
  auto params = Placeholder(s, kFloat32, {2, 3});
  auto g =
      GatherNd(s.WithOpName("g"), params, Const(s, Tensor::FromVector<int64_t>({1, 3}, {1, 2})));
  auto seg = UnsortedSegmentSum(s.WithOpName("seg"), params,
                                Const(s, Tensor::FromVector<int64_t>({0, 2})), 2);
  Session session(graph);
  Tensor value(kFloat32, {2, 3});
  std::string m = ErrorOf(
      [&] {
        session.Run({{params, value}}, {g});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("index 3 (tuple 0, coordinate 1) is outside [0, 3)"), std::string::npos) << m;
  EXPECT_NE(m.find("'g'"), std::string::npos) << m;
  m = ErrorOf([&] { session.Run({{params, value}}, {seg}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("segment id 2"), std::string::npos) << m;
  m = ErrorOf(
      [&] {
        GatherNd(s, params, Placeholder(s, kInt64, {4, 3}));
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("3 coordinates for params of rank 2"), std::string::npos) << m;
  m = ErrorOf(
      [&] {
        ScatterNd(s, Const(s, Tensor::FromVector<int64_t>({0, 1}, {2, 1})),
                  Placeholder(s, kFloat32, {3}), Const(s, Tensor::FromVector<int64_t>({4})));
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("indices[:-1] + shape[M:]"), std::string::npos) << m;
}

// tf.math.segment_sum's ids must be non-negative and sorted; TF's kernel refuses others.
// Loom's segment_sum was an UnsortedSegmentSum that silently dropped a negative id's row
// and summed unsorted ids.
TEST(ScatterTest, SegmentSumRefusesNegativeOrUnsortedIds) {
  Graph graph;
  Scope s(graph);
  auto c = Const(s, Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {3, 2}));
  auto ids = Placeholder(s, kInt64, {3});
  auto sums = SegmentSum(s.WithOpName("seg"), c, ids, 3);
  Session session(graph);
  auto run = [&](const std::vector<int64_t>& v) {
    return session.Run({{ids, Tensor::FromVector<int64_t>(v)}}, {sums})[0];
  };
  EXPECT_EQ(Doubles(run({0, 0, 2})), (std::vector<double>{4, 6, 0, 0, 5, 6}));
  std::string m = ErrorOf([&] { run({-1, 0, 1}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("segment id -1 (position 0) is negative"), std::string::npos) << m;
  EXPECT_NE(m.find("'seg'"), std::string::npos) << m;
  m = ErrorOf([&] { run({1, 0, 2}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("segment ids are not increasing: 0 at position 1 follows 1"), std::string::npos)
      << m;
  m = ErrorOf([&] { run({0, 1, 3}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("segment id 3"), std::string::npos) << m;
}

// Each op's gradient against central differences in float64 (indices fixed, repeated ones
// and a dropped segment id included).
TEST(ScatterGradTest, NumericGradients) {
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return GatherNd(
                      s, x[0], Const(s, Tensor::FromVector<int64_t>({1, 0, 0, 2, 1, 0}, {3, 2})));
                },
                {RandomDoubles({2, 3}, 1)}),
            1e-8);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return ScatterNd(s, Const(s, Tensor::FromVector<int64_t>({2, 0, 2}, {3, 1})),
                                   x[0], Const(s, Tensor::FromVector<int64_t>({4, 2})));
                },
                {RandomDoubles({3, 2}, 2)}),
            1e-8);
  for (bool static_rank : {true, false}) {
    EXPECT_LT(MaxGradientError(
                  [static_rank](const Scope& s, const std::vector<Output>& x) {
                    Output ids = Const(s, Tensor::FromVector<int64_t>({1, -1, 1, 0}, {2, 2}));
                    Output data = x[0];
                    if (!static_rank) {
                      // The same values through a reshape whose target has a length known
                      // only at run time: data's rank is unknown to the gradient rule.
                      Output zero = Const(s, Tensor::Scalar<int64_t>(0));
                      Output one = Const(s, Tensor::Scalar<int64_t>(1));
                      Output dims = Gather(s, ShapeOf(s, data), Range(s, zero, Rank(s, data), one));
                      data = Reshape(s, data, dims);
                      EXPECT_FALSE(data.shape().rank_known());
                    }
                    return UnsortedSegmentSum(s, data, ids, 3);
                  },
                  {RandomDoubles({2, 2, 3}, 3)}),
              1e-8)
        << static_rank;
  }
}

}  // namespace
}  // namespace loom
