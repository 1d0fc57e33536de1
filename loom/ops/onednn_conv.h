#ifndef LOOM_OPS_ONEDNN_CONV_H_
#define LOOM_OPS_ONEDNN_CONV_H_

// Float32 Conv2D and its two backprops through oneDNN's convolution primitives (Debian's
// libdnnl 2.6), the path PyTorch's CPU convolutions take. Internal to the ops layer.
//
// Why oneDNN and not im2col + GEMM (measured side by side, bench/RESULTS.md, docs/engine.md):
// oneDNN's direct kernels work on channel-blocked layouts (nChw8c on AVX2, nChw16c on
// AVX-512) and never materialize the k_h*k_w-times larger im2col matrix, so on the
// convnet's 5x5 layers the forward pass runs at about twice the speed of im2col + OpenBLAS
// and the input gradient needs no col2im. oneDNN picks its kernel (AVX2, AVX-512, AMX) from
// the CPU at run time, so one build runs everywhere.
//
// Loom's tensors stay NHWC / HWIO: each call reorders its operands into the layouts that
// oneDNN's chosen kernel wants and the result back (the reorders are a few percent of the
// convolution). Primitives are not kept here: oneDNN's own primitive cache (process-wide,
// 1024 entries by default) returns the compiled kernel for a geometry it has seen.
//
// Each function returns false, having written nothing it promises, when oneDNN has no
// primitive for the geometry; the caller then runs its im2col path.
// `threads` is the OpenMP thread count oneDNN uses for this call (the Session's
// intra-op count). Thread-safety: all functions are thread-safe.
#include <cstdint>

#include "loom/ops/nn_window.h"

namespace loom::nn_internal {

// y[N, out_h, out_w, out_c] = conv(x[N, H, W, C], w[k_h, k_w, C, out_c]).
bool OnednnConv2D(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                  int threads);
// dx[N, H, W, C] from w and dy[N, out_h, out_w, out_c].
bool OnednnConv2DBackpropInput(const Geometry& g, int64_t out_c, const float* w, const float* dy,
                               float* dx, int threads);
// dw[k_h, k_w, C, out_c] from x and dy.
bool OnednnConv2DBackpropFilter(const Geometry& g, int64_t out_c, const float* x, const float* dy,
                                float* dw, int threads);

// Whether Conv2DBackpropFilter takes oneDNN's path for this geometry: only with at least
// 8 input channels. With fewer (a first layer over grayscale or RGB images) oneDNN's
// blocked kernels pad the channels to a block of 8 and run 3-8x slower than im2col + GEMM
// (measured on the convnet's first layer, C = 1: bench/RESULTS.md).
inline bool OnednnFilterGradPays(const Geometry& g) { return g.channels >= 8; }

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_ONEDNN_CONV_H_
