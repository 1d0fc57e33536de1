// The ONNX export's rules for the convolutions beyond Conv2D (onnx_ops.cc): the depthwise
// convolution as a grouped Conv, the transposed one as ConvTranspose. docs/onnx.md lists
// every mapping.
#include <algorithm>
#include <array>

#include "loom/estimator/onnx_builder.h"
#include "loom/estimator/onnx_ops_internal.h"
#include "loom/graph/op_def.h"
#include "loom/graph/scope.h"

namespace loom::onnx_export {
namespace {

bool Dilated(const Node& n) {
  const auto d = Spatial(n.attr<std::vector<int64_t>>("dilations"));
  return d[0] != 1 || d[1] != 1;
}

// A depthwise convolution needs its channel count (ONNX's group) and filter known; a
// dilated SAME one its height, width and filter size too (its pads are explicit: ONNX
// Runtime refuses auto_pad SAME_UPPER with dilations).
std::string NeedsStaticChannels(const Node& n) {
  if (std::string why = NeedsRank4(n); !why.empty()) return why;
  const Shape& x = n.input(0).shape();
  const Shape& f = n.input(1).shape();
  if (x.dim(3) == kUnknownDim || !f.rank_known() || f.dim(3) == kUnknownDim) {
    return "the input's channel count and the filter's channel multiplier must be known "
           "(they give ONNX Conv's group and weight shape)";
  }
  if (Dilated(n) && n.attr<std::string>("padding") == "SAME" &&
      (x.dim(1) == kUnknownDim || x.dim(2) == kUnknownDim || f.dim(0) == kUnknownDim ||
       f.dim(1) == kUnknownDim)) {
    return "a dilated SAME depthwise convolution needs the input's height and width and the "
           "filter's size known (its ONNX pads are explicit: ONNX Runtime pads a dilated Conv "
           "only so)";
  }
  return "";
}

// TF's SAME padding (before, after) of a window spanning `span` inputs at `stride`.
std::array<int64_t, 2> SamePads(int64_t in, int64_t span, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + span - in, 0);
  return {total / 2, total - total / 2};
}

// Conv2DTranspose's output_shape when it is a constant, else nullptr.
const Tensor* ConstOutputShape(const Node& n) {
  const Node& producer = *n.input(2).node;
  return producer.op_def().role == OpRole::kConst ? &producer.attr(kConstValue) : nullptr;
}

std::string NeedsStaticTranspose(const Node& n) {
  const Shape& f = n.input(1).shape();
  if (ConstOutputShape(n) == nullptr || !f.fully_defined()) {
    return "its output_shape must be a constant and its filter's shape known (they give "
           "ONNX ConvTranspose's pads and output_padding)";
  }
  return "";
}

// TF's SAME / VALID padding of the Conv2D from `in` to its output along one dimension, as
// ConvTranspose's (pad_begin, pad_end, output_padding): ONNX's output size s * (out - 1) +
// output_padding + k - pad_begin - pad_end must give `in` back, the rows no window reaches
// (VALID's remainder, or SAME with k < s) being the output_padding.
std::array<int64_t, 3> TransposePads(int64_t in, int64_t k, int64_t s, bool same) {
  const int64_t out = same ? (in + s - 1) / s : (in - k) / s + 1;
  const int64_t total = same ? std::max<int64_t>((out - 1) * s + k - in, 0) : 0;
  return {total / 2, total - total / 2, in - ((out - 1) * s + k - total)};
}

}  // namespace

void AddConvFamilyRules(std::map<std::string, OpRule>& r) {
  r["DepthwiseConv2dNative"] = {
      .unsupported = NeedsStaticChannels, .convert = [](OnnxBuilder& b, const Node& n) {
        // Loom: filter [kh, kw, C, M], output channel c * M + m; ONNX: Conv with group = C,
        // whose weight [C * M, 1, kh, kw] gives group c the output channels c * M ... c * M +
        // M - 1: the filter reshaped to [kh, kw, 1, C * M] and transposed.
        const int64_t channels = n.input(0).shape().dim(3);
        const int64_t multiplier = n.input(1).shape().dim(3);
        const std::string flat =
            b.Op(n, "Reshape",
                 {b.In(n, 1), b.Int64s(n, "filter_shape", {0, 0, 1, channels * multiplier})},
                 "filter_flat");
        const std::string w = b.Op(n, "Transpose", {flat}, "filter_oihw", [](auto* p) {
          SetInts(p, "perm", {3, 2, 0, 1});
        });
        const auto strides = Spatial(n.attr<std::vector<int64_t>>("strides"));
        const auto dilations = Spatial(n.attr<std::vector<int64_t>>("dilations"));
        const std::string y = b.Op(n, "Conv", {ToNchw(b, n, b.In(n, 0)), w}, "conv", [&](auto* p) {
          const Shape& f = n.input(1).shape();
          if (!Dilated(n)) {
            SetString(p, "auto_pad", AutoPad(n));
          } else if (n.attr<std::string>("padding") == "SAME") {
            // TF's SAME pads for the dilated span (k - 1) * d + 1, written out.
            const Shape& x = n.input(0).shape();
            const auto h = SamePads(x.dim(1), (f.dim(0) - 1) * dilations[0] + 1, strides[0]);
            const auto w = SamePads(x.dim(2), (f.dim(1) - 1) * dilations[1] + 1, strides[1]);
            SetInts(p, "pads", {h[0], w[0], h[1], w[1]});
          }  // dilated VALID: ONNX's default, no pads
          SetInts(p, "strides", strides);
          SetInts(p, "dilations", dilations);
          SetInt(p, "group", channels);
          if (f.dim(0) >= 0 && f.dim(1) >= 0) SetInts(p, "kernel_shape", {f.dim(0), f.dim(1)});
        });
        EmitFromNchw(b, n, y);
      }};
  r["Conv2DTranspose"] = {
      .unsupported = NeedsStaticTranspose, .convert = [](OnnxBuilder& b, const Node& n) {
        // Loom's filter [kh, kw, C, K] is ConvTranspose's weight [K, C, kh, kw] transposed.
        const Tensor& shape = *ConstOutputShape(n);
        auto dim = [&](int i) {
          return shape.dtype() == kInt32 ? int64_t{shape.data<int32_t>()[i]}
                                         : shape.data<int64_t>()[i];
        };
        const Shape& f = n.input(1).shape();
        const auto strides = Spatial(n.attr<std::vector<int64_t>>("strides"));
        const auto dilations = Spatial(n.attr<std::vector<int64_t>>("dilations"));
        const bool same = n.attr<std::string>("padding") == "SAME";
        // ConvTranspose's output size counts the dilated span (k - 1) * d + 1.
        const auto h = TransposePads(dim(1), (f.dim(0) - 1) * dilations[0] + 1, strides[0], same);
        const auto w = TransposePads(dim(2), (f.dim(1) - 1) * dilations[1] + 1, strides[1], same);
        const std::string weight = b.Op(n, "Transpose", {b.In(n, 1)}, "filter_oihw", [](auto* p) {
          SetInts(p, "perm", {3, 2, 0, 1});
        });
        const std::string y = b.Op(n, "ConvTranspose", {ToNchw(b, n, b.In(n, 0)), weight},
                                   "conv_transpose", [&](auto* p) {
                                     SetInts(p, "strides", strides);
                                     SetInts(p, "dilations", dilations);
                                     SetInts(p, "kernel_shape", {f.dim(0), f.dim(1)});
                                     SetInts(p, "pads", {h[0], w[0], h[1], w[1]});
                                     SetInts(p, "output_padding", {h[2], w[2]});
                                   });
        EmitFromNchw(b, n, y);
      }};
}

}  // namespace loom::onnx_export
