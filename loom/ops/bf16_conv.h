#ifndef LOOM_OPS_BF16_CONV_H_
#define LOOM_OPS_BF16_CONV_H_

// The bf16 policy's hardware path for Conv2D and its two backprops: oneDNN's convolution
// primitives with bf16 operands (input, filter, out_backprop) and float32 results,
// accumulating in float32 (AMX or AVX-512 BF16 kernels, whichever oneDNN picks). Internal
// to the ops layer; bf16.h says when it runs. The float32 path is onednn_conv.h; both run
// onednn_internal.h's convolutions.
//
// Loom's float32 NHWC / HWIO tensors are reordered by oneDNN into the bf16 blocked
// layouts its kernel wants (the reorder rounds to nearest even, as bf16::RoundToBf16), and
// the float32 result back into NHWC / HWIO.
//
// Each function returns false, having written nothing it promises, when oneDNN has no bf16
// primitive for the geometry or the CPU; the caller then rounds in software (the emulated
// path). `threads` is the OpenMP thread count oneDNN uses for the call.
// Thread-safety: all functions are thread-safe.
#include <cstdint>

#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_internal.h"

namespace loom::bf16 {

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
