// Mean-based metrics (mean, accuracy, errors, top-k) and precision / recall.
#include "loom/estimator/metrics_internal.h"
#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"

namespace loom::metrics {
namespace internal {

Variable LocalVariable(const Scope& scope, const std::string& name, const Shape& shape) {
  // The initial value outside the caller's control dependencies (TF's init_scope): the
  // initializer must not run them.
  Graph::ContextOverride outside(scope.graph(), nullptr);
  return Variable(scope.WithOpName(name), Zeros(scope, shape, kFloat64), {.local = true});
}

Output DivNoNan(const Scope& s, Output n, Output d) {
  Output nonzero = NotEqual(s, d, 0.0);
  Output safe_d = Select(s, nonzero, d, OnesLike(s, d));
  return Select(s, nonzero, Div(s, n, safe_d), ZerosLike(s, n));
}

Output BroadcastWeights(const Scope& s, const std::optional<Input>& weights, Output like) {
  Output ones = OnesLike(s, Cast(s, like, kFloat64));
  if (!weights.has_value()) return ones;
  Output w = Cast(s, AsOutput(s, *weights, kFloat64), kFloat64);
  // TF's rank adjustment of non-scalar weights: [n, 1] weights against [n] values are
  // squeezed, [n] weights against [n, 1] values expanded (never broadcast to [n, n]).
  const Shape& ws = w.shape();
  const Shape& ls = like.shape();
  if (ws.rank_known() && ls.rank_known() && ws.rank() > 0) {
    if (ws.rank() == ls.rank() + 1) {
      w = Squeeze(s, w, {-1});
    } else if (ls.rank() == ws.rank() + 1) {
      w = ExpandDims(s, w, -1);
    }
  }
  return Mul(s.WithOpName("broadcast_weights"), w, ones);
}

Scope MetricScope(const Scope& scope, const std::string& name, const char* default_name) {
  return scope.NewSubScope(name.empty() ? default_name : name);
}

Operation UpdateOpFrom(const Scope& s, Output updated_value) {
  return Identity(s.WithOpName("update_op"), updated_value).node;
}

std::pair<Output, Output> RemoveSqueezableDimensions(const Scope& s, Output labels,
                                                     Output predictions) {
  const Shape& l = labels.shape();
  const Shape& p = predictions.shape();
  if (l.rank_known() && p.rank_known()) {
    // A trailing dim is squeezable when it is 1 or unknown (TF: is_compatible_with(1)).
    auto squeezable = [](const Shape& x) {
      return x.rank() > 0 && (x.dim(-1) == 1 || x.dim(-1) < 0);
    };
    if (p.rank() == l.rank() + 1 && squeezable(p)) {
      predictions = Squeeze(s, predictions, {-1});
    } else if (l.rank() == p.rank() + 1 && squeezable(l)) {
      labels = Squeeze(s, labels, {-1});
    }
  }
  if (!predictions.shape().IsCompatibleWith(labels.shape())) {
    throw InvalidArgument("metric '", s.prefix(), "': labels ", l, " (", labels.name(),
                          ") and predictions ", p, " (", predictions.name(),
                          ") have incompatible shapes; they must match after dropping a "
                          "trailing dim of 1 (TF's remove_squeezable_dimensions and "
                          "assert_is_compatible_with)");
  }
  return {labels, predictions};
}

}  // namespace internal

using internal::BroadcastWeights;
using internal::DivNoNan;
using internal::LocalVariable;
using internal::MetricScope;
using internal::UpdateOpFrom;

namespace {

// The weighted mean of `values` (any numeric dtype) in scope s.
Metric MeanIn(const Scope& s, Output values, const std::optional<Input>& weights) {
  Output v = Cast(s, values, kFloat64);
  Variable total = LocalVariable(s, "total", Shape{});
  Variable count = LocalVariable(s, "count", Shape{});
  Output w = BroadcastWeights(s, weights, v);
  Output batch_total = Sum(s, Mul(s, v, w));
  Output batch_count = Sum(s, w);
  Metric m;
  m.value = Cast(s.WithOpName("value"), DivNoNan(s, total, count), kFloat32);
  Output new_total = AssignAdd(s, total, batch_total);
  Output new_count = AssignAdd(s, count, batch_count);
  m.update_op = UpdateOpFrom(s, Cast(s, DivNoNan(s, new_total, new_count), kFloat32));
  return m;
}

// predictions cast to the labels' dtype (TF's rule).
std::pair<Output, Output> LabelsAndPredictions(const Scope& s, const Input& labels,
                                               const Input& predictions) {
  Output l = AsOutput(s, labels);
  Output p = AsOutput(s, predictions, l.dtype());
  if (p.dtype() != l.dtype()) p = Cast(s, p, l.dtype());
  return internal::RemoveSqueezableDimensions(s, l, p);
}

}  // namespace

Metric Mean(const Scope& scope, Input values, const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "mean");
  return MeanIn(s, AsOutput(s, values), options.weights);
}

Metric Accuracy(const Scope& scope, Input labels, Input predictions, const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "accuracy");
  auto [l, p] = LabelsAndPredictions(s, labels, predictions);
  return MeanIn(s, Equal(s, l, p), options.weights);
}

Metric MeanSquaredError(const Scope& scope, Input labels, Input predictions,
                        const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "mean_squared_error");
  auto [l, p] = LabelsAndPredictions(s, labels, predictions);
  return MeanIn(s, Square(s, Sub(s, Cast(s, p, kFloat64), Cast(s, l, kFloat64))), options.weights);
}

Metric RootMeanSquaredError(const Scope& scope, Input labels, Input predictions,
                            const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "root_mean_squared_error");
  Metric mse = MeanSquaredError(s, labels, predictions, {.weights = options.weights});
  Metric m;
  m.value = Sqrt(s.WithOpName("value"), mse.value);
  m.update_op = UpdateOpFrom(s, Sqrt(s, Output(mse.update_op.node)));
  return m;
}

Metric MeanAbsoluteError(const Scope& scope, Input labels, Input predictions,
                         const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "mean_absolute_error");
  auto [l, p] = LabelsAndPredictions(s, labels, predictions);
  return MeanIn(s, Abs(s, Sub(s, Cast(s, p, kFloat64), Cast(s, l, kFloat64))), options.weights);
}

namespace {

// tp / (tp + other) over bool-cast labels and predictions; `other_is_fp` picks fp
// (precision) or fn (recall).
Metric PrecisionOrRecall(const Scope& s, const Input& labels, const Input& predictions,
                         const std::optional<Input>& weights, bool other_is_fp) {
  auto [sl, sp] =
      internal::RemoveSqueezableDimensions(s, AsOutput(s, labels), AsOutput(s, predictions));
  Output l = Cast(s, sl, kBool);
  Output p = Cast(s, sp, kBool);
  Output w = BroadcastWeights(s, weights, p);
  auto weighted_count = [&](Output mask) { return Sum(s, Mul(s, Cast(s, mask, kFloat64), w)); };
  Output batch_tp = weighted_count(LogicalAnd(s, l, p));
  Output batch_other = other_is_fp ? weighted_count(LogicalAnd(s, LogicalNot(s, l), p))
                                   : weighted_count(LogicalAnd(s, l, LogicalNot(s, p)));
  Variable tp = LocalVariable(s, "true_positives", Shape{});
  Variable other = LocalVariable(s, other_is_fp ? "false_positives" : "false_negatives", Shape{});
  Metric m;
  m.value = Cast(s.WithOpName("value"), DivNoNan(s, tp, Add(s, tp, other)), kFloat32);
  Output new_tp = AssignAdd(s, tp, batch_tp);
  Output new_other = AssignAdd(s, other, batch_other);
  m.update_op = UpdateOpFrom(s, Cast(s, DivNoNan(s, new_tp, Add(s, new_tp, new_other)), kFloat32));
  return m;
}

}  // namespace

Metric Precision(const Scope& scope, Input labels, Input predictions,
                 const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "precision");
  return PrecisionOrRecall(s, labels, predictions, options.weights, /*other_is_fp=*/true);
}

Metric Recall(const Scope& scope, Input labels, Input predictions, const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "recall");
  return PrecisionOrRecall(s, labels, predictions, options.weights, /*other_is_fp=*/false);
}

Metric TopKAccuracy(const Scope& scope, Input targets, Input predictions, int64_t k,
                    const MetricOptions& options) {
  Scope s = MetricScope(scope, options.name, "top_k_accuracy");
  Output t = AsOutput(s, targets, kInt64);
  if (t.dtype() != kInt32 && t.dtype() != kInt64) t = Cast(s, t, kInt64);
  if (t.shape().rank_known() && t.shape().rank() == 2 && t.shape().dim(1) == 1) {
    t = Squeeze(s, t, {1});
  }
  return MeanIn(s, InTopK(s, predictions, t, k), options.weights);
}

}  // namespace loom::metrics
