#ifndef LOOM_ESTIMATOR_FEATURE_COLUMN_INTERNAL_H_
#define LOOM_ESTIMATOR_FEATURE_COLUMN_INTERNAL_H_

// Shared by the feature_column_*.cc files; not part of the public API.
#include <string>

#include "loom/estimator/feature_column.h"

namespace loom::feature_column::internal {

// "categorical column 'job' (feature 'occupation')" for error messages.
std::string Describe(const std::string& kind, const std::string& column, const std::string& key);

// The numeric column's float32 [batch, dimension] value (normalizer applied); bucketized
// columns read it.
class NumericColumnBase : public DenseColumn {
 public:
  virtual Output Value(TransformCache& cache) const = 0;
};

// The feature `key` of categorical column `column`: the dense tensor, or a SparseTensor
// feature densified to [batch, longest row] with padding where a row has no value ("",
// -1 or 0 by the values' dtype). Throws InvalidArgument
// naming the column for a sparse feature that is not rank 2.
Output CategoricalInput(TransformCache& cache, const std::string& key, const std::string& column);

// `x` ([batch] or [batch, k]) as int64 ids [batch, k]. Throws InvalidArgument naming
// `what` for another rank.
Output AsIdMatrix(const Scope& scope, Output x, const std::string& what);

// The weights of present ids: float32 [batch, k], weights (when valid) times (ids >= 0).
Output PresentWeights(const Scope& scope, const CategoricalIds& ids);

// sum_i w_i * table[id_i] over each row, combined (see Combiner): [batch, table dim 1].
// table is read with Gather so its gradient is sparse.
Output CombineRows(const Scope& scope, Output table, const CategoricalIds& ids, Combiner combiner);

}  // namespace loom::feature_column::internal

#endif  // LOOM_ESTIMATOR_FEATURE_COLUMN_INTERNAL_H_
