#ifndef LOOM_OPS_NN_WINDOW_H_
#define LOOM_OPS_NN_WINDOW_H_

// The window geometry shared by Conv2D (nn_conv.cc) and pooling (nn_pool.cc): their
// attributes (ksize, strides, padding; NHWC) and TF's output-size and padding rule.
// Not part of the public API.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::nn_internal {

inline constexpr Attr<std::vector<int64_t>> kStrides{"strides"};
inline constexpr Attr<std::vector<int64_t>> kKsize{"ksize"};
inline constexpr Attr<std::string> kPadding{"padding"};
inline AttrDef PaddingDef() { return kPadding.OneOf({"SAME", "VALID"}); }

// {height, width} from a 2-entry attr or TF's 4-entry NHWC form [1, h, w, 1].
template <typename Ctx>
std::pair<int64_t, int64_t> SpatialAttr(const Ctx& c, const Attr<std::vector<int64_t>>& key) {
  const auto& v = c.attr(key);
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1) {
    c.Fail("attribute '", key.name, "' must be [1, height, width, 1] with positive sizes, got ",
           AttrValueToString(v));
  }
  return {v[1], v[2]};
}

inline std::vector<int64_t> NhwcAttr(const char* what, const std::vector<int64_t>& hw) {
  if (hw.size() == 4) return hw;
  if (hw.size() != 2) {
    throw InvalidArgument(what, " must have 2 entries {height, width}, got ", hw.size());
  }
  return {1, hw[0], hw[1], 1};
}

// The record declares padding one of "SAME" and "VALID".
template <typename Ctx>
bool IsSame(const Ctx& c) {
  return c.attr(kPadding) == "SAME";
}

// TF's GetWindowedOutputSize: the output size and leading padding along one dimension.
// Returns false when a VALID window does not fit.
inline bool WindowedOutput(int64_t in, int64_t k, int64_t stride, bool same, int64_t* out,
                           int64_t* pad_before) {
  if (same) {
    *out = (in + stride - 1) / stride;
    const int64_t pad_total = std::max<int64_t>((*out - 1) * stride + k - in, 0);
    *pad_before = pad_total / 2;
    return true;
  }
  *pad_before = 0;
  *out = in >= k ? (in - k) / stride + 1 : 0;
  return in >= k;
}

// The geometry of one windowed op over NHWC input: window kh x kw, strides, padding.
struct Geometry {
  int64_t batch, in_h, in_w, channels;
  int64_t k_h, k_w, stride_h, stride_w;
  int64_t out_h, out_w, pad_top, pad_left;
};

template <typename Ctx>
Geometry MakeGeometry(const Ctx& c, const Shape& input, int64_t k_h, int64_t k_w) {
  Geometry g{};
  g.batch = input.dim(0);
  g.in_h = input.dim(1);
  g.in_w = input.dim(2);
  g.channels = input.dim(3);
  g.k_h = k_h;
  g.k_w = k_w;
  std::tie(g.stride_h, g.stride_w) = SpatialAttr(c, kStrides);
  const bool same = IsSame(c);
  g.out_h = g.out_w = kUnknownDim;
  if (g.in_h != kUnknownDim && k_h != kUnknownDim &&
      !WindowedOutput(g.in_h, k_h, g.stride_h, same, &g.out_h, &g.pad_top)) {
    c.Fail("input height ", g.in_h, " is smaller than the window height ", k_h,
           " with VALID padding (input shape ", input, ")");
  }
  if (g.in_w != kUnknownDim && k_w != kUnknownDim &&
      !WindowedOutput(g.in_w, k_w, g.stride_w, same, &g.out_w, &g.pad_left)) {
    c.Fail("input width ", g.in_w, " is smaller than the window width ", k_w,
           " with VALID padding (input shape ", input, ")");
  }
  return g;
}

// The gradient op of a windowed op, with the forward node's attributes.
inline Output AddGradOp(const GradContext& g, const OpDef& op, std::vector<Output> inputs) {
  return g.scope().AddNode(op, std::move(inputs), g.node().attrs(), op.name)->output(0);
}

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_NN_WINDOW_H_
