// Class-id metrics over a streaming confusion matrix: ConfusionMatrix,
// MeanPerClassAccuracy, MeanIoU.
#include "loom/estimator/metrics_internal.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"

namespace loom::metrics {

using internal::BroadcastWeights;
using internal::DivNoNan;
using internal::LocalVariable;
using internal::MetricScope;
using internal::UpdateOpFrom;

namespace {

Output ClassIds(const Scope& s, const Input& x) {
  Output ids = Reshape(s, AsOutput(s, x, kInt64), {-1});
  return ids.dtype() == kInt32 || ids.dtype() == kInt64 ? ids : Cast(s, ids, kInt64);
}

struct MatrixState {
  Variable total;
  Output updated;
};

MatrixState AccumulateMatrix(const Scope& s, const Input& labels, const Input& predictions,
                             int64_t num_classes, const std::optional<Input>& weights) {
  if (num_classes < 1) {
    throw InvalidArgument("metric '", s.prefix(), "': num_classes must be positive, got ",
                          num_classes);
  }
  Output l = ClassIds(s, labels);
  Output p = ClassIds(s, predictions);
  Output w = weights.has_value()
                 ? Reshape(s, BroadcastWeights(s, weights, AsOutput(s, predictions)), {-1})
                 : Ones(s, Shape{}, kFloat64);
  Output batch = internal::ConfusionMatrixCounts(s, l, p, w, num_classes);
  MatrixState state;
  state.total = LocalVariable(s, "total_confusion_matrix", Shape{num_classes, num_classes});
  state.updated = AssignAdd(s, state.total, batch);
  return state;
}

// The diagonal of a [C, C] matrix.
Output Diagonal(const Scope& s, Output cm, int64_t c) {
  std::vector<int64_t> idx(c);
  for (int64_t i = 0; i < c; ++i) idx[i] = i * (c + 1);
  return Gather(s, Reshape(s, cm, {c * c}), Const(s, idx, Shape{c}));
}

Output PerClassAccuracyMean(const Scope& s, Output cm, int64_t c) {
  Output per_class = DivNoNan(s, Diagonal(s, cm, c), Sum(s, cm, {1}));
  return Cast(s, loom::Mean(s, per_class), kFloat32);
}

Output MeanIoUOf(const Scope& s, Output cm, int64_t c) {
  Output diag = Diagonal(s, cm, c);
  Output denominator = Sub(s, Add(s, Sum(s, cm, {0}), Sum(s, cm, {1})), diag);
  Output num_valid = Sum(s, Cast(s, NotEqual(s, denominator, 0.0), kFloat64));
  Output iou = DivNoNan(s, diag, denominator);
  return Cast(s, DivNoNan(s, Sum(s, iou), num_valid), kFloat32);
}

}  // namespace

Metric ConfusionMatrix(const Scope& scope, Input labels, Input predictions, int64_t num_classes,
                       const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "confusion_matrix");
  MatrixState state = AccumulateMatrix(s, labels, predictions, num_classes, options.weights);
  Metric m;
  m.value = Identity(s.WithOpName("value"), state.total);
  m.update_op = UpdateOpFrom(s, state.updated);
  return m;
}

Metric MeanPerClassAccuracy(const Scope& scope, Input labels, Input predictions,
                            int64_t num_classes, const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "mean_accuracy");
  MatrixState state = AccumulateMatrix(s, labels, predictions, num_classes, options.weights);
  Metric m;
  m.value = Identity(s.WithOpName("value"), PerClassAccuracyMean(s, state.total, num_classes));
  m.update_op = UpdateOpFrom(s, PerClassAccuracyMean(s, state.updated, num_classes));
  return m;
}

Metric MeanIoU(const Scope& scope, Input labels, Input predictions, int64_t num_classes,
               const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "mean_iou");
  MatrixState state = AccumulateMatrix(s, labels, predictions, num_classes, options.weights);
  Metric m;
  m.value = Identity(s.WithOpName("value"), MeanIoUOf(s, state.total, num_classes));
  m.update_op = UpdateOpFrom(s, MeanIoUOf(s, state.updated, num_classes));
  return m;
}

}  // namespace loom::metrics
