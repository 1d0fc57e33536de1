#ifndef LOOM_ESTIMATOR_METRICS_INTERNAL_H_
#define LOOM_ESTIMATOR_METRICS_INTERNAL_H_

// Helpers and op builders shared by the metric files (not part of the public API).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/estimator/metrics.h"
#include "loom/ops/state.h"

namespace loom::metrics::internal {

// A float64 local variable "<scope>/<name>" of `shape`, initially zeros.
Variable LocalVariable(const Scope& scope, const std::string& name, const Shape& shape);
// n / d, 0 where d == 0 (div_no_nan).
Output DivNoNan(const Scope& s, Output n, Output d);
// weights (float64) broadcast to `like`'s shape; ones when absent. Any dtype of like.
Output BroadcastWeights(const Scope& s, const std::optional<Input>& weights, Output like);
// The metric's scope: options.name or `default_name`, made unique.
Scope MetricScope(const Scope& scope, const std::string& name, const char* default_name);
// Wraps the updated value as the update_op node.
Operation UpdateOpFrom(const Scope& s, Output updated_value);

// TF's metrics_impl._remove_squeezable_dimensions: when the ranks differ by one and the
// larger one's last dim is 1 (or unknown), that dim is squeezed; then the shapes must be
// compatible (equal ranks and known dims), else InvalidArgument naming the metric.
// Returns {labels, predictions}.
std::pair<Output, Output> RemoveSqueezableDimensions(const Scope& s, Output labels,
                                                     Output predictions);

// Rows tp, fn, tn, fp (float64 [4, T]) of one batch at ascending `thresholds`.
Output ThresholdConfusionCounts(const Scope& s, Output labels, Output predictions, Output weights,
                                const std::vector<double>& thresholds);
// float64 [C, C] counts of one batch; labels/predictions int32/int64 vectors.
Output ConfusionMatrixCounts(const Scope& s, Output labels, Output predictions, Output weights,
                             int64_t num_classes);

}  // namespace loom::metrics::internal

#endif  // LOOM_ESTIMATOR_METRICS_INTERNAL_H_
