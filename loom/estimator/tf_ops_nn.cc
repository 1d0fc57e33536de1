// TF op rules (tf_ops.h) for the convolutions beyond Conv2D (tf_ops.cc):
// DepthwiseConv2dNative, which tf.nn.depthwise_conv2d and tf.nn.separable_conv2d leave in a
// frozen graph, and Conv2DBackpropInput, tf.nn.conv2d_transpose's op (Loom's
// Conv2DTranspose: TF's input_sizes is its output_shape, a constant or computed).
#include "loom/estimator/tf_ops_internal.h"
#include "loom/ops/nn_conv_transpose.h"
#include "loom/ops/nn_depthwise.h"

namespace loom::tf_import {

void AddNnRules(std::map<std::string, TfOp>& table) {
  const std::map<std::string, TfOp> rules = {
      {"DepthwiseConv2dNative",
       [](OpContext& c) {
         c.RequireNhwc();
         c.RequireNoDilations();
         return DepthwiseConv2dNative(c.named, c.In(0), c.In(1), c.AttrInts("strides"),
                                      c.Attr("padding").s());
       }},
      {"Conv2DBackpropInput",
       [](OpContext& c) {
         c.RequireNhwc();
         c.RequireNoDilations();
         return Conv2DTranspose(c.named, c.In(2), c.In(1), c.In(0), c.AttrInts("strides"),
                                c.Attr("padding").s());
       }},
  };
  table.insert(rules.begin(), rules.end());
}

}  // namespace loom::tf_import
