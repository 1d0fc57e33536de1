// The AVX-512 kernels of Winograd F(2x2, 5x5) (winograd_kernels.h). Every function carries
// its instruction set in a target attribute, so the file compiles without -m flags; the
// caller asks the CPU first (winograd_conv.cc). Built outside the unity batches, so its
// target-attributed helpers stay out of the other files.
#include <algorithm>
#include <cstdint>

#include "loom/ops/winograd_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::winograd {

#if defined(__x86_64__)
namespace {

#define LOOM_AVX512 __attribute__((target("avx512f,fma")))

// The transforms (the matrices of the Toom-Cook construction, with B^T's rows scaled to
// integers and G's by the inverse), per output tile size M: an N x N patch, N = M + 4.
template <int M>
struct Transforms;

// F(2x2, 5x5): points 0, 1, -1, 1/2, -2 and infinity.
template <>
struct Transforms<2> {
  static constexpr int kN = 6;
  static constexpr float kBt[6][6] = {{2, -3, -4, 3, 2, 0},  {0, -2, 1, 5, 2, 0},
                                      {0, -2, 5, -1, -2, 0}, {0, 2, 1, -2, -1, 0},
                                      {0, 1, -2, -1, 2, 0},  {0, 2, -3, -4, 3, 2}};
  static constexpr float kG[6][5] = {{0.5f, 0, 0, 0, 0},
                                     {1.f / 6, 1.f / 6, 1.f / 6, 1.f / 6, 1.f / 6},
                                     {1.f / 6, -1.f / 6, 1.f / 6, -1.f / 6, 1.f / 6},
                                     {16.f / 15, 8.f / 15, 4.f / 15, 2.f / 15, 1.f / 15},
                                     {1.f / 30, -1.f / 15, 2.f / 15, -4.f / 15, 8.f / 15},
                                     {0, 0, 0, 0, 0.5f}};
  static constexpr float kAt[2][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 0.5f, -2, 1}};
};

// F(4x4, 5x5): points 0, 1, -1, 1/2, -1/2, 2, -2 and infinity.
template <>
struct Transforms<4> {
  static constexpr int kN = 8;
  static constexpr float kBt[8][8] = {{4, 0, -21, 0, 21, 0, -4, 0},  {0, -4, -4, 17, 17, -4, -4, 0},
                                      {0, 4, -4, -17, 17, 4, -4, 0}, {0, 4, 8, -5, -10, 1, 2, 0},
                                      {0, -4, 8, 5, -10, -1, 2, 0},  {0, 2, 1, -10, -5, 8, 4, 0},
                                      {0, -2, 1, 10, -5, -8, 4, 0},  {0, -4, 0, 21, 0, -21, 0, 4}};
  static constexpr float kG[8][5] = {{1.f / 4, 0, 0, 0, 0},
                                     {1.f / 18, 1.f / 18, 1.f / 18, 1.f / 18, 1.f / 18},
                                     {1.f / 18, -1.f / 18, 1.f / 18, -1.f / 18, 1.f / 18},
                                     {16.f / 45, 8.f / 45, 4.f / 45, 2.f / 45, 1.f / 45},
                                     {16.f / 45, -8.f / 45, 4.f / 45, -2.f / 45, 1.f / 45},
                                     {1.f / 360, 1.f / 180, 1.f / 90, 1.f / 45, 2.f / 45},
                                     {1.f / 360, -1.f / 180, 1.f / 90, -1.f / 45, 2.f / 45},
                                     {0, 0, 0, 0, 1.f / 4}};
  static constexpr float kAt[4][8] = {{1, 1, 1, 1, 1, 1, 1, 0},
                                      {0, 1, -1, 1.f / 2, -1.f / 2, 2, -2, 0},
                                      {0, 1, 1, 1.f / 4, 1.f / 4, 4, 4, 0},
                                      {0, 1, -1, 1.f / 8, -1.f / 8, 8, -8, 1}};
};

// sum_k coef(k) * in[k * stride] over the nonzero coefficients, in k order: a +-1 is an add
// or a subtraction, anything else a fused multiply-add. With the loops unrolled and the
// coefficients constant, the branches fold away.
template <int N, typename Coef>
LOOM_AVX512 inline __m512 Combine(const Coef& coef, const __m512* in, int stride) {
  __m512 acc = _mm512_setzero_ps();
  bool first = true;
#pragma GCC unroll 8
  for (int k = 0; k < N; ++k) {
    const float a = coef(k);
    if (a == 0.f) continue;
    const __m512 x = in[k * stride];
    if (first) {
      acc = a == 1.f ? x : _mm512_mul_ps(_mm512_set1_ps(a), x);
      first = false;
    } else if (a == 1.f) {
      acc = _mm512_add_ps(acc, x);
    } else if (a == -1.f) {
      acc = _mm512_sub_ps(acc, x);
    } else {
      acc = _mm512_fmadd_ps(_mm512_set1_ps(a), x, acc);
    }
  }
  return acc;
}

LOOM_AVX512 inline __mmask16 LaneMask(int64_t lanes) {
  if (lanes <= 0) return 0;
  return lanes >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << lanes) - 1);
}

// The lanes of mask from base + offset (zeros elsewhere); no address is formed for an
// empty mask (a padded vector past the end of the data).
LOOM_AVX512 inline __m512 MaskedLoad(__mmask16 mask, const float* base, int64_t offset) {
  return mask == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, base + offset);
}

// The tile's position: image n, first output row oh and column ow.
struct TilePos {
  int64_t n, oh, ow;
};
inline TilePos PosOf(const Plane& plane, int64_t t) {
  const int64_t per_image = plane.tiles_h() * plane.tiles_w();
  const int64_t n = t / per_image, rest = t % per_image;
  return {n, plane.tile * (rest / plane.tiles_w()), plane.tile * (rest % plane.tiles_w())};
}

// Accumulates m[r][k] = sum_c v[r][c] u[c][k] for R rows and NV vectors of 16 columns.
template <int R, int NV>
LOOM_AVX512 void ProductBlock(const float* v, int64_t ldv, const float* u, int64_t ldu,
                              int64_t depth, float* m, int64_t ldm) {
  __m512 acc[R][NV];
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < depth; ++c) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = _mm512_loadu_ps(u + c * ldu + 16 * j);
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(v[r * ldv + c]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(m + r * ldm + 16 * j, acc[r][j]);
  }
}

// z[i][k] += sum_r v[r][i] dm[r][k] for R rows i (columns of v) and NV vectors of k.
template <int R, int NV>
LOOM_AVX512 void FilterBlock(const float* v, int64_t ldv, const float* dm, int64_t ldm,
                             int64_t depth, float* z, int64_t ldz) {
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_loadu_ps(z + i * ldz + 16 * j);
  }
  for (int64_t r = 0; r < depth; ++r) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) b[j] = _mm512_loadu_ps(dm + r * ldm + 16 * j);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 a = _mm512_set1_ps(v[r * ldv + i]);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm512_storeu_ps(z + i * ldz + 16 * j, acc[i][j]);
  }
}

template <int M>
LOOM_AVX512 void TransformFilterT(const float* w, int64_t in_c, int64_t out_c, int64_t kp,
                                  float* u) {
  using Tr = Transforms<M>;
  constexpr int N = Tr::kN;
  for (int64_t c = 0; c < in_c; ++c) {
    for (int64_t k0 = 0; k0 < kp; k0 += 16) {
      const __mmask16 mask = LaneMask(out_c - k0);
      __m512 g[5][5], t[N][5];
      for (int a = 0; a < 5; ++a) {
        for (int b = 0; b < 5; ++b) {
          g[a][b] = MaskedLoad(mask, w, ((a * 5 + b) * in_c + c) * out_c + k0);
        }
      }
      // t = G g (N x 5), then u = t G^T (N x N)
#pragma GCC unroll 8
      for (int i = 0; i < N; ++i) {
#pragma GCC unroll 5
        for (int b = 0; b < 5; ++b) {
          t[i][b] = Combine<5>([&](int a) { return Tr::kG[i][a]; }, &g[0][b], 5);
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < N; ++i) {
#pragma GCC unroll 8
        for (int j = 0; j < N; ++j) {
          const __m512 x = Combine<5>([&](int b) { return Tr::kG[j][b]; }, &t[i][0], 1);
          _mm512_storeu_ps(u + ((i * N + j) * in_c + c) * kp + k0, x);
        }
      }
    }
  }
}

template <int M>
LOOM_AVX512 void InputTilesT(const Plane& plane, const float* x, int64_t t0, int64_t count,
                             int64_t ldv, float* v) {
  using Tr = Transforms<M>;
  constexpr int N = Tr::kN;
  const int64_t block = BlockOf(M);
  const int64_t point_stride = block * ldv;
  for (int64_t r = 0; r < block; ++r) {
    if (r >= count) {
      for (int p = 0; p < N * N; ++p) {
        for (int64_t c0 = 0; c0 < ldv; c0 += 16) {
          _mm512_mask_storeu_ps(v + p * point_stride + r * ldv + c0, LaneMask(ldv - c0),
                                _mm512_setzero_ps());
        }
      }
      continue;
    }
    const TilePos pos = PosOf(plane, t0 + r);
    const int64_t ih0 = pos.oh - plane.pad_top, iw0 = pos.ow - plane.pad_left;
    // Offsets, not pointers: a patch column left of the image would point before x.
    int64_t row_at[N];
    bool row_in[N], col_in[N];
    for (int i = 0; i < N; ++i) {
      const int64_t ih = ih0 + i;
      row_in[i] = ih >= 0 && ih < plane.in_h;
      row_at[i] = ((pos.n * plane.in_h + ih) * plane.in_w + iw0) * plane.in_c;
      col_in[i] = iw0 + i >= 0 && iw0 + i < plane.in_w;
    }
    for (int64_t c0 = 0; c0 < ldv; c0 += 16) {
      const __mmask16 load = LaneMask(plane.in_c - c0), store = LaneMask(ldv - c0);
      __m512 t[N][N];  // t = B^T d, column by column
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j) {
        __m512 d[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) {
          d[i] = row_in[i] && col_in[j] ? MaskedLoad(load, x, row_at[i] + j * plane.in_c + c0)
                                        : _mm512_setzero_ps();
        }
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) {
          t[i][j] = Combine<N>([&](int k) { return Tr::kBt[i][k]; }, d, 1);
        }
      }
      float* out = v + r * ldv + c0;
#pragma GCC unroll 8
      for (int i = 0; i < N; ++i) {
#pragma GCC unroll 8
        for (int j = 0; j < N; ++j) {
          const __m512 y = Combine<N>([&](int k) { return Tr::kBt[j][k]; }, &t[i][0], 1);
          _mm512_mask_storeu_ps(out + (i * N + j) * point_stride, store, y);
        }
      }
    }
  }
}

template <int M>
LOOM_AVX512 bool OutputTilesT(const Plane& plane, const float* m, int64_t kp, int64_t t0,
                              int64_t count, const float* bias, bool relu, float* y) {
  using Tr = Transforms<M>;
  constexpr int N = Tr::kN;
  const int64_t point_stride = BlockOf(M) * kp;
  __m512 check = _mm512_setzero_ps();  // y * 0 summed: NaN once a y is not finite
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t r = 0; r < count; ++r) {
    const TilePos pos = PosOf(plane, t0 + r);
    const int64_t rows = std::min<int64_t>(M, plane.out_h - pos.oh);
    const int64_t cols = std::min<int64_t>(M, plane.out_w - pos.ow);
    float* out = y + ((pos.n * plane.out_h + pos.oh) * plane.out_w + pos.ow) * plane.out_c;
    const int64_t next_row = plane.out_w * plane.out_c;
    for (int64_t k0 = 0; k0 < plane.out_c; k0 += 16) {
      const __mmask16 mask = LaneMask(plane.out_c - k0);
      const float* in = m + r * kp + k0;
      const __m512 b = bias != nullptr ? _mm512_maskz_loadu_ps(mask, bias + k0) : zero;
      __m512 t[M][N];  // t = A^T M, column by column
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j) {
        __m512 col[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) col[i] = _mm512_loadu_ps(in + (i * N + j) * point_stride);
#pragma GCC unroll 4
        for (int i = 0; i < M; ++i) {
          t[i][j] = Combine<N>([&](int k) { return Tr::kAt[i][k]; }, col, 1);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) {
        if (i >= rows) break;
        float* row = out + i * next_row + k0;
#pragma GCC unroll 4
        for (int j = 0; j < M; ++j) {
          __m512 v = Combine<N>([&](int k) { return Tr::kAt[j][k]; }, &t[i][0], 1);
          if (j >= cols) break;
          if (bias != nullptr) v = _mm512_add_ps(v, b);
          check = _mm512_fmadd_ps(v, zero, check);
          // exact: the check has seen every value, so none is NaN when it passes
          // (maskz_max_ps: max_ps draws a g++ 12 false warning)
          if (relu) v = _mm512_maskz_max_ps(0xffff, v, zero);
          _mm512_mask_storeu_ps(row + j * plane.out_c, mask, v);
        }
      }
    }
  }
  return _mm512_cmp_ps_mask(check, check, _CMP_UNORD_Q) == 0;
}

template <int M>
LOOM_AVX512 void OutputGradTilesT(const Plane& plane, const float* dy, int64_t t0, int64_t kp,
                                  int64_t count, float* dm) {
  using Tr = Transforms<M>;
  constexpr int N = Tr::kN;
  const int64_t block = BlockOf(M);
  const int64_t point_stride = block * kp;
  for (int64_t r = 0; r < block; ++r) {
    float* out = dm + r * kp;
    if (r >= count) {
      for (int p = 0; p < N * N; ++p) {
        for (int64_t k0 = 0; k0 < kp; k0 += 16) {
          _mm512_storeu_ps(out + p * point_stride + k0, _mm512_setzero_ps());
        }
      }
      continue;
    }
    const TilePos pos = PosOf(plane, t0 + r);
    const int64_t rows = std::min<int64_t>(M, plane.out_h - pos.oh);
    const int64_t cols = std::min<int64_t>(M, plane.out_w - pos.ow);
    const int64_t at = ((pos.n * plane.out_h + pos.oh) * plane.out_w + pos.ow) * plane.out_c;
    const int64_t next_row = plane.out_w * plane.out_c;
    for (int64_t k0 = 0; k0 < kp; k0 += 16) {
      const __mmask16 mask = LaneMask(plane.out_c - k0);
      __m512 g[M][M];
#pragma GCC unroll 4
      for (int a = 0; a < M; ++a) {
#pragma GCC unroll 4
        for (int b = 0; b < M; ++b) {
          g[a][b] = MaskedLoad(a < rows && b < cols ? mask : 0, dy,
                               at + a * next_row + b * plane.out_c + k0);
        }
      }
      // t = A g (N x M), dm = t A^T (N x N), A = (A^T)^T
      __m512 t[N][M];
#pragma GCC unroll 8
      for (int i = 0; i < N; ++i) {
#pragma GCC unroll 4
        for (int b = 0; b < M; ++b) {
          t[i][b] = Combine<M>([&](int a) { return Tr::kAt[a][i]; }, &g[0][b], M);
        }
      }
#pragma GCC unroll 8
      for (int i = 0; i < N; ++i) {
#pragma GCC unroll 8
        for (int j = 0; j < N; ++j) {
          const __m512 x = Combine<M>([&](int b) { return Tr::kAt[b][j]; }, &t[i][0], 1);
          _mm512_storeu_ps(out + (i * N + j) * point_stride + k0, x);
        }
      }
    }
  }
}

template <int M>
LOOM_AVX512 void FilterFromPointsT(const float* z, int64_t in_c, int64_t ldv, int64_t out_c,
                                   int64_t kp, float* dw) {
  using Tr = Transforms<M>;
  constexpr int N = Tr::kN;
  const int64_t point_stride = ldv * kp;
  for (int64_t c = 0; c < in_c; ++c) {
    for (int64_t k0 = 0; k0 < out_c; k0 += 16) {
      const __mmask16 mask = LaneMask(out_c - k0);
      const float* in = z + c * kp + k0;
      __m512 t[5][N];  // t = G^T Z, column by column
#pragma GCC unroll 8
      for (int j = 0; j < N; ++j) {
        __m512 col[N];
#pragma GCC unroll 8
        for (int i = 0; i < N; ++i) col[i] = _mm512_loadu_ps(in + (i * N + j) * point_stride);
#pragma GCC unroll 5
        for (int a = 0; a < 5; ++a) {
          t[a][j] = Combine<N>([&](int i) { return Tr::kG[i][a]; }, col, 1);
        }
      }
#pragma GCC unroll 5
      for (int a = 0; a < 5; ++a) {
#pragma GCC unroll 5
        for (int b = 0; b < 5; ++b) {
          const __m512 x = Combine<N>([&](int j) { return Tr::kG[j][b]; }, &t[a][0], 1);
          _mm512_mask_storeu_ps(dw + ((a * 5 + b) * in_c + c) * out_c + k0, mask, x);
        }
      }
    }
  }
}

}  // namespace

void TransformFilter(int tile, const float* w, int64_t in_c, int64_t out_c, int64_t kp, float* u) {
  tile == 4 ? TransformFilterT<4>(w, in_c, out_c, kp, u)
            : TransformFilterT<2>(w, in_c, out_c, kp, u);
}

void InputTiles(const Plane& plane, const float* x, int64_t t0, int64_t count, int64_t ldv,
                float* v) {
  plane.tile == 4 ? InputTilesT<4>(plane, x, t0, count, ldv, v)
                  : InputTilesT<2>(plane, x, t0, count, ldv, v);
}

bool OutputTiles(const Plane& plane, const float* m, int64_t kp, int64_t t0, int64_t count,
                 const float* bias, bool relu, float* y) {
  return plane.tile == 4 ? OutputTilesT<4>(plane, m, kp, t0, count, bias, relu, y)
                         : OutputTilesT<2>(plane, m, kp, t0, count, bias, relu, y);
}

void OutputGradTiles(const Plane& plane, const float* dy, int64_t t0, int64_t kp, int64_t count,
                     float* dm) {
  plane.tile == 4 ? OutputGradTilesT<4>(plane, dy, t0, kp, count, dm)
                  : OutputGradTilesT<2>(plane, dy, t0, kp, count, dm);
}

void FilterFromPoints(int tile, const float* z, int64_t in_c, int64_t ldv, int64_t out_c,
                      int64_t kp, float* dw) {
  tile == 4 ? FilterFromPointsT<4>(z, in_c, ldv, out_c, kp, dw)
            : FilterFromPointsT<2>(z, in_c, ldv, out_c, kp, dw);
}

LOOM_AVX512 void TileProducts(int points, int64_t block, const float* v, int64_t in_c, int64_t ldv,
                              const float* u, int64_t kp, float* m) {
  for (int p = 0; p < points; ++p) {
    const float* vp = v + p * block * ldv;
    const float* up = u + p * in_c * kp;
    float* mp = m + p * block * kp;
    for (int64_t k0 = 0; k0 < kp; k0 += 64) {
      const int64_t nv = (kp - k0) / 16 < 4 ? (kp - k0) / 16 : 4;
      for (int64_t r0 = 0; r0 < block;) {
        const float* a = vp + r0 * ldv;
        float* out = mp + r0 * kp + k0;
        switch (nv) {
          case 4:
            ProductBlock<6, 4>(a, ldv, up + k0, kp, in_c, out, kp);
            r0 += 6;
            break;
          case 3:
            ProductBlock<6, 3>(a, ldv, up + k0, kp, in_c, out, kp);
            r0 += 6;
            break;
          case 2:
            ProductBlock<12, 2>(a, ldv, up + k0, kp, in_c, out, kp);
            r0 += 12;
            break;
          default:
            ProductBlock<12, 1>(a, ldv, up + k0, kp, in_c, out, kp);
            r0 += 12;
            break;
        }
      }
    }
  }
}

LOOM_AVX512 void FilterProducts(int points, int64_t block, const float* v, int64_t ldv,
                                const float* dm, int64_t kp, float* z) {
  for (int p = 0; p < points; ++p) {
    const float* vp = v + p * block * ldv;
    const float* dmp = dm + p * block * kp;
    float* zp = z + p * ldv * kp;
    for (int64_t k0 = 0; k0 < kp; k0 += 64) {
      const int64_t nv = (kp - k0) / 16 < 4 ? (kp - k0) / 16 : 4;
      for (int64_t c0 = 0; c0 < ldv;) {
        const float* a = vp + c0;
        float* out = zp + c0 * kp + k0;
        switch (nv) {
          case 4:
            FilterBlock<4, 4>(a, ldv, dmp + k0, kp, block, out, kp);
            c0 += 4;
            break;
          case 3:
            FilterBlock<8, 3>(a, ldv, dmp + k0, kp, block, out, kp);
            c0 += 8;
            break;
          case 2:
            FilterBlock<8, 2>(a, ldv, dmp + k0, kp, block, out, kp);
            c0 += 8;
            break;
          default:
            FilterBlock<16, 1>(a, ldv, dmp + k0, kp, block, out, kp);
            c0 += 16;
            break;
        }
      }
    }
  }
}

#else  // not x86-64: winograd_conv.cc never calls these (the CPU has no AVX-512F)

void TransformFilter(int, const float*, int64_t, int64_t, int64_t, float*) {}
void InputTiles(const Plane&, const float*, int64_t, int64_t, int64_t, float*) {}
void TileProducts(int, int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*) {}
bool OutputTiles(const Plane&, const float*, int64_t, int64_t, int64_t, const float*, bool,
                 float*) {
  return false;
}
void OutputGradTiles(const Plane&, const float*, int64_t, int64_t, int64_t, float*) {}
void FilterProducts(int, int64_t, const float*, int64_t, const float*, int64_t, float*) {}
void FilterFromPoints(int, const float*, int64_t, int64_t, int64_t, int64_t, float*) {}

#endif

}  // namespace loom::winograd
