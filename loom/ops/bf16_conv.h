#ifndef LOOM_OPS_BF16_CONV_H_
#define LOOM_OPS_BF16_CONV_H_

// The bf16 policy's hardware path for Conv2D and its two backprops: oneDNN's convolution
// primitives with bf16 operands (input, filter, out_backprop) and float32 results,
// accumulating in float32 (AMX or AVX-512 BF16 kernels, whichever oneDNN picks). Internal
// to the ops layer; bf16.h says when it runs. The float32 path is onednn_conv.h; both run
// onednn_internal.h's convolutions.
//
// Loom's float32 NHWC / HWIO tensors are reordered by oneDNN into the bf16 layouts its
// kernel wants (the reorder rounds to nearest even, as bf16::RoundToBf16), and the float32
// result back into NHWC / HWIO. Which layouts depends on the kind of bf16 hardware and the
// pass (ConvOperandsFor): oneDNN's blocked ones, or NHWC activations.
//
// Each function returns false, having written nothing it promises, when oneDNN has no bf16
// primitive for the geometry or the CPU; the caller then rounds in software (the emulated
// path). `threads` is the OpenMP thread count oneDNN uses for the call.
// Thread-safety: all functions are thread-safe.
#include <cstdint>

#include "loom/ops/bf16.h"
#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_internal.h"

namespace loom::bf16 {

// The operand layouts that `pass` runs in on `hardware`, by measurement (a rule on the
// hardware kind, never a timing):
// - AVX-512 BF16: forward and input gradient kBf16Nhwc (bf16 NHWC activations, float32
//   NHWC results), filter gradient kBf16. oneDNN 2.6 on an AMD EPYC Zen 4, 1 thread
//   (bench/bf16_kernels_bench.cc; bench/RESULTS.md, session 16): the forward pass then runs
//   brgconv instead of jit_bf16, and its result needs no reorder out of a blocked layout:
//   the convnet's 5x5 over 1 channel at batch 256 3.96 against 5.46 ms, its second layer
//   (14x14x32 -> 64) 20.1 against 21.9 ms, a 3x3 over 4 channels at batch 64 0.73 against
//   1.05 ms; the input gradient (jit_bf16 either way) as fast or faster. The filter
//   gradient was not faster in NHWC (the second layer's 9.9 against 7.6 ms).
// - AMX and anything else: kBf16 for every pass (as measured on AMX, session 15).
onednn_internal::ConvOperands ConvOperandsFor(Hardware hardware, onednn_internal::ConvPass pass);

// y[N, out_h, out_w, out_c] = conv(bf16(x[N, H, W, C]), bf16(w[k_h, k_w, C, out_c])), then
// `epilogue` (float32 bias, ReLU) in the same primitive.
bool OnednnConv2DBf16(const nn_internal::Geometry& g, int64_t out_c, const float* x, const float* w,
                      float* y, int threads, const onednn_internal::ConvEpilogue& epilogue = {});
// dx[N, H, W, C] from bf16(w) and bf16(dy[N, out_h, out_w, out_c]).
bool OnednnConv2DBackpropInputBf16(const nn_internal::Geometry& g, int64_t out_c, const float* w,
                                   const float* dy, float* dx, int threads);
// dw[k_h, k_w, C, out_c] from bf16(x) and bf16(dy). (Convolutions with few input channels
// never come here: nn_conv.cc runs them in float32, where bf16 was measured slower.)
bool OnednnConv2DBackpropFilterBf16(const nn_internal::Geometry& g, int64_t out_c, const float* x,
                                    const float* dy, float* dw, int threads);

}  // namespace loom::bf16

#endif  // LOOM_OPS_BF16_CONV_H_
