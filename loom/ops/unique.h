#ifndef LOOM_OPS_UNIQUE_H_
#define LOOM_OPS_UNIQUE_H_

// TF's Unique (tf.unique): the distinct values of a vector in the order they first appear,
// and for each element the position of its value among them.
//
//   UniqueResult u = Unique(s, ids);   // ids [1, 1, 2, 4, 4, 4, 7, 8, 8]
//   // u.y [1, 2, 4, 7, 8], u.idx [0, 0, 1, 2, 2, 2, 3, 4, 4]
//
// Any dtype but bool; NaNs are never equal, so each is its own value (as TF's). Not
// differentiable (TF has no gradient for it either).
#include "loom/graph/op_def.h"

namespace loom {

struct UniqueResult {
  Output y;    // x's dtype, [number of distinct values]
  Output idx;  // out_idx (int32 or int64), x's shape
};

// REQUIRES: x is a vector. out_idx: kInt32 (TF's default) or kInt64.
UniqueResult Unique(const Scope& scope, Input x, DType out_idx = kInt32);

void RegisterUniqueOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_UNIQUE_H_
