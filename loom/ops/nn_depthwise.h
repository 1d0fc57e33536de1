#ifndef LOOM_OPS_NN_DEPTHWISE_H_
#define LOOM_OPS_NN_DEPTHWISE_H_

// Depthwise 2-D convolution (TF's DepthwiseConv2dNative, tf.nn.depthwise_conv2d): each input
// channel is convolved with its own `channel_multiplier` filters.
//
//   auto y = DepthwiseConv2dNative(s, images, filter, {2, 2}, "SAME");  // [N, oh, ow, C * M]
//
// input NHWC [batch, height, width, C]; filter [filter_height, filter_width, C, M];
// output [batch, out_height, out_width, C * M] with
//   out[b, i, j, c * M + m] = sum_{di, dj} in[b, i * sh + di - pad_top,
//                                             j * sw + dj - pad_left, c] * filter[di, dj, c, m]
// (cross-correlation, as TF), the window geometry and SAME/VALID padding of Conv2D (nn.h).
// float32 and float64. `dilations` {rh, rw} (TF's attribute, [1, rh, rw, 1] also accepted)
// spreads the taps: row i * sh + di * rh - pad_top; the output size and SAME padding are
// those of the dilated span (kh - 1) * rh + 1, as TF's. (TF 1.15's tf.nn.depthwise_conv2d
// with rate > 1 wraps this op in SpaceToBatchND / BatchToSpaceND instead; both import.)
// Strides and dilations may both exceed 1. The gradient is the ops
// DepthwiseConv2dNativeBackpropInput / ...BackpropFilter, which take the forward input and
// filter themselves (reading only the shape of the one they differentiate), as Conv2D's do;
// their own gradients are the forward op and each other (second derivatives, any order).
// float32 runs oneDNN's grouped convolution
// (onednn_depthwise.h; 10-50x the direct loops, bench/RESULTS.md); float64, and what oneDNN
// declines, direct loops, parallel over output rows (forward), images (input backprop) and
// filter taps (filter backprop).
#include <cstdint>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

// Fails at construction when the input's channels differ from the filter's dim 2, or on a
// bad padding / stride / dilation. `strides` and `dilations` are {height, width} or TF's
// [1, h, w, 1].
Output DepthwiseConv2dNative(const Scope& scope, Input input, Input filter,
                             const std::vector<int64_t>& strides, const std::string& padding,
                             const std::vector<int64_t>& dilations = {1, 1});

void RegisterNnDepthwiseOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_NN_DEPTHWISE_H_
