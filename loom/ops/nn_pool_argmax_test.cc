#include "loom/ops/nn_pool_argmax.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/ops/nn_test_util.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

// A [2, 3, 4, 2] input worked by hand: 2x2 windows at stride 2, SAME (the last row of
// windows covers row 2 only). Channel 1 is channel 0 negated, so its maxima sit elsewhere;
// ties (the 7s of image 1) keep the first position in row-major order.
TEST(NnPoolArgmaxTest, ValuesAndTfsFlatIndicesByHand) {
  // Image 0, channel 0:  1 5 2 0 / 3 4 8 6 / 9 0 0 7;  image 1: all 7 but a 9 at (2, 3).
  const std::vector<double> c0 = {1, 5, 2, 0, 3, 4, 8, 6, 9, 0, 0, 7,
                                  7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 9};
  std::vector<double> v;
  for (double x : c0) v.insert(v.end(), {x, -x});
  Graph graph;
  Scope s(graph);
  Output x = Const(s, Tensor::FromVector<double>(v, {2, 3, 4, 2}));
  PoolWithArgmax p = MaxPoolWithArgmax(s, x, {2, 2}, {2, 2}, "SAME");
  PoolWithArgmax with_batch = MaxPoolWithArgmax(
      s, x, {2, 2}, {2, 2}, "SAME", {.argmax_dtype = kInt32, .include_batch_in_index = true});
  EXPECT_EQ(p.output.shape(), Shape({2, 2, 2, 2}));
  EXPECT_EQ(p.argmax.dtype(), kInt64);
  Session session(graph);
  auto out = session.Run({}, {p.output, p.argmax, with_batch.argmax});
  // (y * 4 + x) * 2 + c: image 0's maxima 5 at (0, 1), 8 at (1, 2), 9 at (2, 0), 7 at (2, 3);
  // minima (channel 1) 1 at (0, 0), 0 at (0, 3), 0 at (2, 1), 0 at (2, 2).
  nn_test::ExpectNear(out[0], {5, -1, 8, 0, 9, 0, 7, 0, 7, -7, 7, -7, 7, -7, 9, -7}, 0);
  const std::vector<int64_t> want = {2, 1, 12, 7, 16, 19, 22, 21, 0, 1, 4, 5, 16, 17, 22, 21};
  EXPECT_EQ(std::vector<int64_t>(out[1].flat<int64_t>().begin(), out[1].flat<int64_t>().end()),
            want);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[2].flat<int32_t>()[i], want[i] + (i >= 8 ? 24 : 0)) << i;
  }
}

// Values 0.01 apart (i * 37 mod 180 is a permutation of 0 .. 179), so no window has a tie
// that a finite difference would split.
Tensor Untied() {
  Tensor t(kFloat64, {2, 5, 6, 3});
  for (int64_t i = 0; i < 180; ++i) t.data<double>()[i] = static_cast<double>(i * 37 % 180) * 0.01;
  return t;
}

TEST(NnPoolArgmaxTest, NumericGradients) {
  for (const std::string padding : {"SAME", "VALID"}) {
    for (bool with_batch : {false, true}) {
      Tensor x = Untied();
      EXPECT_LT(MaxGradientError(
                    [&](const Scope& s, const std::vector<Output>& in) {
                      return MaxPoolWithArgmax(s, in[0], {3, 2}, {2, 2}, padding,
                                               {.include_batch_in_index = with_batch})
                          .output;
                    },
                    {x}),
                1e-8)
          << padding << with_batch;
    }
  }
}

TEST(NnPoolArgmaxTest, BadAttributesNameTheNode) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {1, 4, 4, 1});
  std::string m = testing::ErrorOf(
      [&] {
        MaxPoolWithArgmax(s, x, {2, 2}, {2, 2}, "SAME", {.argmax_dtype = kFloat32});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("Targmax must be int32 or int64"), std::string::npos) << m;
  m = testing::ErrorOf(
      [&] {
        MaxPoolWithArgmax(s, x, {5, 5}, {1, 1}, "VALID");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("MaxPoolWithArgmax"), std::string::npos) << m;
  EXPECT_NE(m.find("smaller than the window height 5"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom
