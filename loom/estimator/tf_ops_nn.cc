// TF op rules (tf_ops.h) for the convolutions beyond Conv2D (tf_ops.cc):
// DepthwiseConv2dNative, which tf.nn.depthwise_conv2d and tf.nn.separable_conv2d leave in a
// frozen graph, and Conv2DBackpropInput, tf.nn.conv2d_transpose's op (Loom's
// Conv2DTranspose: TF's input_sizes is its output_shape, a constant or computed), and
// SpaceToBatchND / BatchToSpaceND, which TF 1.15 wraps around a dilated convolution, and
// MaxPoolWithArgmax.
#include "loom/estimator/tf_ops_internal.h"
#include "loom/ops/nn_conv_transpose.h"
#include "loom/ops/nn_depthwise.h"
#include "loom/ops/nn_pool_argmax.h"
#include "loom/ops/space_batch.h"

namespace loom::tf_import {
namespace {

// Input 2 of SpaceToBatchND / BatchToSpaceND: a constant [M, 2] of {before, after} pairs.
std::vector<std::pair<int64_t, int64_t>> Pairs(const OpContext& c) {
  const std::vector<int64_t> flat = c.ConstInts(2);
  if (flat.size() % 2 != 0) {
    throw InvalidArgument(c.source, ": TF node '", c.node.name(), "' (", c.node.op(),
                          "): input 2 must be [M, 2] {before, after} pairs, has ", flat.size(),
                          " values");
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < flat.size(); i += 2) out.emplace_back(flat[i], flat[i + 1]);
  return out;
}

// The node's `dilations` [1, h, w, 1]; [1, 1, 1, 1] when absent (graphs from before TF had it).
// The op's builder checks the values and names the node.
std::vector<int64_t> Dilations(const OpContext& c) {
  if (c.node.attr().count("dilations") == 0) return {1, 1, 1, 1};
  return c.AttrInts("dilations");
}

}  // namespace

void AddNnRules(std::map<std::string, TfOp>& table) {
  const std::map<std::string, TfOp> rules = {
      {"DepthwiseConv2dNative",
       [](OpContext& c) {
         c.RequireNhwc();
         return DepthwiseConv2dNative(c.named, c.In(0), c.In(1), c.AttrInts("strides"),
                                      c.Attr("padding").s(), Dilations(c));
       }},
      {"Conv2DBackpropInput",
       [](OpContext& c) {
         c.RequireNhwc();
         return Conv2DTranspose(c.named, c.In(2), c.In(1), c.In(0), c.AttrInts("strides"),
                                c.Attr("padding").s(), Dilations(c));
       }},
      // (output, argmax): output 1 of the node is the argmax, in Targmax (int64 by default).
      {"MaxPoolWithArgmax",
       [](OpContext& c) {
         const DType targmax = c.node.attr().count("Targmax")
                                   ? DTypeFromTf(c.node.attr().at("Targmax").type(), c.node.name())
                                   : kInt64;
         return MaxPoolWithArgmax(
                    c.named, c.In(0), c.AttrInts("ksize"), c.AttrInts("strides"),
                    c.Attr("padding").s(),
                    {.argmax_dtype = targmax,
                     .include_batch_in_index = c.AttrB("include_batch_in_index", false)})
             .output;
       }},
      {"SpaceToBatchND",
       [](OpContext& c) { return SpaceToBatchND(c.named, c.In(0), c.ConstInts(1), Pairs(c)); }},
      {"BatchToSpaceND",
       [](OpContext& c) { return BatchToSpaceND(c.named, c.In(0), c.ConstInts(1), Pairs(c)); }},
  };
  table.insert(rules.begin(), rules.end());
}

}  // namespace loom::tf_import
