#include "loom/ops/bf16_conv.h"

#include "loom/ops/onednn_internal.h"

namespace loom::bf16 {

using nn_internal::Geometry;
using onednn_internal::ConvOperands;

// Below this many input channels the filter gradient takes the emulated path (the inputs
// rounded to bf16 here, then the float32 kernel): oneDNN 2.6's bf16 backward-weights kernel
// (jit:avx512_core_amx_bf16) runs one input channel at a fraction of the tiles' width. On
// the convnet's first layer (64x28x28x1, 5x5, 32 out; Intel Xeon with AMX, 1 thread) it
// took 1.45 ms plus 0.33 ms of reorders against 0.64 ms for the float32 kernel plus the
// rounding (bench/RESULTS.md, "bf16 on AMX").
constexpr int64_t kMinFilterGradChannels = 4;

bool OnednnConv2DBf16(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                      int threads) {
  return onednn_internal::Conv2D(ConvOperands::kBf16, g, out_c, x, w, y, threads);
}

bool OnednnConv2DBackpropInputBf16(const Geometry& g, int64_t out_c, const float* w,
                                   const float* dy, float* dx, int threads) {
  return onednn_internal::Conv2DBackpropInput(ConvOperands::kBf16, g, out_c, w, dy, dx, threads);
}

bool OnednnConv2DBackpropFilterBf16(const Geometry& g, int64_t out_c, const float* x,
                                    const float* dy, float* dw, int threads) {
  if (g.channels < kMinFilterGradChannels) return false;  // the emulated path is faster
  return onednn_internal::Conv2DBackpropFilter(ConvOperands::kBf16, g, out_c, x, dy, dw, threads);
}

}  // namespace loom::bf16
