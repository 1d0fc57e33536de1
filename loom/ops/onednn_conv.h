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
// Loom's tensors stay NHWC / HWIO, and the primitives are asked for NHWC activations
// (oneDNN 2.6 has direct NHWC kernels for AVX2 and AVX-512): only the small weights are
// reordered into the layout oneDNN chooses. Measured on the convnet (AMD EPYC, AVX2, 1
// thread, a loaded machine, bench/RESULTS.md): against oneDNN's own choice, the
// channel-blocked nChw8c with a reorder of every activation per call, NHWC ran the first
// layer's forward 1.3-2.4x faster, the second layer's forward and input gradient 5-45%
// faster, its filter gradient within the noise (+-10%), and the first layer's filter
// gradient 18x faster (C = 1, which the blocked kernel pads to a block of 8 channels).
// The bf16 path (bf16_conv.h) runs the same code (onednn_internal.h) with bf16 operands.
// Primitives are not kept here: oneDNN's own primitive cache (process-wide, 1024 entries
// by default) returns the compiled kernel for a geometry it has seen.
//
// Each function returns false, having written nothing it promises, when oneDNN has no
// primitive for the geometry; the caller then runs its im2col path.
// `threads` is the OpenMP thread count oneDNN uses for this call (the Session's
// intra-op count). Thread-safety: all functions are thread-safe.
#include <cstdint>

#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_internal.h"

namespace loom::nn_internal {

// y[N, out_h, out_w, out_c] = conv(x[N, H, W, C], w[k_h, k_w, C, out_c]), then the bias and
// ReLU of `epilogue` in the same primitive (a fused chain, nn_fused.h).
bool OnednnConv2D(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                  int threads, const onednn_internal::ConvEpilogue& epilogue = {});
// dx[N, H, W, C] from w and dy[N, out_h, out_w, out_c].
bool OnednnConv2DBackpropInput(const Geometry& g, int64_t out_c, const float* w, const float* dy,
                               float* dx, int threads);
// dw[k_h, k_w, C, out_c] from x and dy.
bool OnednnConv2DBackpropFilter(const Geometry& g, int64_t out_c, const float* x, const float* dy,
                                float* dw, int threads);

// Whether Conv2DBackpropFilter takes oneDNN's path for this geometry: always, since its
// kernels run on NHWC. (On the channel-blocked layouts a first layer over grayscale or RGB
// images, C < 8, had its channels padded to 8 and ran 3-8x slower than im2col + GEMM; on
// NHWC the convnet's first layer, C = 1, runs ~5x faster than im2col + GEMM:
// bench/RESULTS.md.)
inline bool OnednnFilterGradPays(const Geometry& g) { return g.channels >= 1; }

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_ONEDNN_CONV_H_
