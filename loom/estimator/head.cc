// Binary, multi-class and regression heads.
#include "loom/estimator/head.h"

#include "loom/base/strcat.h"
#include "loom/estimator/feature_column_ops.h"
#include "loom/estimator/metrics.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"

namespace loom {
namespace {

std::optional<Input> OptionalWeights(const Output& w) {
  if (!w.valid()) return std::nullopt;
  return Input(w);
}

metrics::MetricOptions Weighted(const Output& w, const std::string& name = "") {
  metrics::MetricOptions options;
  options.weights = OptionalWeights(w);
  options.name = name;
  return options;
}

// Checks logits are [batch, width].
void CheckLogits(const std::string& head, const Output& logits, int64_t width) {
  if (!logits.valid()) throw InvalidArgument(head, ": logits are missing");
  if (!IsFloating(logits.dtype())) {
    throw InvalidArgument(head, ": logits must be float32 or float64, got ",
                          DTypeName(logits.dtype()));
  }
  const Shape& s = logits.shape();
  if (s.rank_known() && (s.rank() != 2 || (s.dim(1) >= 0 && s.dim(1) != width))) {
    throw InvalidArgument(head, ": logits must be [batch, ", width, "], got shape ", s);
  }
}

// Labels [batch] or [batch, width] reshaped to [batch, width]; throws naming the head.
Output LabelsAsMatrix(const Scope& s, const std::string& head, Output labels, int64_t width) {
  const Shape& shape = labels.shape();
  if (shape.rank_known()) {
    bool ok = (shape.rank() == 1 && width == 1) ||
              (shape.rank() == 2 && (shape.dim(1) < 0 || shape.dim(1) == width));
    if (!ok) {
      throw InvalidArgument(head, ": labels must be [batch]", width == 1 ? " or [batch, 1]" : "",
                            width == 1 ? "" : StrCat(" [batch, ", width, "]"), ", got shape ",
                            shape);
    }
  }
  return Reshape(s, labels, std::vector<int64_t>{-1, width});
}

void RequireLabels(const std::string& head, const Output& labels) {
  if (!labels.valid()) {
    throw InvalidArgument(head,
                          ": training and evaluation need labels, but the input function "
                          "returned none (name a component \"label\")");
  }
}

// Class-id labels: looked up in the vocabulary, or integers cast to int64.
Output ClassIdLabels(const Scope& s, const std::string& head, Output labels,
                     const std::vector<std::string>& vocabulary) {
  if (!vocabulary.empty()) {
    if (labels.dtype() != kString) {
      throw InvalidArgument(head, ": label_vocabulary is set, so labels must be strings; got ",
                            DTypeName(labels.dtype()));
    }
    return feature_column::VocabularyLookup(s, labels, vocabulary,
                                            {.error_context = head + ": label"});
  }
  if (labels.dtype() == kString) {
    throw InvalidArgument(head, ": labels are strings; set label_vocabulary to map them to ids");
  }
  return labels;
}

Output ExampleWeights(const Scope& s, const std::string& head, const Features& features,
                      const std::string& weight_column) {
  if (weight_column.empty()) return Output();
  auto it = features.find(weight_column);
  if (it == features.end()) {
    throw InvalidArgument(head, ": weight_column '", weight_column,
                          "' is not among the input's features");
  }
  Output w = it->second;
  if (w.dtype() == kString) {
    throw InvalidArgument(head, ": weight_column '", weight_column, "' is a string feature");
  }
  return Reshape(s, Cast(s, w, kFloat32), std::vector<int64_t>{-1, 1});
}

// The binary and multi-class heads' signatures (TF's _classification_output): the default
// serving signature and "classification" classify, "predict" returns every prediction.
std::map<std::string, ExportOutput> ClassificationExportOutputs(const Predictions& p) {
  ExportOutput classification = ClassificationOutput(p.at("probabilities"), p.at("classes"));
  return {{std::string(kDefaultServingSignature), classification},
          {"classification", classification},
          {"predict", PredictOutput(p)}};
}

// ---- binary ---------------------------------------------------------------------------------

class BinaryClassHeadImpl : public Head {
 public:
  explicit BinaryClassHeadImpl(BinaryClassHeadOptions o) : o_(std::move(o)) {
    if (!o_.label_vocabulary.empty() && o_.label_vocabulary.size() != 2) {
      throw InvalidArgument(name(), ": label_vocabulary needs 2 entries, got ",
                            o_.label_vocabulary.size());
    }
  }
  int64_t logits_dimension() const override { return 1; }
  std::string name() const override { return "binary_classification_head"; }

  Predictions CreatePredictions(const Scope& s, Output logits) const override {
    CheckLogits(name(), logits, 1);
    Output logistic = Sigmoid(s.WithOpName("logistic"), logits);
    Output probabilities =
        Concat(s.WithOpName("probabilities"), {Sub(s, 1.0f, logistic), logistic}, 1);
    Output class_ids = Cast(s, Greater(s, logits, 0.0f), kInt64);
    return {{"logits", logits},
            {"logistic", logistic},
            {"probabilities", probabilities},
            {"class_ids", class_ids},
            {"classes", feature_column::IdsToStrings(s, class_ids, o_.label_vocabulary)}};
  }

  HeadLoss CreateLoss(const Scope& s, const Features& features, Output logits,
                      Output labels) const override {
    CheckLogits(name(), logits, 1);
    RequireLabels(name(), labels);
    Output ids = ClassIdLabels(s, name(), labels, o_.label_vocabulary);
    if (ids.dtype() == kBool) ids = Cast(s, ids, kInt64);
    // TF's _assert_range: 0 <= label <= 1 at run time (a label 5 or -1 would otherwise
    // train to a negative loss).
    ids = feature_column::CheckLabelRange(s, ids, 1, /*exclusive=*/false, name());
    Output y = Cast(s, LabelsAsMatrix(s, name(), ids, 1), logits.dtype());
    Output unreduced =
        losses::SigmoidCrossEntropy(s, y, logits, {.reduction = losses::Reduction::kNone});
    Output w = ExampleWeights(s, name(), features, o_.weight_column);
    Output loss = losses::ComputeWeightedLoss(s, unreduced, OptionalWeights(w), o_.loss_reduction);
    return {loss, unreduced, w, y};
  }

  std::map<std::string, MetricOps> CreateEvalMetrics(const Scope& s, const Predictions& p,
                                                     const HeadLoss& loss) const override {
    const Output& y = loss.labels;
    const Output& w = loss.weights;
    metrics::Metric label_mean = metrics::Mean(s, y, Weighted(w, "label/mean"));
    MetricOps baseline(Maximum(s, label_mean.value, Sub(s, 1.0f, label_mean.value)),
                       label_mean.update_op);
    return {
        {"accuracy", metrics::Accuracy(s, y, p.at("class_ids"), Weighted(w))},
        {"accuracy_baseline", baseline},
        {"auc", metrics::AUC(s, y, p.at("logistic"), {.weights = OptionalWeights(w)})},
        {"auc_precision_recall", metrics::AUC(s, y, p.at("logistic"),
                                              {.curve = metrics::Curve::kPR,
                                               .weights = OptionalWeights(w),
                                               .name = "auc_precision_recall"})},
        {"precision", metrics::Precision(s, y, p.at("class_ids"), Weighted(w))},
        {"recall", metrics::Recall(s, y, p.at("class_ids"), Weighted(w))},
        {"average_loss", metrics::Mean(s, loss.unreduced_loss, Weighted(w, "average_loss"))},
        {"label/mean", label_mean},
        {"prediction/mean", metrics::Mean(s, p.at("logistic"), Weighted(w, "prediction/mean"))},
    };
  }

  std::map<std::string, ExportOutput> CreateExportOutputs(const Predictions& p) const override {
    return ClassificationExportOutputs(p);
  }

 private:
  BinaryClassHeadOptions o_;
};

// ---- multi-class ----------------------------------------------------------------------------

class MultiClassHeadImpl : public Head {
 public:
  explicit MultiClassHeadImpl(MultiClassHeadOptions o) : o_(std::move(o)) {
    if (o_.n_classes <= 2) {
      throw InvalidArgument(name(), ": n_classes must be > 2 (use BinaryClassHead for two), got ",
                            o_.n_classes);
    }
    if (!o_.label_vocabulary.empty() &&
        static_cast<int64_t>(o_.label_vocabulary.size()) != o_.n_classes) {
      throw InvalidArgument(name(), ": label_vocabulary has ", o_.label_vocabulary.size(),
                            " entries but n_classes is ", o_.n_classes);
    }
  }
  int64_t logits_dimension() const override { return o_.n_classes; }
  std::string name() const override { return "multi_class_head"; }

  Predictions CreatePredictions(const Scope& s, Output logits) const override {
    CheckLogits(name(), logits, o_.n_classes);
    Output class_ids = ExpandDims(s.WithOpName("class_ids"), ArgMax(s, logits, 1), 1);
    return {{"logits", logits},
            {"probabilities", Softmax(s.WithOpName("probabilities"), logits)},
            {"class_ids", class_ids},
            {"classes", feature_column::IdsToStrings(s, class_ids, o_.label_vocabulary)}};
  }

  HeadLoss CreateLoss(const Scope& s, const Features& features, Output logits,
                      Output labels) const override {
    CheckLogits(name(), logits, o_.n_classes);
    RequireLabels(name(), labels);
    Output ids = ClassIdLabels(s, name(), labels, o_.label_vocabulary);
    if (ids.dtype() != kInt32 && ids.dtype() != kInt64) {
      throw InvalidArgument(name(), ": labels must be integer class ids (int32 or int64), got ",
                            DTypeName(ids.dtype()));
    }
    Output y =
        Reshape(s, Cast(s, LabelsAsMatrix(s, name(), ids, 1), kInt64), std::vector<int64_t>{-1});
    Output unreduced = ExpandDims(
        s, losses::SparseSoftmaxCrossEntropy(s, y, logits, {.reduction = losses::Reduction::kNone}),
        1);
    Output w = ExampleWeights(s, name(), features, o_.weight_column);
    Output loss = losses::ComputeWeightedLoss(s, unreduced, OptionalWeights(w), o_.loss_reduction);
    return {loss, unreduced, w, y};
  }

  std::map<std::string, MetricOps> CreateEvalMetrics(const Scope& s, const Predictions& p,
                                                     const HeadLoss& loss) const override {
    Output w = loss.weights.valid() ? Reshape(s, loss.weights, std::vector<int64_t>{-1}) : Output();
    Output predicted = Reshape(s, p.at("class_ids"), std::vector<int64_t>{-1});
    return {
        {"accuracy", metrics::Accuracy(s, loss.labels, predicted, Weighted(w))},
        {"average_loss",
         metrics::Mean(s, loss.unreduced_loss, Weighted(loss.weights, "average_loss"))},
    };
  }

  std::map<std::string, ExportOutput> CreateExportOutputs(const Predictions& p) const override {
    return ClassificationExportOutputs(p);
  }

 private:
  MultiClassHeadOptions o_;
};

// ---- regression -----------------------------------------------------------------------------

class RegressionHeadImpl : public Head {
 public:
  explicit RegressionHeadImpl(RegressionHeadOptions o) : o_(std::move(o)) {
    if (o_.label_dimension < 1) {
      throw InvalidArgument(name(), ": label_dimension must be >= 1, got ", o_.label_dimension);
    }
  }
  int64_t logits_dimension() const override { return o_.label_dimension; }
  std::string name() const override { return "regression_head"; }

  Predictions CreatePredictions(const Scope& s, Output logits) const override {
    CheckLogits(name(), logits, o_.label_dimension);
    return {{"predictions", Identity(s.WithOpName("predictions"), logits)}};
  }

  HeadLoss CreateLoss(const Scope& s, const Features& features, Output logits,
                      Output labels) const override {
    CheckLogits(name(), logits, o_.label_dimension);
    RequireLabels(name(), labels);
    if (labels.dtype() == kString) {
      throw InvalidArgument(name(), ": labels must be numeric, got string");
    }
    Output y = Cast(s, LabelsAsMatrix(s, name(), labels, o_.label_dimension), logits.dtype());
    Output unreduced =
        losses::MeanSquaredError(s, y, logits, {.reduction = losses::Reduction::kNone});
    Output w = ExampleWeights(s, name(), features, o_.weight_column);
    Output loss = losses::ComputeWeightedLoss(s, unreduced, OptionalWeights(w), o_.loss_reduction);
    return {loss, unreduced, w, y};
  }

  std::map<std::string, MetricOps> CreateEvalMetrics(const Scope& s, const Predictions& p,
                                                     const HeadLoss& loss) const override {
    const Output& w = loss.weights;
    return {
        {"average_loss", metrics::Mean(s, loss.unreduced_loss, Weighted(w, "average_loss"))},
        {"label/mean", metrics::Mean(s, loss.labels, Weighted(w, "label/mean"))},
        {"prediction/mean", metrics::Mean(s, p.at("predictions"), Weighted(w, "prediction/mean"))},
    };
  }

  std::map<std::string, ExportOutput> CreateExportOutputs(const Predictions& p) const override {
    std::map<std::string, ExportOutput> out = {{"predict", PredictOutput(p)}};
    if (o_.label_dimension == 1) {
      ExportOutput regression = RegressionOutput(p.at("predictions"));
      out.emplace(std::string(kDefaultServingSignature), regression);
      out.emplace("regression", regression);
    } else {
      out.emplace(std::string(kDefaultServingSignature), PredictOutput(p));
    }
    return out;
  }

 private:
  RegressionHeadOptions o_;
};

}  // namespace

EstimatorSpec Head::CreateEstimatorSpec(const Scope& scope, const Features& features, Mode mode,
                                        Output logits, Output labels,
                                        const TrainOpFn& train_op_fn) const {
  Scope head = scope.NewSubScope("head");
  Predictions predictions = CreatePredictions(head.NewSubScope("predictions"), logits);
  if (mode == Mode::kPredict) {
    return {.mode = mode,
            .predictions = predictions,
            .export_outputs = CreateExportOutputs(predictions)};
  }
  HeadLoss loss = CreateLoss(head.NewSubScope("loss"), features, logits, labels);
  if (mode == Mode::kEval) {
    return {.mode = mode,
            .predictions = predictions,
            .loss = loss.training_loss,
            .eval_metric_ops = CreateEvalMetrics(head.NewSubScope("metrics"), predictions, loss)};
  }
  if (!train_op_fn) throw InvalidArgument(name(), ": training needs a train_op_fn");
  return {.mode = mode,
          .predictions = predictions,
          .loss = loss.training_loss,
          .train_op = train_op_fn(scope, loss.training_loss)};
}

std::shared_ptr<const Head> BinaryClassHead(BinaryClassHeadOptions options) {
  return std::make_shared<BinaryClassHeadImpl>(std::move(options));
}

std::shared_ptr<const Head> MultiClassHead(MultiClassHeadOptions options) {
  return std::make_shared<MultiClassHeadImpl>(std::move(options));
}

std::shared_ptr<const Head> RegressionHead(RegressionHeadOptions options) {
  return std::make_shared<RegressionHeadImpl>(std::move(options));
}

}  // namespace loom
