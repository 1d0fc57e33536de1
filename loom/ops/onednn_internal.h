#ifndef LOOM_OPS_ONEDNN_INTERNAL_H_
#define LOOM_OPS_ONEDNN_INTERNAL_H_

// What the ops layer's oneDNN kernels share: the CPU engine, the OpenMP thread count,
// user-managed scratchpads, and the convolution primitives over Loom's float32 NHWC / HWIO
// tensors, with float32 operands (onednn_conv.h) or bf16 operands (bf16_conv.h). Internal
// to the ops layer; onednn_matmul.cc uses the first three.
//
// The convolutions run the primitives' reorders into and out of the layouts they ask for
// over buffers from Loom's tensor allocator (which keeps freed buffers: no page faults per
// step). Primitives are not kept here: oneDNN's own primitive cache (process-wide, 1024
// entries by default) returns the compiled kernel for a geometry it has seen.
// Thread-safety: all functions are thread-safe.
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>

#include "loom/ops/nn_window.h"

namespace loom::onednn_internal {

// The CPU engine: a handle to the process's CPU, without state of its own.
const dnnl::engine& CpuEngine();

// Sets the calling thread's OpenMP thread count (at least 1): oneDNN (Debian's build) runs
// on OpenMP, whose thread count belongs to the calling thread.
// REQUIRES: called before a primitive descriptor is made: the kernel's work split is fixed
// then (a descriptor made with the default, every core, runs a team of that size).
void UseThreads(int threads);

// Primitive attributes for a scratchpad that the caller passes as DNNL_ARG_SCRATCHPAD.
dnnl::primitive_attr UserScratchpad();

// The type of the data a convolution primitive reads (x, w, dy); what it writes (y, dx,
// dw) is float32 either way.
//   kFloat32: NHWC activations (Loom's own, no reorder) and weights in layout `any`,
//             oneDNN's choice (a small reorder per call); onednn_conv.h says why.
//   kBf16:    every operand and result in layout `any`; the operands are rounded to bf16
//             (nearest even) by their reorder, the results reordered back to float32.
//   kBf16Nhwc: as kBf16, but the activations (x, dy) are bf16 in NHWC and their results
//             (y, dx) float32 NHWC, written where Loom wants them (no reorder out);
//             weights in layout `any`. oneDNN 2.6 then runs other kernels (the forward
//             pass brgconv rather than jit_bf16 on AVX-512 BF16): bf16_conv.cc says
//             where that was measured faster.
enum class ConvOperands { kFloat32, kBf16, kBf16Nhwc };

// Whether a convolution primitive reads a tensor (x, w, dy: of the operand type) or writes
// it (y, dx, dw: float32).
enum class ConvRole { kOperand, kResult };

// A convolution's descriptors: Loom's float32 NHWC / HWIO layouts (`*_user`), and the
// layouts and types the primitive is asked for (Src, Weights, Dst), as ConvOperands says.
// Dims are oneDNN's logical NCHW / OIHW order.
struct ConvDescs {
  ConvOperands operands;
  dnnl::memory::dims src, weights, dst;
  dnnl::memory::desc src_user, weights_user, dst_user;
  dnnl::memory::dims strides, pad_l, pad_r;

  dnnl::memory::desc Src(ConvRole role) const { return Want(src, Tag::nhwc, role); }
  dnnl::memory::desc Weights(ConvRole role) const { return Want(weights, Tag::any, role); }
  dnnl::memory::desc Dst(ConvRole role) const { return Want(dst, Tag::nhwc, role); }

 private:
  using Tag = dnnl::memory::format_tag;
  dnnl::memory::desc Want(const dnnl::memory::dims& dims, Tag float32_tag, ConvRole role) const;
};

// The descriptors for geometry `g` with `out_c` output channels. TF's padding puts the
// extra row or column of an odd total after the image (pad_r). std::nullopt when no
// oneDNN padding reproduces g's output size.
std::optional<ConvDescs> MakeConvDescs(ConvOperands operands, const nn_internal::Geometry& g,
                                       int64_t out_c);

// What the forward convolution adds to its result in the same pass, as oneDNN's bias and
// ReLU post-op (nn_fused.h): y = max(conv + bias, 0). The defaults add nothing.
struct ConvEpilogue {
  const float* bias = nullptr;  // [out_c], or nullptr for none
  bool relu = false;
};

// y[N, out_h, out_w, out_c] = conv(x[N, H, W, C], w[k_h, k_w, C, out_c]), then `epilogue`.
// Each returns false, having written nothing it promises, when oneDNN has no primitive
// for the geometry (or, for bf16, the CPU). `threads` is the OpenMP thread count. Where
// oneDNN has only its reference kernel for kBf16Nhwc's layouts, the call runs kBf16.
bool Conv2D(ConvOperands operands, const nn_internal::Geometry& g, int64_t out_c, const float* x,
            const float* w, float* y, int threads, const ConvEpilogue& epilogue = {});
// dx[N, H, W, C] from w and dy[N, out_h, out_w, out_c].
bool Conv2DBackpropInput(ConvOperands operands, const nn_internal::Geometry& g, int64_t out_c,
                         const float* w, const float* dy, float* dx, int threads);
// dw[k_h, k_w, C, out_c] from x and dy.
bool Conv2DBackpropFilter(ConvOperands operands, const nn_internal::Geometry& g, int64_t out_c,
                          const float* x, const float* dy, float* dw, int threads);

// The three passes of a convolution, for ConvImpl.
enum class ConvPass { kForward, kBackwardData, kBackwardWeights };

// The name of the oneDNN implementation that `pass` runs for geometry `g` on `threads`
// threads ("brg:avx512_core_amx", "jit:avx512_core_bf16", ...), or "" when oneDNN has none:
// for tests and benchmarks, which kernel the CPU actually gets.
std::string ConvImpl(ConvOperands operands, ConvPass pass, const nn_internal::Geometry& g,
                     int64_t out_c, int threads);

}  // namespace loom::onednn_internal

#endif  // LOOM_OPS_ONEDNN_INTERNAL_H_
