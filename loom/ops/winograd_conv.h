#ifndef LOOM_OPS_WINOGRAD_CONV_H_
#define LOOM_OPS_WINOGRAD_CONV_H_

// Float32 Conv2D and its two backprops by Winograd's minimal filtering F(2x2, 5x5): 5x5
// windows at stride 1 (SAME or VALID). Internal to the ops layer; nn_conv.cc's dispatch
// (UseWinograd) says when it runs instead of oneDNN's direct kernels.
//
// Why: a 2x2 block of outputs of a 5x5 window costs 36 multiplies per input/output channel
// pair instead of 100 (2.8x fewer). The 6x6 input patches and the filters are transformed
// (B^T d B, G w G^T), the transformed tiles multiplied point by point as 36 products of
// [tiles x C] x [C x K] (own AVX-512 kernels, blocks of 24 tiles kept in L2), and the
// results transformed back (A^T M A) straight into the NHWC output. The input gradient of a
// stride-1 convolution is the same computation over dy with the filter flipped and its
// channels swapped; the filter gradient is its adjoint: Z = sum over tiles of
// (B^T d B) (.) (A dY A^T) per channel pair, dw = G^T Z G.
//
// Accuracy (float32, against a float64 reference; winograd_conv_test.cc): Winograd's
// transforms scale and mix a patch's values, so its rounding error is larger than the
// direct sum's: measured over random inputs, the worst error relative to the largest
// reference output |y|max was ~1e-6 forward (direct: ~3e-7), input gradient alike, filter
// gradient ~2e-6; the tests bound it at 1e-5. Non-finite values: the transforms mix a
// tile's 36 inputs, so one NaN or Inf would make all four outputs of every tile whose
// patch holds it NaN (where the direct sum gives Inf, or NaN only in the windows that
// hold it). Each function therefore checks its results and returns false when one is not
// finite (overflow inside a transform included); the caller then runs the direct path,
// which gives exactly the direct path's NaN/Inf propagation. Finite inputs whose direct
// result is finite give finite Winograd results unless a transform overflows (inputs near
// 1e37), which the check also catches.
//
// `pool` splits the tiles over its threads (the Session's intra-op pool); the filter
// gradient sums one partial per thread, in a fixed order, so results depend on the thread
// count but not on timing. Thread-safety: all functions are thread-safe.
#include <cstdint>

#include "loom/base/thread_pool.h"
#include "loom/ops/nn_window.h"

namespace loom::nn_internal {

enum class ConvPassKind { kForward, kInputGrad, kFilterGrad };

// Whether this CPU has the kernels (AVX-512F; none for AVX2 yet) and they compute `g`
// with `out_c` output channels: a 5x5 window at stride 1 with something to compute.
bool WinogradRuns(const Geometry& g, int64_t out_c);

// Whether Conv2D's `pass` takes Winograd for `g` here: WinogradRuns and the rule measured
// on this kind of CPU (winograd_conv.cc), unless a ScopedConvAlgorithm says otherwise.
bool UseWinograd(const Geometry& g, int64_t out_c, ConvPassKind pass);

// The algorithm a ScopedConvAlgorithm forces: kDirect never takes Winograd, kWinograd
// takes it wherever WinogradRuns (whatever the rule says).
enum class ConvAlgorithm { kByRule, kDirect, kWinograd };
// While one is alive, UseWinograd answers as `forced` says in every thread: for tests that
// compare both paths through a Session and for benchmarks. Process-wide; the innermost
// alive one wins.
class ScopedConvAlgorithm {
 public:
  explicit ScopedConvAlgorithm(ConvAlgorithm forced);
  ~ScopedConvAlgorithm();
  ScopedConvAlgorithm(const ScopedConvAlgorithm&) = delete;
  ScopedConvAlgorithm& operator=(const ScopedConvAlgorithm&) = delete;

 private:
  ConvAlgorithm previous_;
};

// REQUIRES (each): WinogradRuns(g, out_c). Each returns false, with its result unspecified,
// when a result is not finite (the caller runs the direct path).
// y[N, out_h, out_w, out_c] = conv(x[N, H, W, C], w[5, 5, C, out_c]), plus bias[out_c]
// when not null, then max(., 0) when relu (a fused chain's epilogue, nn_fused.h), in the
// output transform's pass. The finite check is on the values before the ReLU.
bool WinogradConv2D(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                    ThreadPool& pool, const float* bias = nullptr, bool relu = false);
// dx[N, H, W, C] from w and dy[N, out_h, out_w, out_c].
bool WinogradConv2DBackpropInput(const Geometry& g, int64_t out_c, const float* w,
                                 const float* dy, float* dx, ThreadPool& pool);
// dw[5, 5, C, out_c] from x and dy.
bool WinogradConv2DBackpropFilter(const Geometry& g, int64_t out_c, const float* x,
                                  const float* dy, float* dw, ThreadPool& pool);

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_WINOGRAD_CONV_H_
