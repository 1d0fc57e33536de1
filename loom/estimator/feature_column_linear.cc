// LinearModel: a weighted sum of feature columns, sparse for categorical ones.
#include <algorithm>

#include "loom/estimator/feature_column_internal.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/state.h"

namespace loom::feature_column {

Output LinearModel(const Scope& scope, const Features& features,
                   const std::vector<FeatureColumnPtr>& columns,
                   const LinearModelOptions& options) {
  if (columns.empty()) {
    throw InvalidArgument("LinearModel: feature_columns is empty; pass at least one column");
  }
  if (options.units <= 0) {
    throw InvalidArgument("LinearModel: units must be > 0, got ", options.units);
  }
  std::vector<FeatureColumnPtr> sorted = columns;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a->name() < b->name(); });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->name() == sorted[i - 1]->name()) {
      throw InvalidArgument("LinearModel: two feature columns are named '", sorted[i]->name(),
                            "'; column names must be unique");
    }
  }
  Scope model = scope.NewSubScope(options.name);
  TransformCache cache(model, features);
  const int64_t units = options.units;
  std::vector<Output> terms;
  for (const FeatureColumnPtr& column : sorted) {
    Scope s = model.NewSubScope(column->name());
    // Categorical first: a bucketized column is both and gets one weight per bucket.
    if (auto* categorical = dynamic_cast<const CategoricalColumn*>(column.get())) {
      const Shape shape{categorical->num_buckets(), units};
      Variable w(s.WithOpName("weights"), Zeros(s.NewSubScope("weights_initializer"), shape),
                 {.shape = shape});
      terms.push_back(
          internal::CombineRows(s, w, cache.Ids(*categorical), options.sparse_combiner));
    } else if (auto* dense = dynamic_cast<const DenseColumn*>(column.get())) {
      const Shape shape{dense->dimension(), units};
      Variable w(s.WithOpName("weights"), Zeros(s.NewSubScope("weights_initializer"), shape),
                 {.shape = shape});
      terms.push_back(MatMul(s, dense->GetDenseTensor(cache, s), w));
    } else {
      throw InvalidArgument("LinearModel: column '", column->name(),
                            "' is neither dense nor categorical");
    }
  }
  Variable bias(model.WithOpName("bias_weights"),
                Zeros(model.NewSubScope("bias_weights_initializer"), Shape{units}),
                {.shape = Shape{units}});
  Output sum = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) sum = Add(model, sum, terms[i]);
  return BiasAdd(model.WithOpName("weighted_sum"), sum, bias);
}

}  // namespace loom::feature_column
