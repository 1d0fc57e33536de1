#ifndef LOOM_OPS_SCATTER_H_
#define LOOM_OPS_SCATTER_H_

// Indexed reads and accumulating writes by coordinates: TF's GatherNd, ScatterNd and
// UnsortedSegmentSum (tf.gather_nd, tf.scatter_nd, tf.math.unsorted_segment_sum).
//
//   auto picked = GatherNd(s, params, indices);        // indices [..., M]
//   auto dense = ScatterNd(s, indices, updates, shape); // zeros(shape), updates added
//   auto sums = UnsortedSegmentSum(s, data, ids, 10);   // [10] + data.shape[ids.rank:]
//
// Indices are int32/int64; one outside its dimension fails when the op runs, naming it and
// the valid range (TF's CPU kernels fail too). GatherNd and ScatterNd are each other's
// gradient (for params and updates); a segment sum's gradient gathers the output's
// gradient at the segment ids. Indices, shapes and segment counts pass no gradient.
#include "loom/graph/op_def.h"

namespace loom {

// The slices params[indices[i..., :]]: output indices.shape[:-1] + params.shape[M:], with
// M = indices.shape[-1] <= rank(params). Any dtype.
Output GatherNd(const Scope& scope, Input params, Input indices);

// Zeros of `shape` (an int32/int64 vector, computed or constant) with updates[i...] added
// at indices[i..., :] (repeated indices add up). updates' shape is indices.shape[:-1] +
// shape[M:]. Numeric dtypes.
Output ScatterNd(const Scope& scope, Input indices, Input updates, Input shape);

// out[j...] = the sum of data[i...] over the i with segment_ids[i] == j, for j in
// [0, num_segments) (num_segments an int32/int64 scalar, computed or constant); segment_ids'
// shape is a prefix of data's; out's shape [num_segments] + data.shape[ids.rank:]. A
// negative id drops its row, as TF's; an id >= num_segments fails naming it. Numeric dtypes.
Output UnsortedSegmentSum(const Scope& scope, Input data, Input segment_ids, Input num_segments);

// TF's SegmentSum: UnsortedSegmentSum (its attribute sorted_ids = true) whose ids must be
// non-negative and non-decreasing, as tf.math.segment_sum's; a negative or decreasing id
// fails when the op runs, naming it and its position.
Output SegmentSum(const Scope& scope, Input data, Input segment_ids, Input num_segments);

void RegisterScatterOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_SCATTER_H_
