#ifndef LOOM_OPS_NN_POOL_ARGMAX_H_
#define LOOM_OPS_NN_POOL_ARGMAX_H_

// TF's MaxPoolWithArgmax (tf.nn.max_pool_with_argmax): MaxPool's values (nn.h) and, for each,
// the flattened position of the input element it took:
//   (y * width + x) * channels + c                 (include_batch_in_index false, TF's default)
//   ((b * height + y) * width + x) * channels + c  (include_batch_in_index true)
// for the maximum at input [b, y, x, c]; the first in row-major window order wins a tie, as
// TF's CPU kernel. NHWC, float32 / float64; argmax int64 (TF's Targmax default) or int32.
// Differentiable in the input through the values (the gradient goes to the argmax
// positions), twice and more (MaxPoolWithArgmaxGrad's gradient is MaxPoolGradGradWithArgmax,
// TF's op, which reads a gradient at the argmax positions); argmax is not differentiable.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

struct PoolWithArgmax {
  Output output;  // [batch, out_h, out_w, channels], the input's dtype
  Output argmax;  // the same shape, int64 or int32
};

struct PoolWithArgmaxOptions {
  // Default: int64, as TF's Targmax.
  DType argmax_dtype = DType::kInt64;
  // Default: false, as TF's.
  bool include_batch_in_index = false;
};

PoolWithArgmax MaxPoolWithArgmax(const Scope& scope, Input input, const std::vector<int64_t>& ksize,
                                 const std::vector<int64_t>& strides, const std::string& padding,
                                 PoolWithArgmaxOptions options = {});

void RegisterNnPoolArgmaxOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_NN_POOL_ARGMAX_H_
