#ifndef LOOM_OPS_SPACE_BATCH_H_
#define LOOM_OPS_SPACE_BATCH_H_

// TF's SpaceToBatchND and BatchToSpaceND: the rearrangements TF 1.15 wraps around a
// convolution to dilate it (tf.nn.atrous_conv2d, tf.nn.conv2d with dilations, the `rate` of
// depthwise_conv2d): with block_shape [b1 .. bM] over the M dims after the batch,
//
//   SpaceToBatchND: zero-pad each of those dims by paddings[i] = {before, after} (the padded
//     size must divide by b_i), then move each block offset (k1 .. kM) to the batch:
//     out[(k1 * b2 * ... * bM + ... + kM) * batch + n, j1, .., jM, rest] =
//       padded[n, j1 * b1 + k1, .., jM * bM + kM, rest]
//     -> [batch * prod(b), padded_1 / b1, .., padded_M / bM, rest...]
//   BatchToSpaceND: its inverse, then crops[i] = {before, after} removed from each dim
//     -> [batch / prod(b), d_1 * b1 - crops, .., rest...]
//
//   auto s = SpaceToBatchND(s, x, {2, 2}, {{0, 1}, {0, 1}});  // [N, 7, 7, C] -> [4N, 4, 4, C]
//
// Any dtype; block_shape, paddings and crops are attributes (TF's constant inputs). Each is
// the other's gradient (so both are differentiable in their input).
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

Output SpaceToBatchND(const Scope& scope, Input input, const std::vector<int64_t>& block_shape,
                      const std::vector<std::pair<int64_t, int64_t>>& paddings);
Output BatchToSpaceND(const Scope& scope, Input input, const std::vector<int64_t>& block_shape,
                      const std::vector<std::pair<int64_t, int64_t>>& crops);

void RegisterSpaceBatchOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_SPACE_BATCH_H_
