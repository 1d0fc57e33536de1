#ifndef LOOM_OPS_GRAD_SUPPORT_H_
#define LOOM_OPS_GRAD_SUPPORT_H_

// The ops the gradient algorithm itself builds: summing gradients, seeding them, and
// turning a sparse gradient (IndexedSlices) into a dense one.
#include "loom/graph/op_def.h"

namespace loom {

// Element-wise sum of same-shaped tensors (tf.add_n). REQUIRES: inputs non-empty.
Output AddN(const Scope& scope, const std::vector<Output>& inputs);
Output ZerosLike(const Scope& scope, Input x);
Output OnesLike(const Scope& scope, Input x);
// Scatters `values` rows into zeros of shape `dense_shape` (int64 vector), adding rows that
// share an index. Indices outside [0, dense_shape[0]) fail with InvalidArgument.
Output IndexedSlicesToDense(const Scope& scope, Output indices, Output values, Output dense_shape);

void RegisterGradSupportOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_GRAD_SUPPORT_H_
