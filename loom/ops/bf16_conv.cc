#include "loom/ops/bf16_conv.h"

#include "loom/ops/onednn_internal.h"

namespace loom::bf16 {

using nn_internal::Geometry;
using onednn_internal::ConvOperands;
using onednn_internal::ConvPass;

ConvOperands ConvOperandsFor(Hardware hardware, ConvPass pass) {
  return hardware == Hardware::kAvx512Bf16 && pass != ConvPass::kBackwardWeights
             ? ConvOperands::kBf16Nhwc
             : ConvOperands::kBf16;
}

bool OnednnConv2DBf16(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                      int threads, const onednn_internal::ConvEpilogue& epilogue) {
  return onednn_internal::Conv2D(ConvOperandsFor(DetectHardware(), ConvPass::kForward), g, out_c, x,
                                 w, y, threads, epilogue);
}

bool OnednnConv2DBackpropInputBf16(const Geometry& g, int64_t out_c, const float* w,
                                   const float* dy, float* dx, int threads) {
  return onednn_internal::Conv2DBackpropInput(
      ConvOperandsFor(DetectHardware(), ConvPass::kBackwardData), g, out_c, w, dy, dx, threads);
}

bool OnednnConv2DBackpropFilterBf16(const Geometry& g, int64_t out_c, const float* x,
                                    const float* dy, float* dw, int threads) {
  return onednn_internal::Conv2DBackpropFilter(
      ConvOperandsFor(DetectHardware(), ConvPass::kBackwardWeights), g, out_c, x, dy, dw, threads);
}

}  // namespace loom::bf16
