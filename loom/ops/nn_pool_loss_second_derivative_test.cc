// Second derivatives through the pooling and loss gradient ops: MaxPoolGrad (whose gradient
// is MaxPoolGradGrad, and MaxPoolGradGrad's is MaxPoolGrad), AvgPoolGrad (AvgPool),
// SoftmaxGrad / LogSoftmaxGrad, the xent ops' backprop output with ScaleRows, and
// SigmoidCrossEntropyWithLogitsGrad; each against the numeric gradient checker in float64,
// the softmax cross-entropy's Hessian-vector product against a float64 formula too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/base/strcat.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_pool_argmax.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

struct PoolCase {
  bool max;
  int64_t k, stride;
  const char* padding;
};

std::string Describe(const PoolCase& c) {
  return StrCat(c.max ? "MaxPool " : "AvgPool ", c.k, "x", c.k, " stride ", c.stride, " ",
                c.padding);
}

Output Pool(const Scope& s, const PoolCase& c, Output x) {
  return c.max ? MaxPool(s, x, {c.k, c.k}, {c.stride, c.stride}, c.padding)
               : AvgPool(s, x, {c.k, c.k}, {c.stride, c.stride}, c.padding);
}

// Tiling windows (MaxPoolGrad's write-once path), overlapping ones, SAME windows that the
// image's edge cuts, a VALID window leaving a row out.
const std::vector<PoolCase>& PoolCases() {
  static const std::vector<PoolCase> cases = {
      {true, 2, 2, "VALID"},  {true, 3, 1, "SAME"},  {true, 3, 2, "SAME"},  {true, 2, 2, "SAME"},
      {false, 2, 2, "VALID"}, {false, 3, 1, "SAME"}, {false, 3, 2, "SAME"},
  };
  return cases;
}

// gx = d/dx sum(pool(x) * dy) = PoolGrad(x, dy); the checker differentiates gx^2 (and, one
// order up, the gradient of sum(gx^2) with respect to dy, squared) in x and dy.
TEST(PoolLossSecondDerivativeTest, PoolGradientsAreDifferentiable) {
  for (const PoolCase& c : PoolCases()) {
    // Values spread apart (no two of a window within the checker's step): x in [-3, 3).
    const Tensor x = RandomDoubles({2, 5, 5, 3}, 41, -3.0, 3.0);
    Graph probe;
    Scope ps(probe);
    const Shape out_shape = Pool(ps, c, Placeholder(ps, kFloat64, {2, 5, 5, 3})).shape();
    const Tensor dy = RandomDoubles(out_shape, 42);
    for (int order = 2; order <= 3; ++order) {
      const double err = MaxGradientError(
          [&](const Scope& s, const std::vector<Output>& in) {
            Output gx = Gradients(s, {Sum(s, Mul(s, Pool(s, c, in[0]), in[1]))}, {in[0]})[0];
            if (order == 2) return Square(s, gx);
            return Square(s, Gradients(s, {Sum(s, Square(s, gx))}, {in[1]})[0]);
          },
          {x, dy});
      EXPECT_LT(err, 1e-6) << Describe(c) << ", derivative of order " << order;
    }
  }
}

// The same through MaxPoolWithArgmax's values (MaxPoolWithArgmaxGrad, whose gradient is
// MaxPoolGradGradWithArgmax), with and without the batch in the index.
TEST(PoolLossSecondDerivativeTest, MaxPoolWithArgmaxGradientIsDifferentiable) {
  for (bool with_batch : {false, true}) {
    const Tensor x = RandomDoubles({2, 5, 4, 3}, 45, -3.0, 3.0);
    const Tensor dy = RandomDoubles({2, 3, 2, 3}, 46);
    for (int order = 2; order <= 3; ++order) {
      const double err = MaxGradientError(
          [&](const Scope& s, const std::vector<Output>& in) {
            Output y = MaxPoolWithArgmax(s, in[0], {2, 3}, {2, 2}, "SAME",
                                         {.include_batch_in_index = with_batch})
                           .output;
            Output gx = Gradients(s, {Sum(s, Mul(s, y, in[1]))}, {in[0]})[0];
            if (order == 2) return Square(s, gx);
            return Square(s, Gradients(s, {Sum(s, Square(s, gx))}, {in[1]})[0]);
          },
          {x, dy});
      EXPECT_LT(err, 1e-6) << "include_batch_in_index " << with_batch << ", order " << order;
    }
  }
}

// MaxPoolGrad's gradient in dy routes each window's incoming gradient from the element that
// MaxPool returned: the first NaN of a window (as MaxPoolGrad), else its first maximum.
TEST(PoolLossSecondDerivativeTest, MaxPoolGradGradPicksTheForwardElement) {
  Graph graph;
  Scope s(graph);
  const double nan = std::nan("");
  // One 2x2 window per channel pair: channel 0 has a tie (3, 3), channel 1 a NaN.
  auto x = Const(s, Tensor::FromVector<double>({1, 2, 3, nan, 3, 5, 0, 7}, {1, 2, 2, 2}));
  auto dy = Placeholder(s, kFloat64, {1, 1, 1, 2});
  Output gx = Gradients(s, {Sum(s, Mul(s, MaxPool(s, x, {2, 2}, {2, 2}, "VALID"), dy))}, {x})[0];
  auto weights =
      Const(s, Tensor::FromVector<double>({10, 20, 30, 40, 50, 60, 70, 80}, {1, 2, 2, 2}));
  Output back = Gradients(s, {Sum(s, Mul(s, gx, weights))}, {dy})[0];
  Session session(graph);
  const Tensor got =
      session.Run({{dy, Tensor::FromVector<double>({1, 1}, {1, 1, 1, 2})}}, {back})[0];
  // Channel 0: elements 1, 3, 3, 0: the first 3 (weight 30); channel 1: 2, NaN, 5, 7: the NaN
  // (weight 40).
  EXPECT_EQ(got.data<double>()[0], 30);
  EXPECT_EQ(got.data<double>()[1], 40);
}

// A WGAN-GP gradient penalty through a critic with max-pooling: the gradient of
// ||d critic / d x||^2 in x and in the filter.
TEST(PoolLossSecondDerivativeTest, GradientPenaltyThroughMaxPool) {
  const std::vector<Tensor> values = {RandomDoubles({2, 6, 6, 2}, 51, -2.0, 2.0),
                                      RandomDoubles({3, 3, 2, 3}, 52),
                                      RandomDoubles({2, 3, 3, 3}, 53)};
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& in) {
        Output h = Tanh(s, Conv2D(s, in[0], in[1], {1, 1}, "SAME"));
        Output critic = Sum(s, Mul(s, MaxPool(s, h, {2, 2}, {2, 2}, "SAME"), in[2]));
        Output gx = Gradients(s, {critic}, {in[0]})[0];
        return Sum(s, Square(s, gx));
      },
      values);
  EXPECT_LT(err, 1e-5);
}

// H v of loss = sum(xent(z, x)) in the logits, by differentiating twice, against the
// float64 formula H v = S (p * v - p (p . v)) per row (S = sum of the row's labels), and
// the checker's derivative of H v in labels, logits and v.
TEST(PoolLossSecondDerivativeTest, SoftmaxCrossEntropyHessianVectorProduct) {
  const int64_t rows = 3, classes = 5;
  const Tensor labels = RandomDoubles({rows, classes}, 61, 0.0, 1.0);  // rows need not sum to 1
  const Tensor logits = RandomDoubles({rows, classes}, 62, -2.0, 2.0);
  const Tensor v = RandomDoubles({rows, classes}, 63);
  auto hvp = [](const Scope& s, const std::vector<Output>& in) {
    Output loss = Sum(s, SoftmaxCrossEntropyWithLogits(s, in[0], in[1]));
    Output g = Gradients(s, {loss}, {in[1]})[0];
    return Gradients(s, {Sum(s, Mul(s, g, in[2]))}, {in[1]})[0];
  };
  Graph graph;
  Scope s(graph);
  const Tensor got = Session(graph).Eval(hvp(s, {Const(s, labels), Const(s, logits), Const(s, v)}));
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = logits.data<double>() + r * classes;
    const double* z = labels.data<double>() + r * classes;
    const double* w = v.data<double>() + r * classes;
    double m = x[0], total = 0, sum_z = 0, pv = 0;
    for (int64_t j = 0; j < classes; ++j) m = std::max(m, x[j]);
    for (int64_t j = 0; j < classes; ++j) total += std::exp(x[j] - m);
    for (int64_t j = 0; j < classes; ++j) {
      sum_z += z[j];
      pv += std::exp(x[j] - m) / total * w[j];
    }
    for (int64_t j = 0; j < classes; ++j) {
      const double p = std::exp(x[j] - m) / total;
      EXPECT_NEAR(got.data<double>()[r * classes + j], sum_z * (p * w[j] - p * pv), 1e-12)
          << "row " << r << " class " << j;
    }
  }
  EXPECT_LT(MaxGradientError(hvp, {labels, logits, v}), 1e-6);
  // The loss gradient's own gradient in labels and logits (through the backprop output and
  // ScaleRows), a per-example weight on the loss.
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& in) {
                  Output loss = SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
                  Output g = Gradients(s, {Sum(s, Mul(s, loss, in[2]))}, {in[0], in[1]})[1];
                  return Square(s, g);
                },
                {labels, logits, RandomDoubles({rows}, 64)}),
            1e-6);
}

TEST(PoolLossSecondDerivativeTest, SparseSoftmaxCrossEntropyHessianVectorProduct) {
  const Tensor logits = RandomDoubles({4, 6}, 71, -2.0, 2.0);
  const Tensor v = RandomDoubles({4, 6}, 72);
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& in) {
        auto labels = Const(s, Tensor::FromVector<int64_t>({0, 5, 2, 2}));
        Output loss = Sum(s, Square(s, SparseSoftmaxCrossEntropyWithLogits(s, labels, in[0])));
        Output g = Gradients(s, {loss}, {in[0]})[0];
        return Gradients(s, {Sum(s, Mul(s, g, in[1]))}, {in[0]})[0];
      },
      {logits, v});
  EXPECT_LT(err, 1e-6);
}

TEST(PoolLossSecondDerivativeTest, SigmoidCrossEntropyGradientIsDifferentiable) {
  const Tensor labels = RandomDoubles({3, 4}, 81, 0.0, 1.0);
  const Tensor logits = RandomDoubles({3, 4}, 82, -3.0, 3.0);
  for (int part = 0; part < 2; ++part) {
    const double err = MaxGradientError(
        [part](const Scope& s, const std::vector<Output>& in) {
          Output loss = Sum(s, Square(s, SigmoidCrossEntropyWithLogits(s, in[0], in[1])));
          return Square(s, Gradients(s, {loss}, {in[0], in[1]})[part]);
        },
        {labels, logits});
    EXPECT_LT(err, 1e-6) << (part == 0 ? "d/d labels" : "d/d logits");
  }
}

TEST(PoolLossSecondDerivativeTest, SoftmaxAndLogSoftmaxGradientsAreDifferentiable) {
  for (bool log : {false, true}) {
    for (int axis : {-1, 0}) {
      const Tensor x = RandomDoubles({3, 4}, 91, -2.0, 2.0);
      const Tensor w = RandomDoubles({3, 4}, 92);
      const double err = MaxGradientError(
          [log, axis](const Scope& s, const std::vector<Output>& in) {
            Output y = log ? LogSoftmax(s, in[0], axis) : Softmax(s, in[0], axis);
            Output gx = Gradients(s, {Sum(s, Mul(s, Square(s, y), in[1]))}, {in[0]})[0];
            return Square(s, gx);
          },
          {x, w});
      EXPECT_LT(err, 1e-6) << (log ? "LogSoftmax" : "Softmax") << " axis " << axis;
    }
  }
}

// Weight decay inside a gradient penalty: L2Loss's gradient op differentiated again.
TEST(PoolLossSecondDerivativeTest, L2LossGradientIsDifferentiable) {
  const double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& in) {
        Output loss = Square(s, L2Loss(s, Tanh(s, in[0])));
        return Square(s, Gradients(s, {loss}, {in[0]})[0]);
      },
      {RandomDoubles({3, 4}, 101)});
  EXPECT_LT(err, 1e-6);
}

}  // namespace
}  // namespace loom
