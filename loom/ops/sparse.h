#ifndef LOOM_OPS_SPARSE_H_
#define LOOM_OPS_SPARSE_H_

// Sparse tensors, TF's tf.SparseTensor: a value of dense shape `dense_shape` that is
// `default` everywhere except at the rows of `indices`, where it holds `values`.
//
//   indices      int64 [N, rank]  one row per stored value, its coordinates
//   values       any dtype [N]
//   dense_shape  int64 [rank]
//
// parse_example's VarLenFeature output is one: rank 2, indices [batch row, position in
// the row] in row-major order (TF's exact layout). The ops here are graph ops on the three
// tensors, so a SparseTensor is a plain struct of Outputs, copied freely.
//
//   SparseTensor words = ...;                                   // [batch, ?] int64 ids
//   Output dense = SparseToDense(s, words, int64_t{-1});        // [batch, longest row]
//   Output emb = EmbeddingLookupSparse(s, table, words, {}, {.combiner = kMean});
//
// Run-time errors (an index outside dense_shape, a repeated index, ranks that disagree)
// are InvalidArgument naming the node, the index and the shape.
#include <optional>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

struct SparseTensor {
  Output indices;
  Output values;
  Output dense_shape;

  DType dtype() const { return values.dtype(); }
};

// The dense tensor of `sp` (shape: the value of dense_shape), `default_value` (a scalar
// of sp's dtype) where no index points. Indices may come in any order; a repeated index
// or one outside dense_shape fails at run time. Differentiable w.r.t. values (the dense
// gradient read at the indices) and default_value (the rest of it).
Output SparseToDense(const Scope& scope, const SparseTensor& sp, Input default_value);

// `sp` with its indices (and values along with them) sorted in row-major order, as
// tf.sparse.reorder. Not differentiable.
SparseTensor SparseReorder(const Scope& scope, const SparseTensor& sp);

// Sum of the values of `sp` over `axes` (all when empty), as tf.sparse.reduce_sum: the
// dense result (missing entries count as 0). Numeric dtypes.
Output SparseReduceSum(const Scope& scope, const SparseTensor& sp,
                       const std::vector<int64_t>& axes = {}, bool keep_dims = false);

// How EmbeddingLookupSparse combines the embeddings of a row (tf.nn's combiner strings).
enum class SparseCombiner {
  kSum,    // sum_i w_i * params[id_i]
  kMean,   // sum_i w_i * params[id_i] / sum_i w_i
  kSqrtN,  // sum_i w_i * params[id_i] / sqrt(sum_i w_i^2)
};
struct EmbeddingLookupSparseOptions {
  // Default: kMean (tf.nn.embedding_lookup_sparse's default).
  SparseCombiner combiner = SparseCombiner::kMean;
};
// tf.nn.embedding_lookup_sparse: for each row r of `ids` (a rank-2 SparseTensor of
// int32/int64 ids into params' rows, [batch, ?]) the combination of params[id] over the
// row's ids, weighted by `weights` (a SparseTensor of params' dtype with the same
// indices; every id weighs 1 without it). Output [dense_shape[0]] + params.shape[1:];
// a row without ids is zeros. Differs from TF1, which drops trailing rows without ids
// (its output has max(row)+1 rows): Loom always returns one row per batch row.
// params is read with Gather, so its gradient is IndexedSlices over the ids used.
Output EmbeddingLookupSparse(const Scope& scope, Input params, const SparseTensor& ids,
                             const std::optional<SparseTensor>& weights = std::nullopt,
                             const EmbeddingLookupSparseOptions& options = {});

// The SparseTensor batch of B sparse elements of rank R, from their padded stack (what a
// padded batch of the three components gives): indices int64 [B, M, R] where rows of -1
// are padding, values [B, M], dense_shapes int64 [B, R]. Output: indices [n, R + 1] with
// the element's position in the batch prepended, values [n], dense_shape [R + 1] =
// [B, the largest dense_shape of each dim]; element order is kept. Not differentiable
// (batching in the input pipeline).
SparseTensor SparseBatchPadded(const Scope& scope, Input indices, Input values, Input dense_shapes);

void RegisterSparseOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_SPARSE_H_
