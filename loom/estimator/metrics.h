#ifndef LOOM_ESTIMATOR_METRICS_H_
#define LOOM_ESTIMATOR_METRICS_H_

// Streaming evaluation metrics, TF1's tf.metrics. Each call makes a fresh name scope
// ("accuracy", "accuracy_1", ...) holding LOCAL variables (VariableOptions::local: not
// saved, not trainable, zeroed by LocalVariablesInitializer, which the Estimator runs at
// the start of every evaluation) and returns
//   value      reads the variables and computes the metric (idempotent);
//   update_op  accumulates one batch into the variables; its node's output 0 is the
//              metric's value after the update (TF's update_op tensor):
//              Output(metric.update_op.node).
//
//   auto acc = loom::metrics::Accuracy(s, labels, predicted_classes);
//   session.RunTarget(LocalVariablesInitializer(s));
//   for (each batch) session.RunTarget(acc.update_op, feeds);
//   float accuracy = session.Eval(acc.value).scalar<float>();
//
// Run value after update_op, not in the same Session::Run (TF's caveat: the two race).
// Semantics follow TF 1.15 (metrics_impl.py) except that counters are float64, so sums
// stay exact past 2^24 examples; values are float32 like TF's (ConfusionMatrix: float64,
// as TF's total_cm). Weights are optional, a scalar or broadcastable to the values'
// shape; weight 0 masks an entry. Ratios with a zero denominator are 0, not NaN.
// Labels and predictions of different dtypes are compared after casting predictions to
// the labels' dtype (TF's rule).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::metrics {

struct Metric {
  Output value;
  Operation update_op;
};

struct MetricOptions {
  // Per-entry weights, or a scalar. Default: none (all 1).
  std::optional<Input> weights;
  // Name scope. Default: "" (the metric's own, e.g. "accuracy").
  std::string name;
};

// Weighted mean of `values`: sum(values * w) / sum(w).
Metric Mean(const Scope& scope, Input values, const MetricOptions& options = {});
// Fraction of entries where labels == predictions (same shape).
Metric Accuracy(const Scope& scope, Input labels, Input predictions,
                const MetricOptions& options = {});
Metric MeanSquaredError(const Scope& scope, Input labels, Input predictions,
                        const MetricOptions& options = {});
// sqrt of MeanSquaredError.
Metric RootMeanSquaredError(const Scope& scope, Input labels, Input predictions,
                            const MetricOptions& options = {});
Metric MeanAbsoluteError(const Scope& scope, Input labels, Input predictions,
                         const MetricOptions& options = {});

// labels and predictions cast to bool (nonzero is true): tp / (tp + fp), tp / (tp + fn).
Metric Precision(const Scope& scope, Input labels, Input predictions,
                 const MetricOptions& options = {});
Metric Recall(const Scope& scope, Input labels, Input predictions,
              const MetricOptions& options = {});

enum class Curve { kROC, kPR };
struct AucOptions {
  int64_t num_thresholds = 200;  // Default: 200. REQUIRES: > 1
  Curve curve = Curve::kROC;     // Default: kROC
  std::optional<Input> weights;  // Default: none
  std::string name;              // Default: "auc"
};
// Area under the ROC or PR curve by TF 1.15's default 'trapezoidal' summation over the
// thresholds {-1e-7, 1/(n-1), ..., (n-2)/(n-1), 1 + 1e-7}; an example counts as
// predicted positive at threshold t when float(prediction) > float(t). With
// eps = 1e-6: recall = (tp + eps) / (tp + fn + eps), fp_rate = fp / (fp + tn + eps),
// precision = (tp + eps) / (tp + fp + eps); ROC: x = fp_rate, y = recall; PR: x = recall,
// y = precision; auc = sum_i (x[i] - x[i+1]) * (y[i] + y[i+1]) / 2.
// labels: bool or numeric (nonzero positive); predictions in [0, 1] (else InvalidArgument
// at run time).
Metric AUC(const Scope& scope, Input labels, Input predictions, const AucOptions& options = {});
// Per threshold: tp / (tp + fp + 1e-7) and tp / (tp + fn + 1e-7); value shape [T].
Metric PrecisionAtThresholds(const Scope& scope, Input labels, Input predictions,
                             const std::vector<double>& thresholds,
                             const MetricOptions& options = {});
Metric RecallAtThresholds(const Scope& scope, Input labels, Input predictions,
                          const std::vector<double>& thresholds, const MetricOptions& options = {});

// Mean of in_top_k(predictions [batch, classes], targets [batch], k): whether the
// target's score is among the k largest (ties at the boundary count as in, as TF); a
// non-finite score or an out-of-range target counts as a miss.
Metric TopKAccuracy(const Scope& scope, Input targets, Input predictions, int64_t k,
                    const MetricOptions& options = {});

// Class ids in [0, num_classes) (an id outside fails at run time naming it).
// Streaming confusion matrix [num_classes, num_classes] float64: rows labels, columns
// predictions, entries summed weights.
Metric ConfusionMatrix(const Scope& scope, Input labels, Input predictions, int64_t num_classes,
                       const MetricOptions& options = {});
// Mean over all num_classes of per-class accuracy (correct / seen for that label; 0 for a
// class never seen, as TF 1.15).
Metric MeanPerClassAccuracy(const Scope& scope, Input labels, Input predictions,
                            int64_t num_classes, const MetricOptions& options = {});
// Mean over classes with a nonzero denominator of tp / (tp + fp + fn).
Metric MeanIoU(const Scope& scope, Input labels, Input predictions, int64_t num_classes,
               const MetricOptions& options = {});

// Dedicated ops (no gradients): ThresholdConfusionCounts, InTopK, ConfusionMatrixCounts.
void RegisterMetricOps(OpRegistry& registry);

// in_top_k as a graph op (tf.nn.in_top_k): bool [batch].
Output InTopK(const Scope& scope, Input predictions, Input targets, int64_t k);

}  // namespace loom::metrics

#endif  // LOOM_ESTIMATOR_METRICS_H_
