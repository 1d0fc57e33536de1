#ifndef LOOM_OPS_ONEDNN_DEPTHWISE_H_
#define LOOM_OPS_ONEDNN_DEPTHWISE_H_

// Float32 DepthwiseConv2dNative and its two backprops (nn_depthwise.h) through oneDNN's
// grouped convolution with groups = channels, the path PyTorch's CPU depthwise convolution
// takes; and the dilated dense convolution passes that Conv2DTranspose needs
// (nn_conv_transpose.h), which onednn_conv.h's geometry (no dilation) cannot express.
// Internal to the ops layer.
//
// Loom's tensors stay NHWC (activations, which oneDNN reads and writes in place) and
// [kh, kw, C, M] (the filter, which is oneDNN's grouped weights [G = C, O = M, I = 1, kh, kw]
// with strides, reordered per call into the layout the primitive chooses: a small copy).
// Output channel g * M + o of oneDNN's grouped convolution is TF's c * M + m. The dilation
// is oneDNN's `dilates` (rate - 1); TF's SAME padding puts the odd row / column after the
// image, as onednn_internal.h's MakeConvDescs does for Conv2D.
//
// Each function returns false, having written nothing it promises, when oneDNN has no
// primitive for the geometry; the caller then runs its direct loops. `threads` is the
// OpenMP thread count oneDNN uses for this call (the Session's intra-op count).
// Thread-safety: all functions are thread-safe.
#include <cstdint>
#include <string>

#include "loom/ops/nn_direct_conv.h"
#include "loom/ops/nn_window.h"

namespace loom::nn_internal {

// A depthwise convolution's shape: Conv2D's geometry (k_h, k_w the filter's own taps), the
// channel multiplier M and the dilation.
struct DepthwiseShape {
  Geometry g;
  int64_t multiplier;
  Dilation dilation;
  int64_t out_channels() const { return g.channels * multiplier; }
};

// y[N, oh, ow, C * M] from x[N, H, W, C] and w[kh, kw, C, M].
bool OnednnDepthwise(const DepthwiseShape& d, const float* x, const float* w, float* y,
                     int threads);
// dx[N, H, W, C] from w and dy[N, oh, ow, C * M].
bool OnednnDepthwiseBackpropInput(const DepthwiseShape& d, const float* w, const float* dy,
                                  float* dx, int threads);
// dw[kh, kw, C, M] from x and dy.
bool OnednnDepthwiseBackpropFilter(const DepthwiseShape& d, const float* x, const float* dy,
                                   float* dw, int threads);

// The oneDNN implementation each pass runs for `d` ("jit_dw:avx512_core", ...), or "" when
// oneDNN has none: for tests and benchmarks. pass: 0 forward, 1 input, 2 filter backprop.
std::string OnednnDepthwiseImpl(const DepthwiseShape& d, int pass, int threads);

// A dense Conv2D's backprops with the filter dilated by d, as onednn_conv.h's
// OnednnConv2DBackpropInput / ...Filter (geometry g from x[N, H, W, C] to dy[N, oh, ow, out_c],
// g.k_h, g.k_w the filter's own taps, w [kh, kw, C, out_c]).
bool OnednnDilatedConv2DBackpropInput(const Geometry& g, int64_t out_c, Dilation d, const float* w,
                                      const float* dy, float* dx, int threads);
bool OnednnDilatedConv2DBackpropFilter(const Geometry& g, int64_t out_c, Dilation d, const float* x,
                                       const float* dy, float* dw, int threads);
// As OnednnDepthwiseImpl.
std::string OnednnDilatedConv2DImpl(const Geometry& g, int64_t out_c, Dilation d, int pass,
                                    int threads);

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_ONEDNN_DEPTHWISE_H_
