#ifndef LOOM_OPS_NN_DIRECT_CONV_H_
#define LOOM_OPS_NN_DIRECT_CONV_H_

// The tap walk of the direct-loop convolution kernels (nn_depthwise.cc,
// nn_conv_transpose.cc). Not part of the public API.
#include <cstdint>

#include "loom/ops/nn_window.h"

namespace loom::nn_internal {

// Calls fn(kh, kw, ih, iw) for every filter tap of output position (oh, ow) that lands inside
// the image (padding contributes zeros, so it is skipped).
template <typename Fn>
void ForEachTap(const Geometry& g, int64_t oh, int64_t ow, const Fn& fn) {
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    const int64_t ih = oh * g.stride_h + kh - g.pad_top;
    if (ih < 0 || ih >= g.in_h) continue;
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      const int64_t iw = ow * g.stride_w + kw - g.pad_left;
      if (iw < 0 || iw >= g.in_w) continue;
      fn(kh, kw, ih, iw);
    }
  }
}

// Calls fn(b, oh, ow, ih, iw) for every output position whose window puts tap (kh, kw)
// inside the image: the positions a filter gradient at that tap sums over.
template <typename Fn>
void ForEachPositionOfTap(const Geometry& g, int64_t kh, int64_t kw, const Fn& fn) {
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const int64_t ih = oh * g.stride_h + kh - g.pad_top;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t iw = ow * g.stride_w + kw - g.pad_left;
        if (iw < 0 || iw >= g.in_w) continue;
        fn(b, oh, ow, ih, iw);
      }
    }
  }
}

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_NN_DIRECT_CONV_H_
