#ifndef LOOM_ESTIMATOR_ALL_OPS_H_
#define LOOM_ESTIMATOR_ALL_OPS_H_

// Every op Loom defines, for loading serialized graphs (SavedModelPredictor, tools): the
// explicit Register*Ops calls of each layer — state, gradient support, math (with reduce
// and matmul), array, random, nn, data iterators, training updates (with learning-rate
// schedules), summaries, and the estimator's layer,
// metric and feature-column ops. Built on first use; immutable afterwards and safe to share.
#include "loom/graph/op_def.h"

namespace loom {

const OpRegistry& AllOps();

}  // namespace loom

#endif  // LOOM_ESTIMATOR_ALL_OPS_H_
