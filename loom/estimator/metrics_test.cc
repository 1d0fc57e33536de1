// Metrics: each streamed over several update batches and compared with the value
// computed by hand over all batches; reset by LocalVariablesInitializer.
#include "loom/estimator/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

namespace M = loom::metrics;

// Placeholders for labels, predictions and weights, and a session that streams batches.
struct Harness {
  Graph graph;
  Scope s{graph};
  Output labels, predictions, weights;
  std::unique_ptr<Session> session;
  Operation reset;

  Harness(DType label_dtype, DType prediction_dtype, Shape label_shape = {-1},
          Shape prediction_shape = {-1}) {
    labels = Placeholder(s.WithOpName("labels"), label_dtype, label_shape);
    predictions = Placeholder(s.WithOpName("predictions"), prediction_dtype, prediction_shape);
    weights = Placeholder(s.WithOpName("weights"), kFloat64, Shape::Unknown());
  }
  void Start() {
    reset = LocalVariablesInitializer(s);
    session = std::make_unique<Session>(graph, SessionOptions{.intra_op_threads = 1});
    session->RunTarget(reset);
  }
  // Runs update_op on one batch; returns the update op's output (value after update).
  Tensor Update(const M::Metric& m, Tensor l, Tensor p, Tensor w = Tensor()) {
    FeedList feeds = {{labels, l}, {predictions, p}};
    if (w.defined()) feeds.push_back({weights, w});
    return session->Run(feeds, {Output(m.update_op.node)})[0];
  }
  Tensor Value(const M::Metric& m) { return session->Eval(m.value); }
};

template <typename T>
Tensor Vec(std::vector<T> v) {
  return Tensor::FromVector(v);
}

float Scalar(const Tensor& t) { return t.scalar<float>(); }

TEST(MetricsTest, AccuracyWithWeightsOverThreeBatchesAndReset) {
  Harness h(kInt64, kInt64);
  M::Metric acc = M::Accuracy(h.s, h.labels, h.predictions, {.weights = h.weights});
  EXPECT_EQ(acc.value.dtype(), kFloat32);
  ASSERT_NE(h.graph.FindNode("accuracy/total"), nullptr);
  ASSERT_NE(h.graph.FindNode("accuracy/count"), nullptr);
  EXPECT_TRUE(h.graph.FindNode("accuracy/total")->attrs().GetOr<bool>("local", false));
  EXPECT_TRUE(h.graph.TrainableVariables().empty());
  h.Start();
  EXPECT_EQ(Scalar(h.Value(acc)), 0.0f);  // no data: 0, not NaN
  // Batch 1: correct at 0, 2 (weights 1, 2) of total weight 1+1+2 = 4.
  Tensor u1 =
      h.Update(acc, Vec<int64_t>({1, 2, 3}), Vec<int64_t>({1, 0, 3}), Vec<double>({1, 1, 2}));
  EXPECT_NEAR(Scalar(u1), 3.0 / 4, 1e-6);
  // Batch 2: scalar weight 0.5; correct 1 of 2.
  h.Update(acc, Vec<int64_t>({4, 5}), Vec<int64_t>({4, 0}), Tensor::Scalar<double>(0.5));
  // Batch 3: zero weight masks a wrong entry.
  h.Update(acc, Vec<int64_t>({6, 7}), Vec<int64_t>({6, 0}), Vec<double>({1, 0}));
  EXPECT_NEAR(Scalar(h.Value(acc)), (3 + 0.5 + 1) / (4 + 1 + 1.0), 1e-6);
  EXPECT_NEAR(Scalar(h.Value(acc)), (3 + 0.5 + 1) / (4 + 1 + 1.0), 1e-6);  // idempotent
  h.session->RunTarget(h.reset);
  EXPECT_EQ(Scalar(h.Value(acc)), 0.0f);
  h.Update(acc, Vec<int64_t>({1, 2}), Vec<int64_t>({1, 2}), Tensor::Scalar<double>(1.0));
  EXPECT_EQ(Scalar(h.Value(acc)), 1.0f);
}

TEST(MetricsTest, AccuracyCastsPredictionsToTheLabelsDtype) {
  Graph graph;
  Scope s(graph);
  Output labels = Const(s, Vec<uint8_t>({1, 2, 3, 4}));
  Output classes = Const(s, Vec<int64_t>({1, 2, 0, 4}));
  M::Metric acc = M::Accuracy(s, labels, classes);
  Operation init = LocalVariablesInitializer(s);
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(init);
  session.RunTarget(acc.update_op);
  EXPECT_NEAR(session.Eval(acc.value).scalar<float>(), 0.75, 1e-6);
}

TEST(MetricsTest, MeanAndRegressionErrors) {
  Harness h(kFloat32, kFloat32);
  M::Metric mean = M::Mean(h.s, h.predictions, {.weights = h.weights});
  M::Metric mse = M::MeanSquaredError(h.s, h.labels, h.predictions, {.weights = h.weights});
  M::Metric rmse = M::RootMeanSquaredError(h.s, h.labels, h.predictions, {.weights = h.weights});
  M::Metric mae = M::MeanAbsoluteError(h.s, h.labels, h.predictions, {.weights = h.weights});
  h.Start();
  const std::vector<std::vector<float>> ls = {{1, 2, 3}, {0, -1}, {4}};
  const std::vector<std::vector<float>> ps = {{1.5, 2, 1}, {1, -1}, {0}};
  const std::vector<std::vector<double>> ws = {{1, 2, 1}, {0.5, 3}, {2}};
  double sum_w = 0, sum_p = 0, sum_se = 0, sum_ae = 0;
  for (int b = 0; b < 3; ++b) {
    for (size_t i = 0; i < ls[b].size(); ++i) {
      const double w = ws[b][i], e = ps[b][i] - ls[b][i];
      sum_w += w;
      sum_p += w * ps[b][i];
      sum_se += w * e * e;
      sum_ae += w * std::abs(e);
    }
    for (const M::Metric* m : {&mean, &mse, &rmse, &mae}) {
      h.Update(*m, Vec<float>(ls[b]), Vec<float>(ps[b]), Vec<double>(ws[b]));
    }
  }
  EXPECT_NEAR(Scalar(h.Value(mean)), sum_p / sum_w, 1e-6);
  EXPECT_NEAR(Scalar(h.Value(mse)), sum_se / sum_w, 1e-6);
  EXPECT_NEAR(Scalar(h.Value(rmse)), std::sqrt(sum_se / sum_w), 1e-6);
  EXPECT_NEAR(Scalar(h.Value(mae)), sum_ae / sum_w, 1e-6);
}

// TF's remove_squeezable_dimensions: labels [n] against predictions [n, 1] squeeze the
// trailing 1 and compute the element-wise error (not an [n, n] broadcast); weights [n, 1]
// follow; shapes that differ otherwise are an error naming the metric.
TEST(MetricsTest, TrailingOneIsSqueezedAndOtherShapeMismatchesAreRejected) {
  Harness h(kFloat32, kFloat32, Shape{-1}, Shape{-1, 1});
  Output w = Placeholder(h.s.WithOpName("column_weights"), kFloat64, Shape{-1, 1});
  M::Metric rmse = M::RootMeanSquaredError(h.s, h.labels, h.predictions);
  M::Metric mae = M::MeanAbsoluteError(h.s, h.labels, h.predictions, {.weights = w});
  M::Metric acc = M::Accuracy(h.s, h.labels, h.predictions);
  M::Metric precision = M::Precision(h.s, h.labels, h.predictions);
  h.Start();
  Tensor l = Vec<float>({1, 2, 3}), p = Tensor::FromVector<float>({1, 2, 5}, {3, 1});
  EXPECT_NEAR(Scalar(h.Update(rmse, l, p)), std::sqrt(4.0 / 3), 1e-6);
  Tensor wt = Tensor::FromVector<double>({1, 1, 2}, {3, 1});
  Tensor mae_value =
      h.session->Run({{h.labels, l}, {h.predictions, p}, {w, wt}}, {Output(mae.update_op.node)})[0];
  EXPECT_NEAR(Scalar(mae_value), 4.0 / 4, 1e-6);
  EXPECT_NEAR(Scalar(h.Update(acc, l, p)), 2.0 / 3, 1e-6);
  h.Update(precision, Vec<float>({1, 0, 1}), Tensor::FromVector<float>({1, 1, 1}, {3, 1}));
  EXPECT_NEAR(Scalar(h.Value(precision)), 2.0 / 3, 1e-6);
  Output wide = Placeholder(h.s.WithOpName("wide"), kFloat32, Shape{-1, 2});
  for (auto make : {+[](const Scope&s, Output l, Output p) { return M::MeanSquaredError(s, l, p); },
                    +[](const Scope&s, Output l, Output p) { return M::Accuracy(s, l, p); },
                    +[](const Scope&s, Output l, Output p) { return M::Recall(s, l, p); },
                    +[](const Scope&s, Output l, Output p) { return M::AUC(s, l, p); }}) {
    try {
      make(h.s, h.labels, wide);
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("incompatible shapes"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("[?,2]"), std::string::npos) << e.message();
    }
  }
}

TEST(MetricsTest, PrecisionAndRecall) {
  Harness h(kInt64, kBool);
  M::Metric precision = M::Precision(h.s, h.labels, h.predictions, {.weights = h.weights});
  M::Metric recall = M::Recall(h.s, h.labels, h.predictions, {.weights = h.weights});
  h.Start();
  EXPECT_EQ(Scalar(h.Value(precision)), 0.0f);
  const std::vector<std::vector<int64_t>> ls = {{1, 0, 1, 1}, {0, 1}, {1, 0, 0}};
  const std::vector<std::vector<bool>> ps = {
      {true, true, false, true}, {false, true}, {true, true, false}};
  const std::vector<std::vector<double>> ws = {{1, 2, 1, 1}, {1, 3}, {0.5, 0.5, 9}};
  double tp = 0, fp = 0, fn = 0;
  for (int b = 0; b < 3; ++b) {
    std::vector<uint8_t> bytes;
    for (size_t i = 0; i < ls[b].size(); ++i) {
      const double w = ws[b][i];
      if (ls[b][i] && ps[b][i]) tp += w;
      if (!ls[b][i] && ps[b][i]) fp += w;
      if (ls[b][i] && !ps[b][i]) fn += w;
    }
    Tensor p(kBool, Shape{static_cast<int64_t>(ps[b].size())});
    for (size_t i = 0; i < ps[b].size(); ++i) p.data<bool>()[i] = ps[b][i];
    h.Update(precision, Vec<int64_t>(ls[b]), p, Vec<double>(ws[b]));
    h.Update(recall, Vec<int64_t>(ls[b]), p, Vec<double>(ws[b]));
  }
  EXPECT_NEAR(Scalar(h.Value(precision)), tp / (tp + fp), 1e-6);
  EXPECT_NEAR(Scalar(h.Value(recall)), tp / (tp + fn), 1e-6);
}

// TF 1.15's AUC by direct computation: counts at the same thresholds, trapezoids.
double DirectAuc(const std::vector<int>& labels, const std::vector<float>& preds,
                 const std::vector<double>& weights, int n, bool roc) {
  std::vector<double> thr = {-1e-7};
  for (int i = 0; i < n - 2; ++i) thr.push_back((i + 1) * 1.0 / (n - 1));
  thr.push_back(1 + 1e-7);
  std::vector<double> x(n), y(n);
  const double eps = 1e-6;
  for (int t = 0; t < n; ++t) {
    double tp = 0, fp = 0, tn = 0, fn = 0;
    for (size_t i = 0; i < preds.size(); ++i) {
      const bool pos = preds[i] > static_cast<float>(thr[t]);
      (labels[i] ? (pos ? tp : fn) : (pos ? fp : tn)) += weights[i];
    }
    const double rec = (tp + eps) / (tp + fn + eps);
    if (roc) {
      x[t] = fp / (fp + tn + eps);
      y[t] = rec;
    } else {
      x[t] = rec;
      y[t] = (tp + eps) / (tp + fp + eps);
    }
  }
  double auc = 0;
  for (int t = 0; t + 1 < n; ++t) auc += (x[t] - x[t + 1]) * (y[t] + y[t + 1]) / 2;
  return auc;
}

TEST(MetricsTest, AucRocAndPrMatchADirectComputation) {
  Harness h(kInt32, kFloat32);
  M::Metric roc = M::AUC(h.s, h.labels, h.predictions, {.weights = h.weights});
  M::Metric pr =
      M::AUC(h.s, h.labels, h.predictions, {.curve = M::Curve::kPR, .weights = h.weights});
  M::Metric roc10 =
      M::AUC(h.s, h.labels, h.predictions, {.num_thresholds = 10, .weights = h.weights});
  EXPECT_NE(h.graph.FindNode("auc_1/confusion_counts"), nullptr);
  h.Start();
  std::vector<int> all_l;
  std::vector<float> all_p;
  std::vector<double> all_w;
  uint64_t state = 12345;
  auto uniform = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  for (int b = 0; b < 3; ++b) {
    std::vector<int32_t> l;
    std::vector<float> p;
    std::vector<double> w;
    for (int i = 0; i < 50; ++i) {
      const int label = uniform() < 0.4;
      // Informative but overlapping scores, plus exact 0 and 1 and a threshold value.
      float score = static_cast<float>(std::clamp(0.3 * label + 0.7 * uniform(), 0.0, 1.0));
      if (i == 0) score = 0.0f;
      if (i == 1) score = 1.0f;
      if (i == 2) score = static_cast<float>(100.0 / 199);
      l.push_back(label);
      p.push_back(score);
      w.push_back(b == 1 ? 2.0 : (i % 7 == 0 ? 0.0 : 1.0));
    }
    all_l.insert(all_l.end(), l.begin(), l.end());
    all_p.insert(all_p.end(), p.begin(), p.end());
    all_w.insert(all_w.end(), w.begin(), w.end());
    for (const M::Metric* m : {&roc, &pr, &roc10}) h.Update(*m, Vec(l), Vec(p), Vec(w));
  }
  const double expected_roc = DirectAuc(all_l, all_p, all_w, 200, true);
  EXPECT_GT(expected_roc, 0.6);
  EXPECT_NEAR(Scalar(h.Value(roc)), expected_roc, 1e-5);
  EXPECT_NEAR(Scalar(h.Value(pr)), DirectAuc(all_l, all_p, all_w, 200, false), 1e-5);
  EXPECT_NEAR(Scalar(h.Value(roc10)), DirectAuc(all_l, all_p, all_w, 10, true), 1e-5);
  // Predictions outside [0, 1] are an error naming the entry.
  try {
    h.Update(roc, Vec<int32_t>({1}), Vec<float>({1.5f}), Vec<double>({1}));
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[0, 1]"), std::string::npos) << e.what();
  }
}

TEST(MetricsTest, PrecisionAndRecallAtThresholds) {
  Harness h(kBool, kFloat64);
  const std::vector<double> thresholds = {0.0, 0.3, 0.5, 0.9};
  M::Metric p = M::PrecisionAtThresholds(h.s, h.labels, h.predictions, thresholds);
  M::Metric r = M::RecallAtThresholds(h.s, h.labels, h.predictions, thresholds);
  EXPECT_EQ(p.value.shape(), Shape({4}));
  h.Start();
  const std::vector<std::vector<bool>> ls = {{true, false, true}, {false, true}};
  const std::vector<std::vector<double>> ps = {{0.95, 0.4, 0.3}, {0.6, 0.1}};
  std::vector<double> tp(4), fp(4), fn(4);
  for (int b = 0; b < 2; ++b) {
    Tensor l(kBool, Shape{static_cast<int64_t>(ls[b].size())});
    for (size_t i = 0; i < ls[b].size(); ++i) {
      l.data<bool>()[i] = ls[b][i];
      for (int t = 0; t < 4; ++t) {
        const bool pos = static_cast<float>(ps[b][i]) > static_cast<float>(thresholds[t]);
        if (ls[b][i] && pos) tp[t] += 1;
        if (!ls[b][i] && pos) fp[t] += 1;
        if (ls[b][i] && !pos) fn[t] += 1;
      }
    }
    h.Update(p, l, Vec(ps[b]));
    h.Update(r, l, Vec(ps[b]));
  }
  Tensor pv = h.Value(p), rv = h.Value(r);
  for (int t = 0; t < 4; ++t) {
    EXPECT_NEAR(pv.data<float>()[t], tp[t] / (tp[t] + fp[t] + 1e-7), 1e-6) << t;
    EXPECT_NEAR(rv.data<float>()[t], tp[t] / (tp[t] + fn[t] + 1e-7), 1e-6) << t;
  }
}

TEST(MetricsTest, TopKAccuracyCountsTiesAsIn) {
  Harness h(kInt64, kFloat32, {-1}, {-1, 4});
  M::Metric top2 = M::TopKAccuracy(h.s, h.labels, h.predictions, 2);
  M::Metric top1 = M::TopKAccuracy(h.s, h.labels, h.predictions, 1);
  h.Start();
  // Rows: target 2 is 2nd (in top 2); target 0 is 3rd; target 3 ties for 2nd with class 1
  // (in); target 1 has a NaN score (miss); target 0 is 1st.
  Tensor p1 = Tensor::FromVector(
      std::vector<float>{0.1f, 0.5f, 0.3f, 0.1f, 0.1f, 0.5f, 0.3f, 0.1f, 0.5f, 0.2f, 0.1f, 0.2f},
      {3, 4});
  Tensor p2 =
      Tensor::FromVector(std::vector<float>{0.1f, NAN, 0.3f, 0.1f, 0.9f, 0.5f, 0.3f, 0.1f}, {2, 4});
  h.Update(top2, Vec<int64_t>({2, 0, 3}), p1);
  h.Update(top2, Vec<int64_t>({1, 0}), p2);
  h.Update(top1, Vec<int64_t>({2, 0, 3}), p1);
  h.Update(top1, Vec<int64_t>({1, 0}), p2);
  EXPECT_NEAR(Scalar(h.Value(top2)), 3.0 / 5, 1e-6);
  EXPECT_NEAR(Scalar(h.Value(top1)), 1.0 / 5, 1e-6);
}

TEST(MetricsTest, ConfusionMatrixPerClassAccuracyAndMeanIoU) {
  Harness h(kInt32, kInt64);
  const int64_t c = 4;
  M::Metric cm = M::ConfusionMatrix(h.s, h.labels, h.predictions, c, {.weights = h.weights});
  M::Metric per_class =
      M::MeanPerClassAccuracy(h.s, h.labels, h.predictions, c, {.weights = h.weights});
  M::Metric iou = M::MeanIoU(h.s, h.labels, h.predictions, c, {.weights = h.weights});
  h.Start();
  // Class 3 never appears in labels or predictions.
  const std::vector<std::vector<int32_t>> ls = {{0, 1, 2, 2}, {1, 0}, {2}};
  const std::vector<std::vector<int64_t>> ps = {{0, 2, 2, 1}, {1, 0}, {0}};
  const std::vector<std::vector<double>> ws = {{1, 2, 1, 1}, {1, 0.5}, {3}};
  std::vector<std::vector<double>> expected(c, std::vector<double>(c, 0.0));
  for (int b = 0; b < 3; ++b) {
    for (size_t i = 0; i < ls[b].size(); ++i) expected[ls[b][i]][ps[b][i]] += ws[b][i];
    for (const M::Metric* m : {&cm, &per_class, &iou}) {
      h.Update(*m, Vec(ls[b]), Vec(ps[b]), Vec(ws[b]));
    }
  }
  Tensor got = h.Value(cm);
  ASSERT_EQ(got.dtype(), kFloat64);
  for (int i = 0; i < c; ++i)
    for (int j = 0; j < c; ++j)
      EXPECT_EQ(got.data<double>()[i * c + j], expected[i][j]) << i << "," << j;
  double acc_sum = 0, iou_sum = 0, valid = 0;
  for (int i = 0; i < c; ++i) {
    double row = 0, col = 0;
    for (int j = 0; j < c; ++j) {
      row += expected[i][j];
      col += expected[j][i];
    }
    acc_sum += row > 0 ? expected[i][i] / row : 0;
    const double denom = row + col - expected[i][i];
    if (denom != 0) {
      iou_sum += expected[i][i] / denom;
      valid += 1;
    }
  }
  EXPECT_NEAR(Scalar(h.Value(per_class)), acc_sum / c, 1e-6);  // TF 1.15 averages all classes
  EXPECT_NEAR(Scalar(h.Value(iou)), iou_sum / valid, 1e-6);
  try {
    h.Update(cm, Vec<int32_t>({4}), Vec<int64_t>({0}), Vec<double>({1}));
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
