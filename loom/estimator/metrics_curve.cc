// Threshold-based metrics: AUC and precision / recall at thresholds, all accumulating one
// float64 [4, T] variable of (tp, fn, tn, fp) per threshold.
#include <algorithm>

#include "loom/estimator/metrics_internal.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"

namespace loom::metrics {

using internal::BroadcastWeights;
using internal::LocalVariable;
using internal::MetricScope;
using internal::UpdateOpFrom;

namespace {

struct Counts {
  Output tp, fn, tn, fp;
};

Counts Rows(const Scope& s, Output counts, int64_t num_t) {
  auto row = [&](int64_t r) { return Reshape(s, Slice(s, counts, {r, 0}, {1, num_t}), {num_t}); };
  return {row(0), row(1), row(2), row(3)};
}

// The counts variable and its update for one batch.
struct CountsState {
  Variable counts;
  Output updated;
};

CountsState AccumulateCounts(const Scope& s, const Input& labels, const Input& predictions,
                             const std::optional<Input>& weights,
                             const std::vector<double>& thresholds) {
  auto [l, p] =
      internal::RemoveSqueezableDimensions(s, AsOutput(s, labels), AsOutput(s, predictions));
  if (p.dtype() != kFloat32 && p.dtype() != kFloat64) p = Cast(s, p, kFloat32);
  Output w = BroadcastWeights(s, weights, p);
  Output batch = internal::ThresholdConfusionCounts(s, l, p, w, thresholds);
  CountsState state;
  state.counts =
      LocalVariable(s, "confusion_counts", Shape{4, static_cast<int64_t>(thresholds.size())});
  state.updated = AssignAdd(s, state.counts, batch);
  return state;
}

// TF 1.15's compute_auc with summation_method='trapezoidal'.
Output ComputeAuc(const Scope& s, Output counts, int64_t num_t, Curve curve) {
  const double eps = 1e-6;
  Counts c = Rows(s, counts, num_t);
  Output rec = Div(s, Add(s, c.tp, eps), Add(s, Add(s, c.tp, c.fn), eps));
  Output x, y;
  if (curve == Curve::kROC) {
    x = Div(s, c.fp, Add(s, Add(s, c.fp, c.tn), eps));
    y = rec;
  } else {
    x = rec;
    y = Div(s, Add(s, c.tp, eps), Add(s, Add(s, c.tp, c.fp), eps));
  }
  auto head = [&](Output v) { return Slice(s, v, {0}, {num_t - 1}); };
  auto tail = [&](Output v) { return Slice(s, v, {1}, {num_t - 1}); };
  Output area = Sum(s, Mul(s, Sub(s, head(x), tail(x)), Mul(s, Add(s, head(y), tail(y)), 0.5)));
  return Cast(s, area, kFloat32);
}

}  // namespace

Metric AUC(const Scope& scope, Input labels, Input predictions, const AucOptions& options) {
  Scope s = MetricScope(scope, options.name, "auc");
  if (options.num_thresholds < 2) {
    throw InvalidArgument("metric '", s.prefix(), "': num_thresholds must be > 1, got ",
                          options.num_thresholds);
  }
  const int64_t n = options.num_thresholds;
  const double kepsilon = 1e-7;
  std::vector<double> thresholds;
  thresholds.push_back(0.0 - kepsilon);
  for (int64_t i = 0; i < n - 2; ++i) thresholds.push_back((i + 1) * 1.0 / (n - 1));
  thresholds.push_back(1.0 + kepsilon);
  CountsState state = AccumulateCounts(s, labels, predictions, options.weights, thresholds);
  Metric m;
  m.value = Identity(s.WithOpName("value"), ComputeAuc(s, state.counts, n, options.curve));
  m.update_op = UpdateOpFrom(s, ComputeAuc(s, state.updated, n, options.curve));
  return m;
}

namespace {

// tp / (tp + other + 1e-7) per threshold (TF's precision/recall_at_thresholds).
Metric AtThresholds(const Scope& s, const Input& labels, const Input& predictions,
                    const std::vector<double>& thresholds, const std::optional<Input>& weights,
                    bool precision) {
  if (thresholds.empty()) {
    throw InvalidArgument("metric '", s.prefix(), "': thresholds must not be empty");
  }
  std::vector<double> sorted = thresholds;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != thresholds) {
    throw InvalidArgument("metric '", s.prefix(), "': thresholds must be ascending");
  }
  const int64_t num_t = static_cast<int64_t>(thresholds.size());
  CountsState state = AccumulateCounts(s, labels, predictions, weights, thresholds);
  auto compute = [&](Output counts) {
    Counts c = Rows(s, counts, num_t);
    Output other = precision ? c.fp : c.fn;
    return Cast(s, Div(s, c.tp, Add(s, Add(s, c.tp, other), 1e-7)), kFloat32);
  };
  Metric m;
  m.value = Identity(s.WithOpName("value"), compute(state.counts));
  m.update_op = UpdateOpFrom(s, compute(state.updated));
  return m;
}

}  // namespace

Metric PrecisionAtThresholds(const Scope& scope, Input labels, Input predictions,
                             const std::vector<double>& thresholds, const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "precision_at_thresholds");
  return AtThresholds(s, labels, predictions, thresholds, options.weights, /*precision=*/true);
}

Metric RecallAtThresholds(const Scope& scope, Input labels, Input predictions,
                          const std::vector<double>& thresholds, const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "recall_at_thresholds");
  return AtThresholds(s, labels, predictions, thresholds, options.weights, /*precision=*/false);
}

}  // namespace loom::metrics
