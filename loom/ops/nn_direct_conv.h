#ifndef LOOM_OPS_NN_DIRECT_CONV_H_
#define LOOM_OPS_NN_DIRECT_CONV_H_

// The tap walk of the direct-loop convolution kernels (nn_depthwise.cc,
// nn_conv_transpose.cc, nn_pool_argmax.cc), and the filter dilation of the first two (TF's
// `dilations` attribute). Not part of the public API.
#include <cstdint>
#include <vector>

#include "loom/ops/nn_window.h"

namespace loom::nn_internal {

// A filter's dilation: tap (kh, kw) of output position (oh, ow) reads input row
// oh * stride_h + kh * h - pad_top and column ow * stride_w + kw * w - pad_left. {1, 1}: none.
struct Dilation {
  int64_t h = 1;
  int64_t w = 1;
};

// TF's `dilations` attribute, [1, h, w, 1]; absent (graphs written before it) means none.
inline constexpr Attr<std::vector<int64_t>> kDilations{"dilations"};
inline AttrDef DilationsDef() { return kDilations.Default(std::vector<int64_t>{1, 1, 1, 1}); }

template <typename Ctx>
Dilation DilationOf(const Ctx& c) {
  const auto [h, w] = SpatialAttr(c, kDilations);
  return {h, w};
}

// The span (k - 1) * rate + 1 of a k-tap filter dilated by rate; unknown stays unknown.
inline int64_t DilatedSize(int64_t k, int64_t rate) {
  return k == kUnknownDim || k <= 0 ? k : (k - 1) * rate + 1;
}

// MakeGeometry for a k_h x k_w filter dilated by d: the output size and padding of a window
// of the dilated span (as TF's GetWindowedOutputSizeVerboseV2), the filter's own k_h, k_w.
template <typename Ctx>
Geometry MakeDilatedGeometry(const Ctx& c, const Shape& input, int64_t k_h, int64_t k_w,
                             Dilation d) {
  Geometry g = MakeGeometry(c, input, DilatedSize(k_h, d.h), DilatedSize(k_w, d.w));
  g.k_h = k_h;
  g.k_w = k_w;
  return g;
}

// Calls fn(kh, kw, ih, iw) for every filter tap of output position (oh, ow) that lands inside
// the image (padding contributes zeros, so it is skipped).
template <typename Fn>
void ForEachTap(const Geometry& g, int64_t oh, int64_t ow, const Fn& fn, Dilation d = {}) {
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    const int64_t ih = oh * g.stride_h + kh * d.h - g.pad_top;
    if (ih < 0 || ih >= g.in_h) continue;
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const int64_t iw = ow * g.stride_w + kw * d.w - g.pad_left;
      if (iw < 0 || iw >= g.in_w) continue;
      fn(kh, kw, ih, iw);
    }
  }
}

// Calls fn(b, oh, ow, ih, iw) for every output position whose window puts tap (kh, kw)
// inside the image: the positions a filter gradient at that tap sums over.
template <typename Fn>
void ForEachPositionOfTap(const Geometry& g, int64_t kh, int64_t kw, const Fn& fn,
                          Dilation d = {}) {
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const int64_t ih = oh * g.stride_h + kh * d.h - g.pad_top;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t iw = ow * g.stride_w + kw * d.w - g.pad_left;
        if (iw < 0 || iw >= g.in_w) continue;
        fn(b, oh, ow, ih, iw);
      }
    }
  }
}

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_NN_DIRECT_CONV_H_
