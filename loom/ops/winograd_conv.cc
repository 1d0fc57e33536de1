#include "loom/ops/winograd_conv.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "loom/ops/vector_isa.h"
#include "loom/ops/winograd_kernels.h"
#include "loom/tensor/tensor.h"

namespace loom::nn_internal {
namespace {

using winograd::BlockOf;
using winograd::PadTo16;
using winograd::Plane;
using winograd::PointsOf;

std::atomic<ConvAlgorithm> g_forced_algorithm{ConvAlgorithm::kByRule};

// The rule, measured on an AMD EPYC (Zen 4, AVX-512, no AMX) at 1 and 2 threads against
// oneDNN 2.6's direct kernels (bench/winograd_bench.cc; bench/RESULTS.md, session 17):
// F(4x4) won every pass of every shape with 16 or more channels on both sides of the
// product (2.3-3.3x at 1 thread: the convnet's 14x14x32 -> 64, 28x28x16 -> 32, 28x28x32 ->
// 32, 14x14x64 -> 64, 7x7x64 -> 128, batch 64 and 256); it lost the forward pass and the
// filter gradient over 1 input channel (the convnet's first layer: 2.5 against 1.2 ms and
// 14.5 against 0.9 ms, the transforms' vectors then hold one channel) and, at 2 threads,
// every pass of a small 14x14x8 -> 16 at batch 16. The input gradient reduces over the
// output channels and writes the input's: over 32 -> 1 it won (17 against 51 ms).
// kMinTiles keeps tiny products on the direct path, where the filter transform costs about
// as much as the products: 14x14x32 -> 64 at batch 4 (64 tiles) won every pass at 1 and 2
// threads (1.9-2.1x at 1), at batch 1 (16 tiles) it won at 1 thread (1.15-1.5x) but tied
// or lost the forward pass at 2.
bool WinogradPaysOnZen4(const Geometry& g, int64_t out_c, ConvPassKind pass) {
  constexpr int64_t kMinChannels = 16, kMinTiles = 64;
  const int64_t tiles = g.batch * ((g.out_h + 3) / 4) * ((g.out_w + 3) / 4);
  if (tiles < kMinTiles || out_c < kMinChannels) return false;
  return pass == ConvPassKind::kInputGrad || g.channels >= kMinChannels;
}

// F(4x4) was as fast or faster than F(2x2) on every shape and pass measured (1.2-3x; the
// 2x2 tiles stay for tests and benchmarks, ScopedConvAlgorithm).
int TileRule(const Geometry& g, ConvPassKind pass) {
  (void)g;
  (void)pass;
  return 4;
}

float* Floats(Tensor& t) { return t.data<float>(); }

// The output tile: 4x4 (F(4x4, 5x5), 64 multiplies per 16 outputs) or 2x2 (36 per 4), as a
// ScopedConvAlgorithm forces or by the rule (TileRule).
int TileFor(const Geometry& g, ConvPassKind pass) {
  switch (g_forced_algorithm.load(std::memory_order_relaxed)) {
    case ConvAlgorithm::kWinograd2x2:
      return 2;
    case ConvAlgorithm::kWinograd4x4:
      return 4;
    default:
      return TileRule(g, pass);
  }
}

// Runs the forward computation of `plane` with the transformed filter u (kp columns):
// the blocks of tiles split over the pool's threads.
bool RunForward(const Plane& plane, const float* x, const float* u, int64_t kp, const float* bias,
                bool relu, float* y, ThreadPool& pool) {
  const int64_t block = BlockOf(plane.tile);
  const int points = PointsOf(plane.tile);
  const int64_t blocks = (plane.tiles() + block - 1) / block;
  const int64_t chunks = std::min<int64_t>(pool.num_threads(), blocks);
  std::atomic<bool> finite{true};
  pool.ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    Tensor v(kFloat32, Shape{points * block * plane.in_c});
    Tensor m(kFloat32, Shape{points * block * kp});
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t b = blocks * chunk / chunks; b < blocks * (chunk + 1) / chunks; ++b) {
        const int64_t t0 = b * block;
        const int64_t count = std::min<int64_t>(block, plane.tiles() - t0);
        winograd::InputTiles(plane, x, t0, count, plane.in_c, Floats(v));
        winograd::TileProducts(points, block, Floats(v), plane.in_c, plane.in_c, u, kp, Floats(m));
        if (!winograd::OutputTiles(plane, Floats(m), kp, t0, count, bias, relu, y)) {
          finite = false;
        }
      }
    }
  });
  return finite;
}

}  // namespace

bool WinogradRuns(const Geometry& g, int64_t out_c) {
  return internal::CpuHasAvx512F() && g.k_h == 5 && g.k_w == 5 && g.stride_h == 1 &&
         g.stride_w == 1 && g.batch > 0 && g.out_h > 0 && g.out_w > 0 && g.channels > 0 &&
         out_c > 0;
}

bool UseWinograd(const Geometry& g, int64_t out_c, ConvPassKind pass) {
  const ConvAlgorithm forced = g_forced_algorithm.load(std::memory_order_relaxed);
  if (forced == ConvAlgorithm::kDirect || !WinogradRuns(g, out_c)) return false;
  if (forced != ConvAlgorithm::kByRule) return true;  // a kWinograd* value
  return internal::CpuIsAmd() && WinogradPaysOnZen4(g, out_c, pass);
}

ScopedConvAlgorithm::ScopedConvAlgorithm(ConvAlgorithm forced)
    : previous_(g_forced_algorithm.exchange(forced)) {}
ScopedConvAlgorithm::~ScopedConvAlgorithm() { g_forced_algorithm.store(previous_); }

bool WinogradConv2D(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                    ThreadPool& pool, const float* bias, bool relu) {
  const int tile = TileFor(g, ConvPassKind::kForward);
  const Plane plane{g.batch, g.in_h, g.in_w,    g.channels, g.out_h,
                    g.out_w, out_c,  g.pad_top, g.pad_left, tile};
  const int64_t kp = PadTo16(out_c);
  Tensor u(kFloat32, Shape{PointsOf(tile) * g.channels * kp});
  winograd::TransformFilter(tile, w, g.channels, out_c, kp, Floats(u));
  return RunForward(plane, x, Floats(u), kp, bias, relu, y, pool);
}

bool WinogradConv2DBackpropInput(const Geometry& g, int64_t out_c, const float* w, const float* dy,
                                 float* dx, ThreadPool& pool) {
  // dx[ih, iw, c] = sum over (a, b, k) of dy[ih + pad_top - a, iw + pad_left - b, k] *
  // w[a, b, c, k]: a convolution of dy with the filter flipped (a' = 4 - a) and its
  // channels swapped, at offset -(4 - pad_top), over dx's shape.
  const int tile = TileFor(g, ConvPassKind::kInputGrad);
  const Plane plane{g.batch, g.out_h,    g.out_w,       out_c,          g.in_h,
                    g.in_w,  g.channels, 4 - g.pad_top, 4 - g.pad_left, tile};
  const int64_t c = g.channels;
  Tensor flipped(kFloat32, Shape{25 * out_c * c});
  float* wf = Floats(flipped);
  for (int64_t ab = 0; ab < 25; ++ab) {
    const float* src = w + (24 - ab) * c * out_c;
    float* dst = wf + ab * out_c * c;
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t k = 0; k < out_c; ++k) dst[k * c + i] = src[i * out_c + k];
    }
  }
  const int64_t kp = PadTo16(c);
  Tensor u(kFloat32, Shape{PointsOf(tile) * out_c * kp});
  winograd::TransformFilter(tile, wf, out_c, c, kp, Floats(u));
  return RunForward(plane, dy, Floats(u), kp, nullptr, false, dx, pool);
}

bool WinogradConv2DBackpropFilter(const Geometry& g, int64_t out_c, const float* x, const float* dy,
                                  float* dw, ThreadPool& pool) {
  const int tile = TileFor(g, ConvPassKind::kFilterGrad);
  const Plane plane{g.batch, g.in_h, g.in_w,    g.channels, g.out_h,
                    g.out_w, out_c,  g.pad_top, g.pad_left, tile};
  const int64_t ldv = PadTo16(g.channels), kp = PadTo16(out_c);
  const int64_t block = BlockOf(tile);
  const int points = PointsOf(tile);
  const int64_t blocks = (plane.tiles() + block - 1) / block;
  const int64_t chunks = std::min<int64_t>(pool.num_threads(), blocks);
  const int64_t z_size = points * ldv * kp;
  // One partial sum per chunk, added in chunk order: the result depends on the thread
  // count only.
  Tensor partials(kFloat32, Shape{chunks * z_size});
  float* z = Floats(partials);
  std::fill(z, z + chunks * z_size, 0.f);
  pool.ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
    Tensor v(kFloat32, Shape{points * block * ldv});
    Tensor dm(kFloat32, Shape{points * block * kp});
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      for (int64_t b = blocks * chunk / chunks; b < blocks * (chunk + 1) / chunks; ++b) {
        const int64_t t0 = b * block;
        const int64_t count = std::min<int64_t>(block, plane.tiles() - t0);
        winograd::InputTiles(plane, x, t0, count, ldv, Floats(v));
        winograd::OutputGradTiles(plane, dy, t0, kp, count, Floats(dm));
        winograd::FilterProducts(points, block, Floats(v), ldv, Floats(dm), kp, z + chunk * z_size);
      }
    }
  });
  for (int64_t chunk = 1; chunk < chunks; ++chunk) {
    const float* part = z + chunk * z_size;
    for (int64_t i = 0; i < z_size; ++i) z[i] += part[i];
  }
  winograd::FilterFromPoints(tile, z, g.channels, ldv, out_c, kp, dw);
  const int64_t n = 25 * g.channels * out_c;
  return std::all_of(dw, dw + n, [](float v) { return std::isfinite(v); });
}

}  // namespace loom::nn_internal
