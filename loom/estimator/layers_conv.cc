// Conv2D and the 2-D pooling layers (NHWC).
#include "loom/estimator/layers_internal.h"
#include "loom/ops/nn.h"
#include "loom/ops/space_batch.h"

namespace loom::layers {

using internal::Activate;
using internal::CheckFloatInput;
using internal::MakeVariable;
using internal::NormalizePadding;

namespace {

// options' Conv2D of x by kernel; dilated as TF 1.15's with_space_to_batch: SpaceToBatchND by
// the rate, padded by the dilated kernel's SAME padding (none for VALID) plus what makes each
// dim a multiple of the rate, a VALID Conv2D, and BatchToSpaceND cropping that extra off.
Output DilatedConv2D(const Scope& layer, const Output& x, const Output& kernel,
                     const Conv2DOptions& options, const std::string& padding) {
  const Size2D& rate = options.dilation_rate;
  if (!rate.set()) {
    throw InvalidArgument("layer '", layer.prefix(), "': dilation_rate must be positive, got ",
                          rate.height, "x", rate.width);
  }
  if (rate.height == 1 && rate.width == 1) {
    return loom::Conv2D(layer.WithOpName("Conv2D"), x, kernel,
                        {options.strides.height, options.strides.width}, padding,
                        options.precision);
  }
  if (options.strides.height != 1 || options.strides.width != 1) {
    throw InvalidArgument("layer '", layer.prefix(), "': strides ", options.strides.height, "x",
                          options.strides.width, " with dilation_rate ", rate.height, "x",
                          rate.width,
                          ": strides > 1 are not supported together with a "
                          "dilation_rate > 1 (as in TF)");
  }
  const Shape& in = x.shape();
  if (in.dim(1) == kUnknownDim || in.dim(2) == kUnknownDim) {
    throw InvalidArgument("layer '", layer.prefix(),
                          "': a dilation_rate > 1 needs the inputs' "
                          "height and width known (the SpaceToBatchND paddings are "
                          "attributes), got shape ",
                          in);
  }
  const int64_t sizes[2] = {in.dim(1), in.dim(2)};
  const int64_t taps[2] = {options.kernel_size.height, options.kernel_size.width};
  const std::vector<int64_t> block = {rate.height, rate.width};
  std::vector<std::pair<int64_t, int64_t>> paddings, crops;
  for (int i = 0; i < 2; ++i) {
    const int64_t extra = padding == "SAME" ? (taps[i] - 1) * block[i] : 0;
    const int64_t before = extra / 2, after = extra - before;
    const int64_t fill = (block[i] - (sizes[i] + before + after) % block[i]) % block[i];
    paddings.emplace_back(before, after + fill);
    crops.emplace_back(0, fill);
  }
  Output batched = SpaceToBatchND(layer, x, block, paddings);
  Output conv =
      loom::Conv2D(layer.WithOpName("Conv2D"), batched, kernel, {1, 1}, "VALID", options.precision);
  return BatchToSpaceND(layer, conv, block, crops);
}

}  // namespace

Output Conv2D(const Scope& scope, Input inputs, const Conv2DOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = internal::LayerScope(scope, options.name);
  CheckFloatInput(x, layer.prefix(), 4);
  if (x.shape().rank() != 4) {
    throw InvalidArgument("layer '", layer.prefix(), "': inputs must be NHWC (rank 4), got ",
                          x.shape());
  }
  if (options.filters <= 0 || !options.kernel_size.set() || !options.strides.set()) {
    throw InvalidArgument("layer '", layer.prefix(),
                          "': filters, kernel_size and strides must be positive");
  }
  const int64_t channels = x.shape().dim(3);
  if (channels == kUnknownDim) {
    throw InvalidArgument("layer '", layer.prefix(), "': the channel dim of the inputs (shape ",
                          x.shape(), ") must be known to size the kernel");
  }
  const std::string padding = NormalizePadding(options.padding, layer.prefix());
  Output kernel = MakeVariable(
      layer, "kernel",
      {options.kernel_size.height, options.kernel_size.width, channels, options.filters}, x.dtype(),
      options.kernel_initializer, initializers::GlorotUniform(), options.trainable,
      options.kernel_regularizer, options.variable_getter);
  Output y = DilatedConv2D(layer, x, kernel, options, padding);
  if (options.use_bias) {
    Output bias = MakeVariable(layer, "bias", {options.filters}, x.dtype(),
                               options.bias_initializer, initializers::Zeros(), options.trainable,
                               options.bias_regularizer, options.variable_getter);
    y = BiasAdd(layer.WithOpName("BiasAdd"), y, bias);
  }
  return Activate(layer, options.activation, y);
}

namespace {

template <typename PoolFn>
Output Pool(const Scope& scope, Input inputs, const Pooling2DOptions& options,
            const char* default_name, PoolFn pool) {
  Output x = AsOutput(scope, inputs);
  Scope layer = scope.NewSubScope(options.name.empty() ? default_name : options.name);
  CheckFloatInput(x, layer.prefix(), 4);
  if (!options.pool_size.set()) {
    throw InvalidArgument("layer '", layer.prefix(), "': pool_size must be set and positive");
  }
  const Size2D strides = options.strides.set() ? options.strides : options.pool_size;
  return pool(layer, x, {options.pool_size.height, options.pool_size.width},
              {strides.height, strides.width}, NormalizePadding(options.padding, layer.prefix()));
}

}  // namespace

Output MaxPooling2D(const Scope& scope, Input inputs, const Pooling2DOptions& options) {
  return Pool(
      scope, inputs, options, "max_pooling2d",
      [](const Scope& s, Output x, const std::vector<int64_t>& k, const std::vector<int64_t>& st,
         const std::string& p) { return MaxPool(s.WithOpName("MaxPool"), x, k, st, p); });
}

Output AveragePooling2D(const Scope& scope, Input inputs, const Pooling2DOptions& options) {
  return Pool(
      scope, inputs, options, "average_pooling2d",
      [](const Scope& s, Output x, const std::vector<int64_t>& k, const std::vector<int64_t>& st,
         const std::string& p) { return AvgPool(s.WithOpName("AvgPool"), x, k, st, p); });
}

}  // namespace loom::layers
