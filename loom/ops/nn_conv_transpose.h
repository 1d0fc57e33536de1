#ifndef LOOM_OPS_NN_CONV_TRANSPOSE_H_
#define LOOM_OPS_NN_CONV_TRANSPOSE_H_

// The transposed 2-D convolution (tf.nn.conv2d_transpose, TF's Conv2DBackpropInput with its
// input_sizes): the gradient of Conv2D with respect to its input, taken as a layer.
//
//   // value [N, 7, 7, 64], filter [3, 3, 32, 64] -> [N, 14, 14, 32]
//   auto y = Conv2DTranspose(s, value, filter, output_shape, {2, 2}, "SAME");
//
// value is NHWC [batch, h, w, K]; filter [kh, kw, C, K] (TF's [height, width,
// output_channels, in_channels]); output_shape an int32 / int64 vector [batch, H, W, C],
// possibly computed at run time (tf.stack([tf.shape(x)[0], 14, 14, 32])). The Conv2D of an
// [batch, H, W, C] input by filter with these strides and padding must give value's shape
// [batch, h, w, K] (several H give the same h at a stride > 1: output_shape picks one); a
// mismatch is InvalidArgument naming both shapes. `dilations` {rh, rw} (TF's attribute;
// [1, rh, rw, 1] also accepted) dilates that Conv2D's filter, as TF's Conv2DBackpropInput
// (and tf.nn.conv2d_transpose's dilations) do; dilated, float32 runs oneDNN's dilated
// convolution (onednn_depthwise.h). float32
// runs on oneDNN (onednn_conv.h), float64 and whatever oneDNN declines on direct loops.
//
// Differentiable in value (Conv2D of the output's gradient by filter) and filter (the op
// Conv2DTransposeBackpropFilter); output_shape is not differentiable. Twice differentiable:
// Conv2DTransposeBackpropFilter's gradient is a Conv2DTranspose and a Conv2D (a gradient
// penalty on the filter's or the value's gradient works).
// Dilated, the value gradient is a Conv2D by the filter with the dilation's zeros put in
// (Conv2D has no dilations): exact, at rh * rw times the multiplies.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

Output Conv2DTranspose(const Scope& scope, Input value, Input filter, Input output_shape,
                       const std::vector<int64_t>& strides, const std::string& padding,
                       const std::vector<int64_t>& dilations = {1, 1});

void RegisterNnConvTransposeOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_NN_CONV_TRANSPOSE_H_
