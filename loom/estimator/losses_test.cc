// Losses: per-element values and every reduction against hand computations, with
// weights; gradients through the numeric checker in float64.
#include "loom/estimator/losses.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/values.h"

namespace loom {
namespace {

namespace Lo = loom::losses;
using Lo::Reduction;

double Eval(Output y) {
  Session session(*y.node->graph(), {.intra_op_threads = 1});
  Tensor t = session.Eval(y);
  EXPECT_EQ(t.NumElements(), 1);
  return t.dtype() == kFloat32 ? t.scalar<float>() : t.scalar<double>();
}

std::vector<double> EvalVector(Output y) {
  Session session(*y.node->graph(), {.intra_op_threads = 1});
  Tensor t = session.Eval(y);
  std::vector<double> v;
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v.push_back(t.dtype() == kFloat32 ? t.data<float>()[i] : t.data<double>()[i]);
  }
  return v;
}

Tensor Doubles(std::vector<double> v, Shape shape) { return Tensor::FromVector(v, shape); }
using testing::Floats;

double LogSumExp(std::vector<double> z) {
  double m = *std::max_element(z.begin(), z.end()), s = 0;
  for (double v : z) s += std::exp(v - m);
  return m + std::log(s);
}

// Every reduction of per-element losses `l` with weights `w` (same length), by hand.
struct Reduced {
  double sum = 0, mean = 0, over_batch = 0, nonzero = 0;
};
Reduced ByHand(const std::vector<double>& l, const std::vector<double>& w) {
  Reduced r;
  double wsum = 0, present = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    r.sum += l[i] * w[i];
    wsum += w[i];
    present += w[i] != 0;
  }
  r.mean = wsum != 0 ? r.sum / wsum : 0;
  r.over_batch = r.sum / l.size();
  r.nonzero = present != 0 ? r.sum / present : 0;
  return r;
}

TEST(LossesTest, SparseSoftmaxCrossEntropyEveryReduction) {
  const std::vector<double> z = {1, 2, 3, 1, 1, 1, -2, 0, 5};
  const std::vector<int64_t> labels = {2, 0, 1};
  std::vector<double> per_example;
  for (int i = 0; i < 3; ++i) {
    std::vector<double> row(z.begin() + 3 * i, z.begin() + 3 * i + 3);
    per_example.push_back(LogSumExp(row) - row[labels[i]]);
  }
  const std::vector<double> w = {1, 0, 2.5};
  const Reduced r = ByHand(per_example, w);
  auto run = [&](bool weighted, Reduction red) {
    Graph graph;
    Scope s(graph);
    Output lab = Const(s, Tensor::FromVector(labels, {3}));
    Output logits = Const(s, Floats({1, 2, 3, 1, 1, 1, -2, 0, 5}, {3, 3}));
    std::optional<Input> wo;
    if (weighted) wo = Const(s, Floats({1, 0, 2.5}, {3}));
    Output y = Lo::SparseSoftmaxCrossEntropy(s, lab, logits, {.weights = wo, .reduction = red});
    return EvalVector(y);
  };
  const bool weighted = true;
  const std::vector<double> none = run(weighted, Reduction::kNone);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(none[i], per_example[i] * w[i], 1e-5);
  EXPECT_NEAR(run(weighted, Reduction::kSum)[0], r.sum, 1e-5);
  EXPECT_NEAR(run(weighted, Reduction::kMean)[0], r.mean, 1e-5);
  EXPECT_NEAR(run(weighted, Reduction::kSumOverBatchSize)[0], r.over_batch, 1e-5);
  EXPECT_NEAR(run(weighted, Reduction::kSumByNonzeroWeights)[0], r.nonzero, 1e-5);
  // Without weights every reduction but kSum is the plain mean.
  const Reduced plain = ByHand(per_example, {1, 1, 1});
  EXPECT_NEAR(run(false, Reduction::kSumByNonzeroWeights)[0], plain.mean, 1e-5);
  EXPECT_NEAR(run(false, Reduction::kSum)[0], plain.sum, 1e-5);
}

TEST(LossesTest, SparseLabelsMayBeColumnsOrUint8) {
  Graph graph;
  Scope s(graph);
  Output logits = Const(s, Floats({0, 0, 1, 2}, {2, 2}));
  Output a = Lo::SparseSoftmaxCrossEntropy(
      s, Const(s, Tensor::FromVector(std::vector<int32_t>{1, 0}, {2, 1})), logits);
  Output b = Lo::SparseSoftmaxCrossEntropy(
      s, Const(s, Tensor::FromVector(std::vector<uint8_t>{1, 0}, {2})), logits);
  const double expected = (std::log(2.0) + LogSumExp({1, 2}) - 1) / 2;
  EXPECT_NEAR(Eval(a), expected, 1e-6);
  EXPECT_NEAR(Eval(b), expected, 1e-6);
  EXPECT_THROW(Lo::SparseSoftmaxCrossEntropy(s, Const(s, Floats({1, 0}, {2})), logits), Error);
}

TEST(LossesTest, AllZeroWeightsGiveZeroNotNan) {
  Graph graph;
  Scope s(graph);
  Output logits = Const(s, Floats({0, 1, 2, 3}, {2, 2}));
  Output lab = Const(s, Tensor::FromVector(std::vector<int64_t>{0, 1}, {2}));
  for (Reduction red : {Reduction::kMean, Reduction::kSumByNonzeroWeights, Reduction::kSum}) {
    EXPECT_EQ(
        Eval(Lo::SparseSoftmaxCrossEntropy(s, lab, logits, {.weights = 0.0, .reduction = red})),
        0.0);
  }
}

TEST(LossesTest, SoftmaxCrossEntropyWithLabelSmoothing) {
  Graph graph;
  Scope s(graph);
  Output logits = Const(s, Doubles({1, 2, 3, 0, 0, 4}, {2, 3}));
  Output onehot = Const(s, Doubles({0, 0, 1, 1, 0, 0}, {2, 3}));
  const double ls = 0.3;
  double total = 0;
  const std::vector<std::vector<double>> rows = {{1, 2, 3}, {0, 0, 4}};
  const std::vector<std::vector<double>> labs = {{0, 0, 1}, {1, 0, 0}};
  const std::vector<double> w = {2, 0.5};
  for (int i = 0; i < 2; ++i) {
    double lse = LogSumExp(rows[i]), l = 0;
    for (int j = 0; j < 3; ++j) l -= (labs[i][j] * (1 - ls) + ls / 3) * (rows[i][j] - lse);
    total += w[i] * l;
  }
  Output loss = Lo::SoftmaxCrossEntropy(s, onehot, logits,
                                        {.weights = Const(s, Doubles({2, 0.5}, {2})),
                                         .reduction = Reduction::kSum,
                                         .label_smoothing = ls});
  EXPECT_EQ(loss.dtype(), kFloat64);
  EXPECT_NEAR(Eval(loss), total, 1e-12);
}

TEST(LossesTest, SigmoidCrossEntropyWithSmoothingAndBroadcastWeights) {
  Graph graph;
  Scope s(graph);
  const std::vector<double> z = {-1, 0.5, 2, 3}, y = {0, 1, 1, 0};
  const double ls = 0.2;
  // Weights [2, 1] broadcast over columns: [[1, 1], [3, 3]].
  const std::vector<double> w = {1, 1, 3, 3};
  std::vector<double> l;
  for (int i = 0; i < 4; ++i) {
    const double t = y[i] * (1 - ls) + 0.5 * ls;
    l.push_back(std::max(z[i], 0.0) - z[i] * t + std::log1p(std::exp(-std::abs(z[i]))));
  }
  Output loss =
      Lo::SigmoidCrossEntropy(s, Const(s, Doubles(y, {2, 2})), Const(s, Doubles(z, {2, 2})),
                              {.weights = Const(s, Doubles({1, 3}, {2, 1})),
                               .reduction = Reduction::kMean,
                               .label_smoothing = ls});
  EXPECT_NEAR(Eval(loss), ByHand(l, w).mean, 1e-12);
}

TEST(LossesTest, RegressionLosses) {
  const std::vector<double> labels = {1, 2, 3, 4}, preds = {1.5, 0, 3.2, 7};
  const std::vector<double> w = {1, 2, 0, 1};
  const double delta = 1.5;
  std::vector<double> se, ae, huber;
  for (int i = 0; i < 4; ++i) {
    const double e = preds[i] - labels[i];
    se.push_back(e * e);
    ae.push_back(std::abs(e));
    huber.push_back(std::abs(e) <= delta ? 0.5 * e * e : delta * (std::abs(e) - 0.5 * delta));
  }
  Graph graph;
  Scope s(graph);
  Output l = Const(s, Doubles(labels, {4}));
  Output p = Const(s, Doubles(preds, {4}));
  Output wt = Const(s, Doubles(w, {4}));
  EXPECT_NEAR(Eval(Lo::MeanSquaredError(s, l, p, {.weights = wt})), ByHand(se, w).nonzero, 1e-12);
  EXPECT_NEAR(Eval(Lo::AbsoluteDifference(s, l, p, {.weights = wt})), ByHand(ae, w).nonzero, 1e-12);
  EXPECT_NEAR(Eval(Lo::HuberLoss(s, l, p, {.weights = wt, .delta = delta})),
              ByHand(huber, w).nonzero, 1e-12);
  // float32 predictions keep float32; labels of another dtype are cast.
  Output p32 = Const(s, Floats({1.5, 0, 3.2, 7}, {4}));
  Output l32 =
      Lo::MeanSquaredError(s, Const(s, Tensor::FromVector(std::vector<int32_t>{1, 2, 3, 4})), p32);
  EXPECT_EQ(l32.dtype(), kFloat32);
  EXPECT_NEAR(Eval(l32), ByHand(se, {1, 1, 1, 1}).mean, 1e-5);
}

// TF's assert_is_compatible_with: labels [n] against predictions [n, 1] are an error in
// every loss (they used to broadcast to an [n, n] loss); compatible unknown dims pass.
TEST(LossesTest, IncompatibleLabelAndPredictionShapesAreRejected) {
  Graph graph;
  Scope s(graph);
  Output flat = Placeholder(s.WithOpName("labels"), kFloat32, Shape{-1});
  Output column = Placeholder(s.WithOpName("predictions"), kFloat32, Shape{-1, 1});
  Output wide = Placeholder(s.WithOpName("logits"), kFloat32, Shape{-1, 3});
  using LossFn = Output (*)(const Scope&, Input, Input, const Lo::LossOptions&);
  const std::vector<std::pair<const char*, LossFn>> losses = {
      {"mean_squared_error", Lo::MeanSquaredError},
      {"absolute_difference", Lo::AbsoluteDifference},
      {"huber_loss", Lo::HuberLoss},
      {"hinge_loss", Lo::HingeLoss},
      {"sigmoid_cross_entropy_loss", Lo::SigmoidCrossEntropy},
      {"softmax_cross_entropy_loss", Lo::SoftmaxCrossEntropy}};
  for (const auto& [name, loss] : losses) {
    try {
      loss(s, flat, name == std::string("softmax_cross_entropy_loss") ? wide : column, {});
      ADD_FAILURE() << name << ": expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("[?]"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("incompatible"), std::string::npos) << e.message();
    }
    // [?, 1] labels against [?, 1] predictions, and [4, 1] against [?, 1], are fine.
    Output ok = Placeholder(s, kFloat32, Shape{4, 1});
    EXPECT_NO_THROW(loss(s, ok, column, {}));
  }
}

TEST(LossesTest, HingeLoss) {
  const std::vector<double> labels = {0, 1, 1, 0}, logits = {-2, 0.3, 1.5, 0.5};
  std::vector<double> l;
  for (int i = 0; i < 4; ++i) l.push_back(std::max(0.0, 1 - (2 * labels[i] - 1) * logits[i]));
  Graph graph;
  Scope s(graph);
  Output loss = Lo::HingeLoss(s, Const(s, Doubles(labels, {4})), Const(s, Doubles(logits, {4})),
                              {.reduction = Reduction::kNone});
  std::vector<double> got = EvalVector(loss);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], l[i], 1e-12);
}

TEST(LossesTest, LogLossAndCosineDistanceAsTf) {
  Graph graph;
  Scope s(graph);
  // TF 1.15: -y log(p + eps) - (1 - y) log(1 - p + eps), eps = 1e-7 by default.
  const std::vector<double> y = {1, 0, 1, 0}, p = {0.9, 0.2, 0.0, 1.0};
  Output per = Lo::LogLoss(s, Const(s, Doubles(y, {4})), Const(s, Doubles(p, {4})),
                           {.reduction = Reduction::kNone});
  std::vector<double> got = EvalVector(per);
  for (int i = 0; i < 4; ++i) {
    const double want = -y[i] * std::log(p[i] + 1e-7) - (1 - y[i]) * std::log(1 - p[i] + 1e-7);
    EXPECT_NEAR(got[i], want, 1e-12) << i;  // finite at p = 0 and 1: the epsilon
  }
  // Unit vectors along axis 1: 1 - cos; the loss keeps the axis as a dim of 1.
  Output labels = Const(s, Doubles({1, 0, 0, 1}, {2, 2}));
  Output preds = Const(s, Doubles({0.6, 0.8, 0.6, 0.8}, {2, 2}));
  Output cos = Lo::CosineDistance(s, labels, preds, 1, {.reduction = Reduction::kNone});
  EXPECT_EQ(cos.shape(), Shape({2, 1}));
  got = EvalVector(cos);
  EXPECT_NEAR(got[0], 0.4, 1e-12);
  EXPECT_NEAR(got[1], 0.2, 1e-12);
  EXPECT_NEAR(EvalVector(Lo::CosineDistance(s, labels, preds, 1))[0], 0.3, 1e-12);
  try {
    Lo::LogLoss(s, Const(s, Doubles(y, {4})), Const(s, Doubles(p, {4})), {.epsilon = -1});
    ADD_FAILURE() << "a negative epsilon must fail";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("epsilon"), std::string::npos) << e.message();
  }
}

// The gradient of each loss with respect to its logits / predictions, weighted, in
// float64, under every reduction that produces a scalar.
TEST(LossesTest, GradientsMatchNumericDifferences) {
  using Fn = std::function<Output(const Scope&, Output x, std::optional<Input> w, Reduction r)>;
  const std::vector<std::pair<const char*, Fn>> losses = {
      {"softmax",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         return Lo::SoftmaxCrossEntropy(s,
                                        Const(s, Doubles({0, 1, 0, 0.5, 0.5, 0, 0, 0, 1}, {3, 3})),
                                        x, {.weights = w, .reduction = r, .label_smoothing = 0.1});
       }},
      {"sparse",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         return Lo::SparseSoftmaxCrossEntropy(
             s, Const(s, Tensor::FromVector(std::vector<int64_t>{1, 0, 2}, {3})), x,
             {.weights = w, .reduction = r});
       }},
      {"sigmoid",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         return Lo::SigmoidCrossEntropy(s, Const(s, Doubles({0, 1, 1, 0, 1, 0, 1, 1, 0}, {3, 3})),
                                        x, {.weights = w, .reduction = r, .label_smoothing = 0.2});
       }},
      {"mse",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         return Lo::MeanSquaredError(s, Const(s, Doubles({0, 1, 2, 3, 4, 5, 6, 7, 8}, {3, 3})), x,
                                     {.weights = w, .reduction = r});
       }},
      {"huber",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         // Labels away from x so |error| stays clear of delta's kink.
         return Lo::HuberLoss(s, Const(s, Doubles({0, 3, -3, 0, 3, 0, -3, 0, 5}, {3, 3})), x,
                              {.weights = w, .reduction = r, .delta = 1.0});
       }},
      {"hinge",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         return Lo::HingeLoss(s, Const(s, Doubles({0, 1, 1, 0, 1, 0, 1, 1, 0}, {3, 3})), x,
                              {.weights = w, .reduction = r});
       }},
      {"log",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         // Probabilities in (0.05, 0.95).
         return Lo::LogLoss(s, Const(s, Doubles({0, 1, 1, 0, 1, 0, 1, 1, 0}, {3, 3})),
                            Add(s, Mul(s, x, 0.5), 0.5), {.weights = w, .reduction = r});
       }},
      {"cosine",
       [](const Scope& s, Output x, std::optional<Input> w, Reduction r) {
         return Lo::CosineDistance(s, Const(s, Doubles({0.6, 0.8, 0, 0, 1, 0, 1, 0, 0}, {3, 3})), x,
                                   1, {.weights = w, .reduction = r});
       }},
  };
  Tensor x = RandomDoubles({3, 3}, 5, -0.9, 0.9);
  for (const auto& entry : losses) {
    const auto& name = entry.first;  // named references: clang 14 cannot capture bindings
    const auto& fn = entry.second;
    for (Reduction r : {Reduction::kSum, Reduction::kMean, Reduction::kSumOverBatchSize,
                        Reduction::kSumByNonzeroWeights}) {
      double err = MaxGradientError(
          [&](const Scope& s, const std::vector<Output>& xs) {
            const bool per_row = std::string(name) == "softmax" || std::string(name) == "sparse";
            Output w = per_row ? Const(s, Doubles({2, 0, 0.5}, {3}))
                               : Const(s, Doubles({1, 0, 3}, {3, 1}));
            return fn(s, xs[0], w, r);
          },
          {x});
      EXPECT_LT(err, 1e-6) << name << " reduction " << static_cast<int>(r);
    }
  }
}

}  // namespace
}  // namespace loom
