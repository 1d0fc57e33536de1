// tf.layers' separable_conv2d and conv2d_transpose, and tf.keras.layers.DepthwiseConv2D,
// over layers_conv_variants.h. Arguments arrive as bind_model_parts.cc's file comment says;
// every builder takes the graph and the package's current name scope (`prefix`). The Python
// side (loom/compat/v1/layers.py) applies the activation.
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "loom/estimator/layers_conv_variants.h"
#include "python/src/bind_util.h"
#include "python/src/core.h"

namespace py = pybind11;

namespace loom::python {

void BindConvLayers(py::module_& m) {
  m.def(
      "layers_separable_conv2d",
      [](Graph& g, const std::string& prefix, Output inputs, int64_t filters,
         const py::object& kernel_size, const py::object& strides, std::string padding,
         const py::object& dilation_rate, int64_t depth_multiplier, bool use_bias,
         const py::object& depthwise_initializer, const py::object& pointwise_initializer,
         const py::object& bias_initializer, const py::object& depthwise_regularizer,
         const py::object& pointwise_regularizer, const py::object& bias_regularizer,
         bool trainable, std::string name, const py::object& variable_getter) {
        return layers::SeparableConv2D(
            MakeScope(g, prefix), inputs,
            {.filters = filters,
             .kernel_size = ToSize(kernel_size),
             .strides = ToSize(strides),
             .padding = std::move(padding),
             .dilation_rate = ToSize(dilation_rate),
             .depth_multiplier = depth_multiplier,
             .use_bias = use_bias,
             .depthwise_initializer = ToInitializer(depthwise_initializer),
             .pointwise_initializer = ToInitializer(pointwise_initializer),
             .bias_initializer = ToInitializer(bias_initializer),
             .depthwise_regularizer = ToRegularizer(depthwise_regularizer),
             .pointwise_regularizer = ToRegularizer(pointwise_regularizer),
             .bias_regularizer = ToRegularizer(bias_regularizer),
             .trainable = trainable,
             .name = std::move(name),
             .variable_getter = ToVariableGetter(variable_getter)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("filters"),
      py::arg("kernel_size"), py::arg("strides"), py::arg("padding"), py::arg("dilation_rate"),
      py::arg("depth_multiplier"), py::arg("use_bias"), py::arg("depthwise_initializer"),
      py::arg("pointwise_initializer"), py::arg("bias_initializer"),
      py::arg("depthwise_regularizer"), py::arg("pointwise_regularizer"),
      py::arg("bias_regularizer"), py::arg("trainable"), py::arg("name"),
      py::arg("variable_getter"));
  m.def(
      "layers_depthwise_conv2d",
      [](Graph& g, const std::string& prefix, Output inputs, const py::object& kernel_size,
         const py::object& strides, std::string padding, int64_t depth_multiplier,
         const py::object& dilation_rate, bool use_bias, const py::object& depthwise_initializer,
         const py::object& bias_initializer, const py::object& depthwise_regularizer,
         const py::object& bias_regularizer, bool trainable, std::string name,
         const py::object& variable_getter) {
        return layers::DepthwiseConv2D(
            MakeScope(g, prefix), inputs,
            {.kernel_size = ToSize(kernel_size),
             .strides = ToSize(strides),
             .padding = std::move(padding),
             .depth_multiplier = depth_multiplier,
             .dilation_rate = ToSize(dilation_rate),
             .use_bias = use_bias,
             .depthwise_initializer = ToInitializer(depthwise_initializer),
             .bias_initializer = ToInitializer(bias_initializer),
             .depthwise_regularizer = ToRegularizer(depthwise_regularizer),
             .bias_regularizer = ToRegularizer(bias_regularizer),
             .trainable = trainable,
             .name = std::move(name),
             .variable_getter = ToVariableGetter(variable_getter)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("kernel_size"),
      py::arg("strides"), py::arg("padding"), py::arg("depth_multiplier"), py::arg("dilation_rate"),
      py::arg("use_bias"), py::arg("depthwise_initializer"), py::arg("bias_initializer"),
      py::arg("depthwise_regularizer"), py::arg("bias_regularizer"), py::arg("trainable"),
      py::arg("name"), py::arg("variable_getter"));
  m.def(
      "layers_conv2d_transpose",
      [](Graph& g, const std::string& prefix, Output inputs, int64_t filters,
         const py::object& kernel_size, const py::object& strides, std::string padding,
         const py::object& output_padding, const py::object& dilation_rate, bool use_bias,
         const py::object& kernel_initializer, const py::object& bias_initializer,
         const py::object& kernel_regularizer, const py::object& bias_regularizer, bool trainable,
         std::string name, const py::object& variable_getter) {
        std::optional<layers::Size2D> pad;
        if (!output_padding.is_none()) pad = ToSize(output_padding);
        return layers::Conv2DTranspose(MakeScope(g, prefix), inputs,
                                       {.filters = filters,
                                        .kernel_size = ToSize(kernel_size),
                                        .strides = ToSize(strides),
                                        .padding = std::move(padding),
                                        .output_padding = pad,
                                        .dilation_rate = ToSize(dilation_rate),
                                        .use_bias = use_bias,
                                        .kernel_initializer = ToInitializer(kernel_initializer),
                                        .bias_initializer = ToInitializer(bias_initializer),
                                        .kernel_regularizer = ToRegularizer(kernel_regularizer),
                                        .bias_regularizer = ToRegularizer(bias_regularizer),
                                        .trainable = trainable,
                                        .name = std::move(name),
                                        .variable_getter = ToVariableGetter(variable_getter)});
      },
      py::arg("graph"), py::arg("prefix"), py::arg("inputs"), py::arg("filters"),
      py::arg("kernel_size"), py::arg("strides"), py::arg("padding"), py::arg("output_padding"),
      py::arg("dilation_rate"), py::arg("use_bias"), py::arg("kernel_initializer"),
      py::arg("bias_initializer"), py::arg("kernel_regularizer"), py::arg("bias_regularizer"),
      py::arg("trainable"), py::arg("name"), py::arg("variable_getter"));
}

}  // namespace loom::python
