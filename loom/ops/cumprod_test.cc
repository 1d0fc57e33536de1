// Cumprod (array.h): TF's documented values with exclusive / reverse, and its gradient.
#include <gtest/gtest.h>

#include <vector>

#include "loom/ops/array.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

std::vector<double> CumprodValues(const Tensor& t) {
  return {t.flat<double>().begin(), t.flat<double>().end()};
}

// TF's docstring: cumprod([a, b, c]) = [a, a * b, a * b * c]; exclusive [1, a, a * b];
// reverse [a * b * c, b * c, c]; both [b * c, c, 1]. a, b, c = 2, 3, 5; along axis 1 of a
// [2, 3] with the second row 1, -1, 4.
TEST(CumprodTest, ExclusiveAndReverseAsDocumented) {
  Graph graph;
  Scope s(graph);
  Output x = Const(s, Tensor::FromVector<double>({2, 3, 5, 1, -1, 4}, {2, 3}));
  Output y = Cumprod(s, x, 1);
  Output ex = Cumprod(s, x, 1, {.exclusive = true});
  Output rev = Cumprod(s, x, -1, {.reverse = true});
  Output both = Cumprod(s, x, 1, {.exclusive = true, .reverse = true});
  Output down = Cumprod(s, Const(s, Tensor::FromVector<int32_t>({2, 3, 5, 1, -1, 4}, {2, 3})), 0);
  Session session(graph);
  auto out = session.Run({}, {y, ex, rev, both, down});
  EXPECT_EQ(CumprodValues(out[0]), (std::vector<double>{2, 6, 30, 1, -1, -4}));
  EXPECT_EQ(CumprodValues(out[1]), (std::vector<double>{1, 2, 6, 1, 1, -1}));
  EXPECT_EQ(CumprodValues(out[2]), (std::vector<double>{30, 15, 5, -4, -4, 4}));
  EXPECT_EQ(CumprodValues(out[3]), (std::vector<double>{15, 5, 1, -4, 4, 1}));
  EXPECT_EQ(std::vector<int32_t>(out[4].flat<int32_t>().begin(), out[4].flat<int32_t>().end()),
            (std::vector<int32_t>{2, 3, 5, 2, -3, 20}));
}

TEST(CumprodTest, NumericGradients) {
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      Tensor x = RandomDoubles({3, 4}, 41, 0.5, 1.5);
      EXPECT_LT(MaxGradientError(
                    [=](const Scope& s, const std::vector<Output>& v) {
                      return Cumprod(s, v[0], 1, {.exclusive = exclusive, .reverse = reverse});
                    },
                    {x}),
                1e-8)
          << exclusive << reverse;
    }
  }
}

}  // namespace
}  // namespace loom
