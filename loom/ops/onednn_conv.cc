#include "loom/ops/onednn_conv.h"

#include "loom/ops/onednn_internal.h"

namespace loom::nn_internal {

using onednn_internal::ConvOperands;

bool OnednnConv2D(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                  int threads, const onednn_internal::ConvEpilogue& epilogue) {
  return onednn_internal::Conv2D(ConvOperands::kFloat32, g, out_c, x, w, y, threads, epilogue);
}

bool OnednnConv2DBackpropInput(const Geometry& g, int64_t out_c, const float* w, const float* dy,
                               float* dx, int threads) {
  return onednn_internal::Conv2DBackpropInput(ConvOperands::kFloat32, g, out_c, w, dy, dx, threads);
}

bool OnednnConv2DBackpropFilter(const Geometry& g, int64_t out_c, const float* x, const float* dy,
                                float* dw, int threads) {
  return onednn_internal::Conv2DBackpropFilter(ConvOperands::kFloat32, g, out_c, x, dy, dw,
                                               threads);
}

}  // namespace loom::nn_internal
