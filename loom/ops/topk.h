#ifndef LOOM_OPS_TOPK_H_
#define LOOM_OPS_TOPK_H_

// Selection: TF's TopKV2 (tf.nn.top_k / tf.math.top_k) along the last dimension, and TF's
// one-input Where (tf.where(condition): the coordinates of the true elements, which
// tf.boolean_mask gathers).
//
//   TopK t = TopK(s, logits, 5);           // t.values [batch, 5], t.indices int32 [batch, 5]
//
// The k largest entries of each row of the last dimension, largest first; equal values
// keep their order (the lower index first), as TF 1.15 and ONNX's TopK. NaN counts as
// larger than every number. k is an int32/int64 scalar input (a constant or a value fed at
// run time, as TF's TopKV2); a k outside [0, last dim] fails naming the node, at
// construction when k and the dimension are known, else when the op runs.
// The gradient scatters the values' gradient into zeros of the input's shape at the
// indices (TF's _TopKGrad); the indices and k pass none.
#include "loom/graph/op_def.h"

namespace loom {

struct TopK {
  Output values;   // the input's dtype, shape input[:-1] + [k]
  Output indices;  // int32, same shape: positions along the last dimension
};

// float32, float64, int32 or int64 input of rank >= 1. `sorted` is accepted for TF's
// signature: the outputs are always sorted (TF allows any order with sorted = false).
TopK TopKV2(const Scope& scope, Input input, Input k, bool sorted = true);

// The coordinates of condition's true (bool) or nonzero (numeric) elements: int64
// [num_true, rank], in row-major order (TF's Where). Its length is known only when it runs.
// Not differentiable (integer output). The three-input Where is Select (math.h).
Output Where(const Scope& scope, Input condition);

void RegisterTopKOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_TOPK_H_
