// SeparableConv2D, DepthwiseConv2D and Conv2DTranspose (layers_conv_variants.h), NHWC.
#include "loom/estimator/layers_conv_variants.h"

#include <algorithm>
#include <vector>

#include "loom/estimator/layers_internal.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_conv_transpose.h"
#include "loom/ops/nn_depthwise.h"

namespace loom::layers {
namespace {

using internal::Activate;
using internal::MakeVariable;

// The checks every layer here shares: NHWC float inputs with a known channel dim, a set
// kernel size, positive strides and dilation rate. Returns the channel count.
int64_t CheckImageLayer(const Output& x, const Scope& layer, const Size2D& kernel_size,
                        const Size2D& strides, const Size2D& dilation_rate) {
  internal::CheckFloatInput(x, layer.prefix(), 4);
  if (x.shape().rank() != 4) {
    throw InvalidArgument("layer '", layer.prefix(), "': inputs must be NHWC (rank 4), got ",
                          x.shape(), "; channels_first (NCHW) inputs need a Transpose first");
  }
  if (!kernel_size.set() || !strides.set() || !dilation_rate.set()) {
    throw InvalidArgument("layer '", layer.prefix(),
                          "': kernel_size, strides and dilation_rate must be positive, got ",
                          kernel_size.height, "x", kernel_size.width, ", ", strides.height, "x",
                          strides.width, " and ", dilation_rate.height, "x", dilation_rate.width);
  }
  const int64_t channels = x.shape().dim(3);
  if (channels == kUnknownDim) {
    throw InvalidArgument("layer '", layer.prefix(), "': the channel dim of the inputs (shape ",
                          x.shape(), ") must be known to size the kernel");
  }
  return channels;
}

void CheckPositive(const Scope& layer, const char* what, int64_t value) {
  if (value <= 0) {
    throw InvalidArgument("layer '", layer.prefix(), "': ", what, " must be positive, got ", value);
  }
}

Output AddBias(const Scope& layer, Output y, bool use_bias, int64_t size, DType dtype,
               const initializers::Initializer& init, const Regularizer& regularizer,
               bool trainable, const VariableGetter& getter) {
  if (!use_bias) return y;
  Output bias = MakeVariable(layer, "bias", {size}, dtype, init, initializers::Zeros(), trainable,
                             regularizer, getter);
  return BiasAdd(layer.WithOpName("BiasAdd"), y, bias);
}

// Keras' conv_utils.deconv_output_length as out = in * stride + offset: the offset for one
// spatial dim (layers_conv_variants.h gives the rule).
int64_t DeconvOffset(int64_t k, int64_t stride, int64_t dilation, bool same,
                     const std::optional<int64_t>& output_padding) {
  const int64_t span = (k - 1) * dilation + 1;
  if (!output_padding) return same ? 0 : std::max<int64_t>(span - stride, 0);
  const int64_t pad = same ? span / 2 : 0;
  return span - stride - 2 * pad + *output_padding;
}

}  // namespace

Output SeparableConv2D(const Scope& scope, Input inputs, const SeparableConv2DOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = internal::LayerScope(scope, options.name);
  const int64_t channels =
      CheckImageLayer(x, layer, options.kernel_size, options.strides, options.dilation_rate);
  CheckPositive(layer, "filters", options.filters);
  CheckPositive(layer, "depth_multiplier", options.depth_multiplier);
  const std::string padding = internal::NormalizePadding(options.padding, layer.prefix());
  const int64_t multiplier = options.depth_multiplier;
  Output depthwise_kernel =
      MakeVariable(layer, "depthwise_kernel",
                   {options.kernel_size.height, options.kernel_size.width, channels, multiplier},
                   x.dtype(), options.depthwise_initializer, initializers::GlorotUniform(),
                   options.trainable, options.depthwise_regularizer, options.variable_getter);
  Output pointwise_kernel =
      MakeVariable(layer, "pointwise_kernel", {1, 1, channels * multiplier, options.filters},
                   x.dtype(), options.pointwise_initializer, initializers::GlorotUniform(),
                   options.trainable, options.pointwise_regularizer, options.variable_getter);
  Scope op = layer.NewSubScope("separable_conv2d");
  Output depthwise =
      DepthwiseConv2dNative(op.WithOpName("depthwise"), x, depthwise_kernel,
                            {options.strides.height, options.strides.width}, padding,
                            {options.dilation_rate.height, options.dilation_rate.width});
  Output y = loom::Conv2D(op.WithOpName("Conv2D"), depthwise, pointwise_kernel, {1, 1}, "VALID");
  y = AddBias(layer, y, options.use_bias, options.filters, x.dtype(), options.bias_initializer,
              options.bias_regularizer, options.trainable, options.variable_getter);
  return Activate(layer, options.activation, y);
}

Output DepthwiseConv2D(const Scope& scope, Input inputs, const DepthwiseConv2DOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = internal::LayerScope(scope, options.name);
  const int64_t channels =
      CheckImageLayer(x, layer, options.kernel_size, options.strides, options.dilation_rate);
  CheckPositive(layer, "depth_multiplier", options.depth_multiplier);
  const std::string padding = internal::NormalizePadding(options.padding, layer.prefix());
  Output kernel = MakeVariable(
      layer, "depthwise_kernel",
      {options.kernel_size.height, options.kernel_size.width, channels, options.depth_multiplier},
      x.dtype(), options.depthwise_initializer, initializers::GlorotUniform(), options.trainable,
      options.depthwise_regularizer, options.variable_getter);
  Output y = DepthwiseConv2dNative(layer.WithOpName("depthwise"), x, kernel,
                                   {options.strides.height, options.strides.width}, padding,
                                   {options.dilation_rate.height, options.dilation_rate.width});
  y = AddBias(layer, y, options.use_bias, channels * options.depth_multiplier, x.dtype(),
              options.bias_initializer, options.bias_regularizer, options.trainable,
              options.variable_getter);
  return Activate(layer, options.activation, y);
}

Output Conv2DTranspose(const Scope& scope, Input inputs, const Conv2DTransposeOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = internal::LayerScope(scope, options.name);
  const int64_t channels =
      CheckImageLayer(x, layer, options.kernel_size, options.strides, options.dilation_rate);
  CheckPositive(layer, "filters", options.filters);
  const std::string padding = internal::NormalizePadding(options.padding, layer.prefix());
  const bool same = padding == "SAME";
  const Size2D& k = options.kernel_size;
  const Size2D& st = options.strides;
  const Size2D& d = options.dilation_rate;
  std::optional<int64_t> pad_h, pad_w;
  if (options.output_padding) {
    pad_h = options.output_padding->height;
    pad_w = options.output_padding->width;
    if (*pad_h < 0 || *pad_w < 0 || *pad_h >= st.height || *pad_w >= st.width) {
      throw InvalidArgument("layer '", layer.prefix(), "': output_padding ", *pad_h, "x", *pad_w,
                            " must be non-negative and less than the strides ", st.height, "x",
                            st.width, " (as Keras requires)");
    }
  }
  const int64_t offset_h = DeconvOffset(k.height, st.height, d.height, same, pad_h);
  const int64_t offset_w = DeconvOffset(k.width, st.width, d.width, same, pad_w);
  Output kernel =
      MakeVariable(layer, "kernel", {k.height, k.width, options.filters, channels}, x.dtype(),
                   options.kernel_initializer, initializers::GlorotUniform(), options.trainable,
                   options.kernel_regularizer, options.variable_getter);
  // output_shape [batch, H, W, filters]: constants where the inputs' dims are known, else
  // computed from ShapeOf at run time (Conv2DTranspose's shape rule keeps the known ones).
  const Shape& in = x.shape();
  std::vector<Output> parts;
  if (in.dim(0) != kUnknownDim && in.dim(1) != kUnknownDim && in.dim(2) != kUnknownDim) {
    parts.push_back(Const(layer,
                          std::vector<int64_t>{in.dim(0), in.dim(1) * st.height + offset_h,
                                               in.dim(2) * st.width + offset_w},
                          {3}));
  } else {
    Output shape = ShapeOf(layer, x);
    parts.push_back(Slice(layer, shape, {0}, {1}));
    if (in.dim(1) != kUnknownDim && in.dim(2) != kUnknownDim) {
      parts.push_back(Const(
          layer,
          std::vector<int64_t>{in.dim(1) * st.height + offset_h, in.dim(2) * st.width + offset_w},
          {2}));
    } else {
      parts.push_back(Add(layer,
                          Mul(layer, Slice(layer, shape, {1}, {2}),
                              Const(layer, std::vector<int64_t>{st.height, st.width}, {2})),
                          Const(layer, std::vector<int64_t>{offset_h, offset_w}, {2})));
    }
  }
  parts.push_back(Const(layer, std::vector<int64_t>{options.filters}, {1}));
  Output output_shape = Concat(layer, parts, 0);
  Output y = loom::Conv2DTranspose(layer.WithOpName("conv2d_transpose"), x, kernel, output_shape,
                                   {st.height, st.width}, padding, {d.height, d.width});
  y = AddBias(layer, y, options.use_bias, options.filters, x.dtype(), options.bias_initializer,
              options.bias_regularizer, options.trainable, options.variable_getter);
  return Activate(layer, options.activation, y);
}

}  // namespace loom::layers
