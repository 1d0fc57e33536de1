#include "loom/ops/space_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

std::vector<float> Ramp(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1);
  return v;
}

template <typename T>
std::vector<T> ValuesOf(const Tensor& t) {
  return {t.flat<T>().begin(), t.flat<T>().end()};
}

// TF's documented example (3): [1, 4, 4, 1] of 1..16, block 2 x 2, no padding.
TEST(SpaceBatchTest, SpaceToBatchAsDocumented) {
  Graph graph;
  Scope s(graph);
  Output y = SpaceToBatchND(s, Const(s, Tensor::FromVector<float>(Ramp(16), {1, 4, 4, 1})), {2, 2},
                            {{0, 0}, {0, 0}});
  EXPECT_EQ(y.shape(), Shape({4, 2, 2, 1}));
  Session session(graph);
  EXPECT_EQ(ValuesOf<float>(session.Eval(y)),
            (std::vector<float>{1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16}));
}

// TF's example (4): [2, 2, 4, 1], block 2 x 2, paddings [[0, 0], [2, 0]]; BatchToSpaceND with
// the paddings as crops gives the input back. int32, to show any dtype.
TEST(SpaceBatchTest, PaddedRoundTripAsDocumented) {
  Graph graph;
  Scope s(graph);
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[i] = i + 1;
  Output x = Const(s, Tensor::FromVector<int32_t>(in, {2, 2, 4, 1}));
  Output y = SpaceToBatchND(s, x, {2, 2}, {{0, 0}, {2, 0}});
  Output back = BatchToSpaceND(s, y, {2, 2}, {{0, 0}, {2, 0}});
  EXPECT_EQ(y.shape(), Shape({8, 1, 3, 1}));
  EXPECT_EQ(back.shape(), Shape({2, 2, 4, 1}));
  Session session(graph);
  auto out = session.Run({}, {y, back});
  EXPECT_EQ(ValuesOf<int32_t>(out[0]),
            (std::vector<int32_t>{0, 1, 3, 0, 9,  11, 0, 2, 4, 0, 10, 12,
                                  0, 5, 7, 0, 13, 15, 0, 6, 8, 0, 14, 16}));
  EXPECT_EQ(ValuesOf<int32_t>(out[1]), in);
}

// One block dim and trailing dims copied whole: [2, 5, 3] block 3, paddings {1, 0}.
TEST(SpaceBatchTest, OneBlockDimWithTrailingDims) {
  Graph graph;
  Scope s(graph);
  Output x = Const(s, Tensor::FromVector<float>(Ramp(30), {2, 5, 3}));
  Output y = SpaceToBatchND(s, x, {3}, {{1, 0}});
  EXPECT_EQ(y.shape(), Shape({6, 2, 3}));
  Session session(graph);
  // Padded rows per image: P = [0, r0, r1, r2, r3, r4]; block offset k takes P[k] and
  // P[k + 3], batch entry k * 2 + n.
  Tensor got = session.Eval(y);
  EXPECT_EQ(
      ValuesOf<float>(got),
      (std::vector<float>{0,  0,  0,  7,  8,  9,  0, 0, 0, 22, 23, 24, 1,  2,  3,  10, 11, 12,
                          16, 17, 18, 25, 26, 27, 4, 5, 6, 13, 14, 15, 19, 20, 21, 28, 29, 30}));
}

TEST(SpaceBatchTest, EachIsTheOthersGradient) {
  for (bool to_batch : {true, false}) {
    Tensor x = RandomDoubles(to_batch ? Shape{2, 3, 4, 2} : Shape{8, 2, 3, 2}, 21);
    EXPECT_LT(MaxGradientError(
                  [to_batch](const Scope& s, const std::vector<Output>& in) {
                    return to_batch ? SpaceToBatchND(s, in[0], {2, 2}, {{1, 0}, {0, 2}})
                                    : BatchToSpaceND(s, in[0], {2, 2}, {{1, 0}, {0, 2}});
                  },
                  {x}),
              1e-9);
  }
}

TEST(SpaceBatchTest, BadBlocksNameTheNode) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {1, 5, 4, 1});
  std::string m = ErrorOf(
      [&] {
        SpaceToBatchND(s, x, {2, 2}, {{0, 0}, {0, 0}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("SpaceToBatchND"), std::string::npos) << m;
  EXPECT_NE(m.find("is 5, not a multiple of its block 2"), std::string::npos) << m;
  m = ErrorOf([&] { BatchToSpaceND(s, x, {2, 2}, {{0, 0}, {0, 0}}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("not a multiple of the block count 4"), std::string::npos) << m;
  m = ErrorOf([&] { SpaceToBatchND(s, x, {2, 0}, {{0, 0}, {0, 0}}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("at least 1"), std::string::npos) << m;
  m = ErrorOf([&] { SpaceToBatchND(s, x, {2, 2}, {{1, 1}}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("2 entries {before, after} per block dim"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom
