// Heads: losses, predictions and metrics against values computed by hand.
#include "loom/estimator/head.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/testing/values.h"

namespace loom {
namespace {

using testing::Values;

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double SigmoidXent(double z, double x) {
  return std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x)));
}

// Runs every metric's update once, then returns the values.
std::map<std::string, double> RunMetrics(Session& session, const Scope& s,
                                         const std::map<std::string, MetricOps>& ops) {
  session.RunTarget(LocalVariablesInitializer(s));
  std::vector<Operation> updates;
  for (const auto& [name, m] : ops) updates.push_back(m.update_op);
  session.Run({}, {}, updates);
  std::map<std::string, double> out;
  for (const auto& [name, m] : ops) out[name] = session.Eval(m.value).scalar<float>();
  return out;
}

TEST(BinaryClassHeadTest, LossPredictionsAndMetrics) {
  Graph graph;
  Scope s(graph);
  const std::vector<float> x = {2.0f, -1.0f, 0.5f, -3.0f};
  const std::vector<int64_t> y = {1, 0, 0, 0};  // the string labels below, as ids
  Output logits = Const(s, Tensor::FromVector(x, Shape{4, 1}));
  auto head = BinaryClassHead({.label_vocabulary = {"neg", "pos"}});
  EXPECT_EQ(head->logits_dimension(), 1);
  Output string_labels = Const(s, Tensor::FromVector<std::string>({"pos", "neg", "neg", "neg"}));
  EstimatorSpec spec = head->CreateEstimatorSpec(s, {}, Mode::kEval, logits, string_labels, {});
  Session session(graph);

  double expected_loss = 0;
  for (int i = 0; i < 4; ++i) expected_loss += SigmoidXent(y[i], x[i]) / 4;
  EXPECT_NEAR(session.Eval(spec.loss).scalar<float>(), expected_loss, 1e-5);

  auto logistic = Values<float>(session.Eval(spec.predictions.at("logistic")));
  auto probabilities = Values<float>(session.Eval(spec.predictions.at("probabilities")));
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(logistic[i], Sigmoid(x[i]), 1e-6);
    EXPECT_NEAR(probabilities[2 * i + 1], Sigmoid(x[i]), 1e-6);
    EXPECT_NEAR(probabilities[2 * i], 1 - Sigmoid(x[i]), 1e-6);
  }
  EXPECT_EQ(Values<int64_t>(session.Eval(spec.predictions.at("class_ids"))),
            (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(Values<std::string>(session.Eval(spec.predictions.at("classes"))),
            (std::vector<std::string>{"pos", "neg", "pos", "neg"}));

  auto m = RunMetrics(session, s, spec.eval_metric_ops);
  EXPECT_NEAR(m["accuracy"], 0.75, 1e-6);
  EXPECT_NEAR(m["accuracy_baseline"], 0.75, 1e-6);  // 3 of 4 labels are 0
  EXPECT_NEAR(m["precision"], 0.5, 1e-6);           // predicted 1 for examples 0 and 2
  EXPECT_NEAR(m["recall"], 1.0, 1e-6);
  EXPECT_NEAR(m["auc"], 1.0, 1e-3);  // the positive has the top score
  EXPECT_NEAR(m["label/mean"], 0.25, 1e-6);
  EXPECT_NEAR(m["average_loss"], expected_loss, 1e-5);
  double pm = 0;
  for (float v : x) pm += Sigmoid(v) / 4;
  EXPECT_NEAR(m["prediction/mean"], pm, 1e-6);

  // An unknown label string fails naming the head.
  Graph g2;
  Scope s2(g2);
  EstimatorSpec bad = head->CreateEstimatorSpec(
      s2, {}, Mode::kEval, Const(s2, Tensor::FromVector<float>({1}, Shape{1, 1})),
      Const(s2, Tensor::FromVector<std::string>({"maybe"})), {});
  Session session2(g2);
  try {
    session2.Eval(bad.loss);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("binary_classification_head"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'maybe'"), std::string::npos) << e.what();
  }
}

TEST(BinaryClassHeadTest, WeightColumnWeightsTheLoss) {
  Graph graph;
  Scope s(graph);
  Output logits = Const(s, Tensor::FromVector<float>({1, -2}, Shape{2, 1}));
  Output labels = Const(s, Tensor::FromVector<int32_t>({0, 0}));
  Features features = {{"w", Const(s, Tensor::FromVector<float>({3, 1}))}};
  auto head = BinaryClassHead({.weight_column = "w", .loss_reduction = losses::Reduction::kSum});
  HeadLoss loss = head->CreateLoss(s, features, logits, labels);
  Session session(graph);
  EXPECT_NEAR(session.Eval(loss.training_loss).scalar<float>(),
              3 * SigmoidXent(0, 1) + SigmoidXent(0, -2), 1e-5);
  try {
    head->CreateLoss(s, {}, logits, labels);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weight_column 'w'"), std::string::npos) << e.what();
  }
}

TEST(MultiClassHeadTest, SoftmaxLossAndArgMax) {
  Graph graph;
  Scope s(graph);
  const std::vector<float> x = {1, 2, 3, 3, 0, 0};
  Output logits = Const(s, Tensor::FromVector(x, Shape{2, 3}));
  Output labels = Const(s, Tensor::FromVector<int64_t>({2, 1}, Shape{2, 1}));
  auto head = MultiClassHead({.n_classes = 3});
  EstimatorSpec spec = head->CreateEstimatorSpec(s, {}, Mode::kEval, logits, labels, {});
  Session session(graph);
  auto xent = [](std::vector<double> l, int label) {
    double m = *std::max_element(l.begin(), l.end()), z = 0;
    for (double v : l) z += std::exp(v - m);
    return -(l[label] - m - std::log(z));
  };
  double expected = (xent({1, 2, 3}, 2) + xent({3, 0, 0}, 1)) / 2;
  EXPECT_NEAR(session.Eval(spec.loss).scalar<float>(), expected, 1e-5);
  EXPECT_EQ(Values<int64_t>(session.Eval(spec.predictions.at("class_ids"))),
            (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(Values<std::string>(session.Eval(spec.predictions.at("classes"))),
            (std::vector<std::string>{"2", "0"}));
  auto m = RunMetrics(session, s, spec.eval_metric_ops);
  EXPECT_NEAR(m["accuracy"], 0.5, 1e-6);
  EXPECT_NEAR(m["average_loss"], expected, 1e-5);

  // A label outside [0, n_classes) fails at run time; a float label at construction.
  Output bad = Const(s, Tensor::FromVector<int64_t>({2, 7}));
  HeadLoss bad_loss = head->CreateLoss(s, {}, logits, bad);
  EXPECT_THROW(session.Eval(bad_loss.training_loss), Error);
  try {
    head->CreateLoss(s, {}, logits, Const(s, Tensor::FromVector<float>({1, 2})));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("multi_class_head"), std::string::npos) << e.what();
  }
  EXPECT_THROW(MultiClassHead({.n_classes = 2}), Error);
}

TEST(RegressionHeadTest, SquaredErrorAndMeans) {
  Graph graph;
  Scope s(graph);
  Output logits = Const(s, Tensor::FromVector<float>({1, 2, 4}, Shape{3, 1}));
  Output labels = Const(s, Tensor::FromVector<double>({0, 2, 1}));
  auto head = RegressionHead();
  EstimatorSpec spec = head->CreateEstimatorSpec(s, {}, Mode::kEval, logits, labels, {});
  Session session(graph);
  EXPECT_NEAR(session.Eval(spec.loss).scalar<float>(), (1 + 0 + 9) / 3.0, 1e-5);
  auto m = RunMetrics(session, s, spec.eval_metric_ops);
  EXPECT_NEAR(m["average_loss"], 10 / 3.0, 1e-5);
  EXPECT_NEAR(m["label/mean"], 1.0, 1e-6);
  EXPECT_NEAR(m["prediction/mean"], 7 / 3.0, 1e-6);

  EstimatorSpec predict = head->CreateEstimatorSpec(s, {}, Mode::kPredict, logits, Output(), {});
  EXPECT_FALSE(predict.loss.valid());
  EXPECT_EQ(Values<float>(session.Eval(predict.predictions.at("predictions"))),
            (std::vector<float>{1, 2, 4}));
  EXPECT_TRUE(predict.export_outputs.count("regression"));
  try {
    head->CreateEstimatorSpec(s, {}, Mode::kTrain, logits, Output(), {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("need labels"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
