#include "loom/train/learning_rate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom::train {
namespace {

class LearningRateTest : public ::testing::Test {
 protected:
  // The schedule's value with the global step fed as t.
  double At(Output schedule, int64_t t) {
    Tensor v = session_.Eval(schedule, {{step_, Tensor::Scalar<int64_t>(t)}});
    return v.dtype() == kFloat32 ? v.scalar<float>() : v.scalar<double>();
  }

  Graph graph_;
  Scope s_{graph_};
  Output step_ = Placeholder(s_.WithOpName("step"), kInt64, Shape{});
  Session session_{graph_};
};

TEST_F(LearningRateTest, ExponentialDecay) {
  Output smooth = ExponentialDecay(s_, 0.1, step_, 100, 0.96);
  Output stairs = ExponentialDecay(s_, 0.1, step_, 100, 0.96, /*staircase=*/true);
  EXPECT_EQ(smooth.dtype(), kFloat32);
  EXPECT_EQ(smooth.shape(), Shape{});
  for (int64_t t : {0, 50, 100, 150, 1000}) {
    EXPECT_NEAR(At(smooth, t), 0.1 * std::pow(0.96, t / 100.0), 1e-7) << t;
    EXPECT_NEAR(At(stairs, t), 0.1 * std::pow(0.96, std::floor(t / 100.0)), 1e-7) << t;
  }
  EXPECT_NEAR(At(stairs, 150), 0.096, 1e-7);
}

// TF 1.15's tf.train.inverse_time_decay and natural_exp_decay: p = t / decay_steps (floored
// if staircase); lr / (1 + rate * p) and lr * exp(-rate * p).
TEST_F(LearningRateTest, InverseTimeAndNaturalExpDecay) {
  Output inv = InverseTimeDecay(s_, 0.1, step_, 100, 0.5);
  Output inv_stairs = InverseTimeDecay(s_, 0.1, step_, 100, 0.5, /*staircase=*/true);
  Output nat = NaturalExpDecay(s_, 0.1, step_, 100, 0.5);
  Output nat_stairs = NaturalExpDecay(s_, 0.1, step_, 100, 0.5, /*staircase=*/true);
  EXPECT_EQ(inv.dtype(), kFloat32);
  EXPECT_EQ(nat.shape(), Shape{});
  for (int64_t t : {0, 50, 100, 150, 1000}) {
    const double p = t / 100.0;
    EXPECT_NEAR(At(inv, t), 0.1 / (1 + 0.5 * p), 1e-8) << t;
    EXPECT_NEAR(At(inv_stairs, t), 0.1 / (1 + 0.5 * std::floor(p)), 1e-8) << t;
    EXPECT_NEAR(At(nat, t), 0.1 * std::exp(-0.5 * p), 1e-8) << t;
    EXPECT_NEAR(At(nat_stairs, t), 0.1 * std::exp(-0.5 * std::floor(p)), 1e-8) << t;
  }
  // Worked by hand: t = 150 is one and a half periods, one whole one on the staircase.
  EXPECT_NEAR(At(inv, 150), 0.1 / 1.75, 1e-8);
  EXPECT_NEAR(At(inv_stairs, 150), 0.1 / 1.5, 1e-8);
  EXPECT_NEAR(At(nat_stairs, 150), 0.1 * std::exp(-0.5), 1e-8);
  EXPECT_NE(ErrorOf([&] { InverseTimeDecay(s_, 0.1, step_, 0, 0.5); }, ErrorCode::kInvalidArgument)
                .find("decay_steps must be positive, got 0"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { NaturalExpDecay(s_, 0.1, step_, -1, 0.5); }, ErrorCode::kInvalidArgument)
                .find("NaturalExpDecay"),
            std::string::npos);
}

TEST_F(LearningRateTest, PiecewiseConstantIncludesTheBoundaryInTheEarlierPiece) {
  Output lr = PiecewiseConstant(s_, step_, {100, 200}, {1.0, 0.5, 0.1});
  EXPECT_FLOAT_EQ(At(lr, 0), 1.0);
  EXPECT_FLOAT_EQ(At(lr, 100), 1.0);
  EXPECT_FLOAT_EQ(At(lr, 101), 0.5);
  EXPECT_FLOAT_EQ(At(lr, 200), 0.5);
  EXPECT_FLOAT_EQ(At(lr, 201), 0.1);
  EXPECT_FLOAT_EQ(At(lr, 100000), 0.1);
}

TEST_F(LearningRateTest, PolynomialDecayWithAndWithoutCycle) {
  Output lr = PolynomialDecay(s_, 0.1, step_, 100, 0.01, 2.0);
  Output cyc = PolynomialDecay(s_, 0.1, step_, 100, 0.01, 2.0, /*cycle=*/true);
  EXPECT_NEAR(At(lr, 0), 0.1, 1e-7);
  EXPECT_NEAR(At(lr, 50), 0.09 * 0.25 + 0.01, 1e-7);
  EXPECT_NEAR(At(lr, 100), 0.01, 1e-7);
  EXPECT_NEAR(At(lr, 150), 0.01, 1e-7);
  EXPECT_NEAR(At(cyc, 0), 0.1, 1e-7);
  EXPECT_NEAR(At(cyc, 50), 0.09 * 0.25 + 0.01, 1e-7);
  // Second cycle: decay_steps becomes 200.
  EXPECT_NEAR(At(cyc, 150), 0.09 * 0.25 * 0.25 + 0.01, 1e-7);
  EXPECT_NEAR(At(cyc, 200), 0.01, 1e-7);
}

TEST_F(LearningRateTest, CosineDecay) {
  Output lr = CosineDecay(s_, 0.1, step_, 100, /*alpha=*/0.1);
  auto expected = [](double t) {
    t = std::min(t, 100.0);
    return 0.1 * (0.9 * 0.5 * (1 + std::cos(std::numbers::pi * t / 100)) + 0.1);
  };
  for (int64_t t : {0, 25, 50, 99, 100, 500}) EXPECT_NEAR(At(lr, t), expected(t), 1e-7) << t;
  EXPECT_NEAR(At(lr, 500), 0.01, 1e-7);
}

TEST_F(LearningRateTest, TensorLearningRateKeepsItsDtype) {
  Output base = Placeholder(s_.WithOpName("base"), kFloat64, Shape{});
  Output lr = ExponentialDecay(s_, base, step_, 10, 0.5);
  EXPECT_EQ(lr.dtype(), kFloat64);
  Tensor v = session_.Run(
      {{step_, Tensor::Scalar<int64_t>(20)}, {base, Tensor::Scalar<double>(0.8)}}, {lr})[0];
  EXPECT_DOUBLE_EQ(v.scalar<double>(), 0.2);
}

TEST_F(LearningRateTest, BadArgumentsAreRejected) {
  EXPECT_THROW(ExponentialDecay(s_, 0.1, step_, 0, 0.5), Error);
  EXPECT_THROW(CosineDecay(s_, 0.1, step_, -1), Error);
  EXPECT_THROW(PiecewiseConstant(s_, step_, {10, 20}, {1.0, 0.5}), Error);
  EXPECT_THROW(PiecewiseConstant(s_, step_, {20, 10}, {1.0, 0.5, 0.1}), Error);
  Output float_step = Placeholder(s_, kFloat32, Shape{});
  EXPECT_THROW(PolynomialDecay(s_, 0.1, float_step, 10), Error);
}

}  // namespace
}  // namespace loom::train
