#ifndef LOOM_ESTIMATOR_LAYERS_CONV_VARIANTS_H_
#define LOOM_ESTIMATOR_LAYERS_CONV_VARIANTS_H_

// The convolution layers beyond Conv2D (layers.h), as TF 1.15 builds them: SeparableConv2D
// (tf.layers.separable_conv2d), DepthwiseConv2D (tf.keras.layers.DepthwiseConv2D) and
// Conv2DTranspose (tf.layers.conv2d_transpose). Each call builds one layer in a fresh
// unique name scope, with the variables TF's checkpoints name:
//
//   separable_conv2d/depthwise_kernel  [kh, kw, in_channels, depth_multiplier]
//   separable_conv2d/pointwise_kernel  [1, 1, in_channels * depth_multiplier, filters]
//   separable_conv2d/bias              [filters]
//   depthwise_conv2d/depthwise_kernel  [kh, kw, in_channels, depth_multiplier]
//   depthwise_conv2d/bias              [in_channels * depth_multiplier]
//   conv2d_transpose/kernel            [kh, kw, filters, in_channels]
//   conv2d_transpose/bias              [filters]
//
//   namespace L = loom::layers;
//   auto h = L::SeparableConv2D(s, x, {.filters = 64, .kernel_size = 3, .padding = "same"});
//   auto up = L::Conv2DTranspose(s, h, {.filters = 32, .kernel_size = 3, .strides = 2,
//                                       .padding = "same", .activation = loom::Relu});
//
// Images are NHWC (TF's channels_last); the channel dim must be known. Initializers default
// to GlorotUniform() for the kernels (tf.layers' default through the variable scope, and
// Keras' 'glorot_uniform'), Zeros() for the bias. dilation_rate dilates the spatial filter
// (the depthwise one for SeparableConv2D) through the ops' own dilations
// (nn_depthwise.h, nn_conv_transpose.h): the same values as TF's SpaceToBatchND lowering.
// Unlike TF, strides and dilation_rate may both exceed 1.
// Thread-safety: like every graph builder, single-threaded.
#include <cstdint>
#include <optional>
#include <string>

#include "loom/estimator/layers.h"

namespace loom::layers {

struct SeparableConv2DOptions {
  int64_t filters = 0;                              // REQUIRES: > 0
  Size2D kernel_size;                               // REQUIRES: set
  Size2D strides = 1;                               // Default: 1
  std::string padding = "valid";                    // "valid" or "same" (any case)
  Size2D dilation_rate = 1;                         // Default: 1 (none)
  int64_t depth_multiplier = 1;                     // REQUIRES: > 0. Default: 1
  Activation activation;                            // Default: none
  bool use_bias = true;                             // Default: true
  initializers::Initializer depthwise_initializer;  // Default: GlorotUniform()
  initializers::Initializer pointwise_initializer;  // Default: GlorotUniform()
  initializers::Initializer bias_initializer;       // Default: Zeros()
  Regularizer depthwise_regularizer;                // Default: none
  Regularizer pointwise_regularizer;                // Default: none
  Regularizer bias_regularizer;                     // Default: none
  bool trainable = true;                            // Default: true
  std::string name = "separable_conv2d";            // Default: "separable_conv2d"; empty as Dense's
  VariableGetter variable_getter;                   // Default: none
};
// activation(pointwise(depthwise(inputs)) + bias): DepthwiseConv2dNative (strides, padding,
// dilation_rate), then a VALID 1x1 Conv2D mixing the channels, as tf.nn.separable_conv2d.
Output SeparableConv2D(const Scope& scope, Input inputs, const SeparableConv2DOptions& options);

struct DepthwiseConv2DOptions {
  Size2D kernel_size;                               // REQUIRES: set
  Size2D strides = 1;                               // Default: 1
  std::string padding = "valid";                    // Default: "valid"
  int64_t depth_multiplier = 1;                     // REQUIRES: > 0. Default: 1
  Size2D dilation_rate = 1;                         // Default: 1 (none)
  Activation activation;                            // Default: none
  bool use_bias = true;                             // Default: true
  initializers::Initializer depthwise_initializer;  // Default: GlorotUniform()
  initializers::Initializer bias_initializer;       // Default: Zeros()
  Regularizer depthwise_regularizer;                // Default: none
  Regularizer bias_regularizer;                     // Default: none
  bool trainable = true;                            // Default: true
  std::string name = "depthwise_conv2d";            // Default: "depthwise_conv2d"; empty as Dense's
  VariableGetter variable_getter;                   // Default: none
};
// activation(DepthwiseConv2dNative(inputs) + bias): output channel c * depth_multiplier + m
// from input channel c.
Output DepthwiseConv2D(const Scope& scope, Input inputs, const DepthwiseConv2DOptions& options);

struct Conv2DTransposeOptions {
  int64_t filters = 0;            // Output channels. REQUIRES: > 0
  Size2D kernel_size;             // REQUIRES: set
  Size2D strides = 1;             // Default: 1
  std::string padding = "valid";  // Default: "valid"
  // Keras' output_padding: extra rows / columns at the bottom / right of the output, each
  // less than its stride. Default: none (Keras' None: the output size rule below).
  std::optional<Size2D> output_padding;
  Size2D dilation_rate = 1;                      // Default: 1 (none)
  Activation activation;                         // Default: none
  bool use_bias = true;                          // Default: true
  initializers::Initializer kernel_initializer;  // Default: GlorotUniform()
  initializers::Initializer bias_initializer;    // Default: Zeros()
  Regularizer kernel_regularizer;                // Default: none
  Regularizer bias_regularizer;                  // Default: none
  bool trainable = true;                         // Default: true
  std::string name = "conv2d_transpose";         // Default: "conv2d_transpose"; empty as Dense's
  VariableGetter variable_getter;                // Default: none
};
// activation(Conv2DTranspose(inputs, kernel) + bias) with Keras' output size per spatial
// dim (conv_utils.deconv_output_length), k' = (k - 1) * dilation + 1 the dilated span:
//   no output_padding: valid: in * stride + max(k' - stride, 0); same: in * stride
//   output_padding p:  (in - 1) * stride + k' - 2 * pad + p, pad = k' / 2 (same) or 0
// computed at run time from the inputs' shape where a dim is unknown (the batch).
Output Conv2DTranspose(const Scope& scope, Input inputs, const Conv2DTransposeOptions& options);

}  // namespace loom::layers

#endif  // LOOM_ESTIMATOR_LAYERS_CONV_VARIANTS_H_
