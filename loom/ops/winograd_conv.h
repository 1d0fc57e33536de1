#ifndef LOOM_OPS_WINOGRAD_CONV_H_
#define LOOM_OPS_WINOGRAD_CONV_H_

// Float32 Conv2D and its two backprops by Winograd's minimal filtering F(4x4, 5x5) or
// F(2x2, 5x5): 5x5 windows at stride 1 (SAME or VALID). Internal to the ops layer;
// nn_conv.cc's dispatch (UseWinograd) says when it runs instead of oneDNN's direct kernels.
//
// Why: an M x M block of outputs of a 5x5 window costs (M + 4)^2 multiplies per
// input/output channel pair instead of 25 M^2: 64 instead of 400 for F(4x4) (6.25x fewer;
// 4.8x on a 14x14 image, whose 4x4 tiles cover 16x16), 36 instead of 100 for F(2x2). The
// input patches and the filters are transformed (B^T d B, G w G^T), the transformed tiles
// multiplied point by point as (M + 4)^2 products of [tiles x C] x [C x K] (own AVX-512
// kernels, blocks of 12 or 24 tiles kept in L2), and the results transformed back
// (A^T M A) straight into the NHWC output, with a fused bias and ReLU. The input gradient
// of a stride-1 convolution is the same computation over dy with the filter flipped and
// its channels swapped; the filter gradient is its adjoint: Z = sum over tiles of
// (B^T d B) (.) (A dY A^T) per channel pair, dw = G^T Z G. Measured on the convnet's second
// layer (AMD EPYC Zen 4, 1 thread, bench/winograd_bench.cc): 2.7-3.0x faster than oneDNN
// 2.6's direct kernels with 4x4 tiles, 1.4-1.8x with 2x2 (bench/RESULTS.md, session 17).
//
// Accuracy (float32, against float64 sums over the same inputs; winograd_conv_test.cc):
// the transforms scale and mix a patch's values, so the rounding error is larger than the
// direct sum's. Worst error relative to the largest |reference| over the test's random
// geometries: F(2x2) 1.5e-6 forward, 1.7e-6 input gradient, 4.8e-6 filter gradient; F(4x4)
// 5.8e-6, 6.4e-6, 8.2e-6 (the tests bound them at 1e-5 and 3e-5; the direct float32 path
// is within ~3e-7). Non-finite values: the transforms mix a tile's inputs, so one NaN or
// Inf would make every output of each tile whose patch holds it NaN (where the direct sum
// gives Inf, or NaN only in the windows that hold it). Each function therefore checks its
// results and returns false when one is not finite (an overflow inside a transform
// included); the caller then runs the direct path, which gives exactly the direct path's
// NaN/Inf propagation.
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

// The algorithm a ScopedConvAlgorithm forces: kDirect never takes Winograd; kWinograd
// takes it wherever WinogradRuns (whatever the rule says), with the rule's tile size;
// kWinograd2x2 / kWinograd4x4 with that tile.
enum class ConvAlgorithm { kByRule, kDirect, kWinograd, kWinograd2x2, kWinograd4x4 };
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
bool WinogradConv2DBackpropInput(const Geometry& g, int64_t out_c, const float* w, const float* dy,
                                 float* dx, ThreadPool& pool);
// dw[5, 5, C, out_c] from x and dy.
bool WinogradConv2DBackpropFilter(const Geometry& g, int64_t out_c, const float* x, const float* dy,
                                  float* dw, ThreadPool& pool);

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_WINOGRAD_CONV_H_
