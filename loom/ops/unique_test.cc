#include "loom/ops/unique.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

template <typename T>
std::vector<T> Items(const Tensor& t) {
  auto v = t.flat<T>();
  return {v.begin(), v.end()};
}

// TF's documented example, and strings, int64 positions, NaNs and the empty vector.
TEST(UniqueTest, FirstOccurrenceOrderAndPositions) {
  Graph graph;
  Scope s(graph);
  auto u = Unique(s, Const(s, Tensor::FromVector<int32_t>({1, 1, 2, 4, 4, 4, 7, 8, 8})));
  EXPECT_EQ(u.idx.dtype(), kInt32);
  EXPECT_EQ(u.y.shape(), Shape({kUnknownDim}));
  auto words =
      Unique(s, Const(s, Tensor::FromVector<std::string>({"b", "a", "b", "c", "a"})), kInt64);
  auto nans = Unique(s, Const(s, Tensor::FromVector<double>({NAN, 1.0, NAN, -0.0, 0.0})));
  auto none = Unique(s, Const(s, Tensor::FromVector<float>({})));
  Session session(graph);
  auto out = session.Run({}, {u.y, u.idx, words.y, words.idx, nans.y, nans.idx, none.y});
  EXPECT_EQ(Items<int32_t>(out[0]), (std::vector<int32_t>{1, 2, 4, 7, 8}));
  EXPECT_EQ(Items<int32_t>(out[1]), (std::vector<int32_t>{0, 0, 1, 2, 2, 2, 3, 4, 4}));
  EXPECT_EQ(Items<std::string>(out[2]), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(Items<int64_t>(out[3]), (std::vector<int64_t>{0, 1, 0, 2, 1}));
  // NaN equals nothing (two values), -0 equals 0 (one value).
  EXPECT_EQ(out[4].NumElements(), 4);
  EXPECT_EQ(Items<int32_t>(out[5]), (std::vector<int32_t>{0, 1, 2, 3, 3}));
  EXPECT_EQ(out[6].shape(), Shape({0}));
}

TEST(UniqueTest, NonVectorsAndBadIndexTypesFail) {
  Graph graph;
  Scope s(graph);
  std::string m = ErrorOf(
      [&] {
        Unique(s, Placeholder(s, kFloat32, {2, 2}));
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("rank"), std::string::npos) << m;
  m = ErrorOf([&] { Unique(s, Placeholder(s, kFloat32, {2}), kFloat32); },
              ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("out_idx must be int32 or int64"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom
