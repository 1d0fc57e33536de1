#include "loom/ops/blas_narrow.h"

#include <cstdint>
#include <vector>

#include "loom/base/check.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// g++ 12's AVX-512 shuffle intrinsics pass a deliberately undefined vector
// (_mm512_undefined_pd: `__m512d __Y = __Y;`) as the unused merge source, which -O3 then
// reports as (maybe-)uninitialized once inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace loom::blas_narrow {
namespace {

#if defined(__x86_64__)
// Two kinds of kernel:
// - Row kernels: a row of B or C fits in one masked AVX-512 register (or two AVX2 ones,
//   blas_narrow_avx2.cc), and a block of rows of C accumulates in registers while A's
//   entries are broadcast.
//   Simple, but only n of the 16 lanes work (10 for a 10-class classifier), and each FMA
//   needs its own broadcast load.
// - Column-pair kernels (AVX-512F + DQ): a register holds 8 values of each of two columns
//   (lanes 0-7 column 2g, lanes 8-15 column 2g + 1, for the G = ceil(n / 2) groups g), so
//   every lane works when n is even, and one 256-bit broadcast of 8 consecutive entries of
//   A feeds G FMAs. The weight gradient (A transposed) broadcasts 8 rows of C's entries
//   of A at once against a packed copy of B (k x G registers); the forward product
//   broadcasts 8 consecutive k's of a row of A against B packed by 8-row chunks (a
//   transposition, done in registers), and sums the 8 lanes at the end. On the softmax
//   regression step's products (32x784 * 784x10 and 784x32 * 32x10) they take about two
//   thirds of the row kernels' time (bench/RESULTS.md, session 14).
// Small accumulator sets are named variables or fully unrolled arrays: a loop over an array
// that g++ 12 cannot unroll keeps it on the stack.

// ---- AVX-512F: one masked 16-lane register per row, blocks of 8 rows.
#define LOOM_AVX512 __attribute__((target("avx512f")))

LOOM_AVX512 inline void StoreRow512(float* out, __mmask16 mask, __m512 acc, float alpha,
                                    float beta) {
  __m512 v = _mm512_mul_ps(acc, _mm512_set1_ps(alpha));
  if (beta != 0.f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, out), v);
  _mm512_mask_storeu_ps(out, mask, v);
}

template <bool kTransA>
LOOM_AVX512 void NarrowBlock8Avx512(int64_t i0, int64_t k, __mmask16 mask, float alpha,
                                    const float* a, int64_t lda, const float* b, int64_t ldb,
                                    float beta, float* c, int64_t ldc) {
  __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
  for (int64_t p = 0; p < k; ++p) {
    const __m512 row = _mm512_maskz_loadu_ps(mask, b + p * ldb);
    c0 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 0, p)), row, c0);
    c1 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 1, p)), row, c1);
    c2 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 2, p)), row, c2);
    c3 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 3, p)), row, c3);
    c4 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 4, p)), row, c4);
    c5 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 5, p)), row, c5);
    c6 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 6, p)), row, c6);
    c7 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i0 + 7, p)), row, c7);
  }
  StoreRow512(c + (i0 + 0) * ldc, mask, c0, alpha, beta);
  StoreRow512(c + (i0 + 1) * ldc, mask, c1, alpha, beta);
  StoreRow512(c + (i0 + 2) * ldc, mask, c2, alpha, beta);
  StoreRow512(c + (i0 + 3) * ldc, mask, c3, alpha, beta);
  StoreRow512(c + (i0 + 4) * ldc, mask, c4, alpha, beta);
  StoreRow512(c + (i0 + 5) * ldc, mask, c5, alpha, beta);
  StoreRow512(c + (i0 + 6) * ldc, mask, c6, alpha, beta);
  StoreRow512(c + (i0 + 7) * ldc, mask, c7, alpha, beta);
}

// One row of C (the remainder after the blocks of 8), with two accumulators over p.
template <bool kTransA>
LOOM_AVX512 void NarrowRowAvx512(int64_t i, int64_t k, __mmask16 mask, float alpha, const float* a,
                                 int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                                 int64_t ldc) {
  __m512 c0 = _mm512_setzero_ps(), c1 = c0;
  int64_t p = 0;
  for (; p + 2 <= k; p += 2) {
    c0 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i, p)),
                         _mm512_maskz_loadu_ps(mask, b + p * ldb), c0);
    c1 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i, p + 1)),
                         _mm512_maskz_loadu_ps(mask, b + (p + 1) * ldb), c1);
  }
  if (p < k) {
    c0 = _mm512_fmadd_ps(_mm512_set1_ps(EntryA<kTransA>(a, lda, i, p)),
                         _mm512_maskz_loadu_ps(mask, b + p * ldb), c0);
  }
  StoreRow512(c + i * ldc, mask, _mm512_add_ps(c0, c1), alpha, beta);
}

template <bool kTransA>
LOOM_AVX512 void NarrowGemmAvx512(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                                  int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                                  int64_t ldc) {
  const auto mask = static_cast<__mmask16>((1u << n) - 1);
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) {
    NarrowBlock8Avx512<kTransA>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  for (; i < m; ++i) NarrowRowAvx512<kTransA>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
}

// ---- Column-pair kernels (AVX-512F + DQ).
#define LOOM_AVX512DQ __attribute__((target("avx512f,avx512dq")))

// Transposes the 8 x 8 matrix of 64-bit elements with rows i0..i7 into columns o0..o7 (a
// 64-bit element is a pair of floats: two adjacent columns of a row of C or B).
#define LOOM_TRANSPOSE_8X8_PD(i0, i1, i2, i3, i4, i5, i6, i7, o0, o1, o2, o3, o4, o5, o6, o7) \
  do {                                                                                        \
    const __m512d t0 = _mm512_unpacklo_pd(i0, i1), t1 = _mm512_unpackhi_pd(i0, i1);           \
    const __m512d t2 = _mm512_unpacklo_pd(i2, i3), t3 = _mm512_unpackhi_pd(i2, i3);           \
    const __m512d t4 = _mm512_unpacklo_pd(i4, i5), t5 = _mm512_unpackhi_pd(i4, i5);           \
    const __m512d t6 = _mm512_unpacklo_pd(i6, i7), t7 = _mm512_unpackhi_pd(i6, i7);           \
    const __m512d s0 = _mm512_shuffle_f64x2(t0, t2, 0x88);                                    \
    const __m512d s1 = _mm512_shuffle_f64x2(t1, t3, 0x88);                                    \
    const __m512d s2 = _mm512_shuffle_f64x2(t0, t2, 0xdd);                                    \
    const __m512d s3 = _mm512_shuffle_f64x2(t1, t3, 0xdd);                                    \
    const __m512d s4 = _mm512_shuffle_f64x2(t4, t6, 0x88);                                    \
    const __m512d s5 = _mm512_shuffle_f64x2(t5, t7, 0x88);                                    \
    const __m512d s6 = _mm512_shuffle_f64x2(t4, t6, 0xdd);                                    \
    const __m512d s7 = _mm512_shuffle_f64x2(t5, t7, 0xdd);                                    \
    (o0) = _mm512_shuffle_f64x2(s0, s4, 0x88);                                                \
    (o4) = _mm512_shuffle_f64x2(s0, s4, 0xdd);                                                \
    (o1) = _mm512_shuffle_f64x2(s1, s5, 0x88);                                                \
    (o5) = _mm512_shuffle_f64x2(s1, s5, 0xdd);                                                \
    (o2) = _mm512_shuffle_f64x2(s2, s6, 0x88);                                                \
    (o6) = _mm512_shuffle_f64x2(s2, s6, 0xdd);                                                \
    (o3) = _mm512_shuffle_f64x2(s3, s7, 0x88);                                                \
    (o7) = _mm512_shuffle_f64x2(s3, s7, 0xdd);                                                \
  } while (0)

LOOM_AVX512DQ inline void StorePairRow(__m512d row, __mmask16 mask, float beta, float* out) {
  __m512 v = _mm512_castpd_ps(row);
  if (beta != 0.f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, out), v);
  _mm512_mask_storeu_ps(out, mask, v);
}

// Stores 8 rows of C, alpha times G column-pair registers acc[g] = [C(0..7, 2g) |
// C(0..7, 2g+1)]: interleaved into (C(r, 2g), C(r, 2g+1)) pairs, transposed. Not inlined:
// its constants would stay in registers across the caller's FMA loop, which then spills
// an operand on every iteration (g++ 12, -O3).
template <int G>
__attribute__((noinline)) LOOM_AVX512DQ void StorePairRows(const __m512* acc, float alpha,
                                                           __mmask16 mask, float beta, float* c,
                                                           int64_t ldc) {
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512i interleave =
      _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
#define LOOM_PAIR_IN(g)                                                                        \
  ((g) < G ? _mm512_castps_pd(                                                                 \
                 _mm512_permutexvar_ps(interleave, _mm512_mul_ps(va, acc[(g) < G ? (g) : 0]))) \
           : _mm512_setzero_pd())
  const __m512d i0 = LOOM_PAIR_IN(0), i1 = LOOM_PAIR_IN(1), i2 = LOOM_PAIR_IN(2);
  const __m512d i3 = LOOM_PAIR_IN(3), i4 = LOOM_PAIR_IN(4), i5 = LOOM_PAIR_IN(5);
  const __m512d i6 = LOOM_PAIR_IN(6), i7 = LOOM_PAIR_IN(7);
#undef LOOM_PAIR_IN
  __m512d o0, o1, o2, o3, o4, o5, o6, o7;
  LOOM_TRANSPOSE_8X8_PD(i0, i1, i2, i3, i4, i5, i6, i7, o0, o1, o2, o3, o4, o5, o6, o7);
  StorePairRow(o0, mask, beta, c);
  StorePairRow(o1, mask, beta, c + ldc);
  StorePairRow(o2, mask, beta, c + 2 * ldc);
  StorePairRow(o3, mask, beta, c + 3 * ldc);
  StorePairRow(o4, mask, beta, c + 4 * ldc);
  StorePairRow(o5, mask, beta, c + 5 * ldc);
  StorePairRow(o6, mask, beta, c + 6 * ldc);
  StorePairRow(o7, mask, beta, c + 7 * ldc);
}

// Rows i.. of C = alpha * A^T B + beta * C in blocks of 8 * R rows (A stored k x m):
// pack[p * G + g] = [B(p, 2g) x8 | B(p, 2g+1) x8]. Each entry of C sums over p in order, as
// the row kernel does.
template <int G, int R>
LOOM_AVX512DQ void PairTransBlocks(int64_t& i, int64_t m, int64_t k, __mmask16 mask, float alpha,
                                   const float* a, int64_t lda, const __m512* pack, float beta,
                                   float* c, int64_t ldc) {
  for (; i + 8 * R <= m; i += 8 * R) {
    __m512 acc[R][G];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
    for (int64_t p = 0; p < k; ++p) {
      __m512 x[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        x[r] = _mm512_broadcast_f32x8(_mm256_loadu_ps(a + p * lda + i + 8 * r));
      }
      const __m512* bp = pack + p * G;
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        __m512 w = bp[g];
        asm("" : "+v"(w));  // one load per packed register (g++ would repeat it in each FMA)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][g] = _mm512_fmadd_ps(x[r], w, acc[r][g]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      StorePairRows<G>(acc[r], alpha, mask, beta, c + (i + 8 * r) * ldc, ldc);
    }
  }
}

template <int G>
LOOM_AVX512DQ void PairTransGemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                                 int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                                 int64_t ldc, __m512* pack) {
  const auto mask = static_cast<__mmask16>((1u << n) - 1);
  for (int64_t p = 0; p < k; ++p) {
    for (int g = 0; g < G; ++g) {
      const float lo = b[p * ldb + 2 * g];
      const float hi = 2 * g + 1 < n ? b[p * ldb + 2 * g + 1] : 0.f;
      pack[p * G + g] = _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
    }
  }
  int64_t i = 0;
  PairTransBlocks<G, (G <= 5 ? 4 : 3)>(i, m, k, mask, alpha, a, lda, pack, beta, c, ldc);
  PairTransBlocks<G, 1>(i, m, k, mask, alpha, a, lda, pack, beta, c, ldc);
  for (; i < m; ++i) NarrowRowAvx512<true>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
}

// pack[q * G + g] = [B(8q..8q+7, 2g) | B(8q..8q+7, 2g+1)] for the k / 8 whole chunks of B.
template <int G>
LOOM_AVX512DQ void PackPairColumns(int64_t chunks, __mmask16 mask, const float* b, int64_t ldb,
                                   __m512* pack) {
  const __m512i deinterleave =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (int64_t q = 0; q < chunks; ++q) {
    const float* rows = b + q * 8 * ldb;
#define LOOM_ROW_IN(r) _mm512_castps_pd(_mm512_maskz_loadu_ps(mask, rows + (r)*ldb))
    const __m512d i0 = LOOM_ROW_IN(0), i1 = LOOM_ROW_IN(1), i2 = LOOM_ROW_IN(2);
    const __m512d i3 = LOOM_ROW_IN(3), i4 = LOOM_ROW_IN(4), i5 = LOOM_ROW_IN(5);
    const __m512d i6 = LOOM_ROW_IN(6), i7 = LOOM_ROW_IN(7);
#undef LOOM_ROW_IN
    __m512d o[8];
    LOOM_TRANSPOSE_8X8_PD(i0, i1, i2, i3, i4, i5, i6, i7, o[0], o[1], o[2], o[3], o[4], o[5], o[6],
                          o[7]);
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      pack[q * G + g] = _mm512_permutexvar_ps(deinterleave, _mm512_castpd_ps(o[g]));
    }
  }
}

// Stores a row of C = alpha * (the sums of acc's 8-lane halves, plus A's row times B over
// the k's [k0, k)) + beta * C: acc[g] lanes 0-7 add up to C(r, 2g), lanes 8-15 to
// C(r, 2g+1). Out of line for the same reason as StorePairRows.
template <int G>
__attribute__((noinline)) LOOM_AVX512DQ void StoreLaneSums(const __m512* acc, const float* arow,
                                                           int64_t k0, int64_t k, const float* b,
                                                           int64_t ldb, __mmask16 mask, float alpha,
                                                           float beta, float* out) {
  __m512 w[8];  // every lane of each half: that half's sum
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    if (g >= G) {
      w[g] = _mm512_setzero_ps();
      continue;
    }
    __m512 v = acc[g];
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0x4E));           // swap pairs in each 128 bits
    v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));           // swap neighbours
    w[g] = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xB1));  // swap 128-bit neighbours
  }
  // Lanes 4q..4q+3 of the row: C(r, 4q..4q+3) = w[2q][0], w[2q][8], w[2q+1][0], w[2q+1][8].
  const __m512i pick = _mm512_setr_epi32(0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24, 0, 8, 16, 24);
  __m512 row = _mm512_permutex2var_ps(w[0], pick, w[1]);
  if (G > 2) row = _mm512_mask_blend_ps(0x00F0, row, _mm512_permutex2var_ps(w[2], pick, w[3]));
  if (G > 4) row = _mm512_mask_blend_ps(0x0F00, row, _mm512_permutex2var_ps(w[4], pick, w[5]));
  if (G > 6) row = _mm512_mask_blend_ps(0xF000, row, _mm512_permutex2var_ps(w[6], pick, w[7]));
  for (int64_t p = k0; p < k; ++p) {
    row = _mm512_fmadd_ps(_mm512_set1_ps(arow[p]), _mm512_maskz_loadu_ps(mask, b + p * ldb), row);
  }
  row = _mm512_mul_ps(row, _mm512_set1_ps(alpha));
  if (beta != 0.f)
    row = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, out), row);
  _mm512_mask_storeu_ps(out, mask, row);
}

// C = alpha * A B + beta * C (A m x k), 4 rows at a time (3 when G > 5, for the registers):
// each register sums 8 consecutive k's of two columns; the 8 lanes are added at the end,
// then the k % 8 last k's (StoreLaneSums).
template <int G>
LOOM_AVX512DQ void PairGemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                            int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                            int64_t ldc, __m512* pack) {
  constexpr int R = G <= 5 ? 4 : 3;
  const auto mask = static_cast<__mmask16>((1u << n) - 1);
  const int64_t chunks = k / 8;
  PackPairColumns<G>(chunks, mask, b, ldb, pack);
  int64_t i = 0;
  for (; i + R <= m; i += R) {
    __m512 acc[R][G];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) acc[r][g] = _mm512_setzero_ps();
    const float* rows = a + i * lda;
    for (int64_t q = 0; q < chunks; ++q) {
      __m512 x[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        x[r] = _mm512_broadcast_f32x8(_mm256_loadu_ps(rows + r * lda + q * 8));
      }
      const __m512* bp = pack + q * G;
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        __m512 w = bp[g];
        asm("" : "+v"(w));  // one load per packed register
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][g] = _mm512_fmadd_ps(x[r], w, acc[r][g]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      StoreLaneSums<G>(acc[r], rows + r * lda, chunks * 8, k, b, ldb, mask, alpha, beta,
                       c + (i + r) * ldc);
    }
  }
  for (; i < m; ++i) NarrowRowAvx512<false>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The calling thread's packed copy of B, 64-byte aligned, at least `vectors` registers.
__m512* PackBuffer(int64_t vectors) {
  thread_local std::vector<float> buffer;
  const auto floats = static_cast<size_t>(vectors) * 16 + 16;
  if (buffer.size() < floats) buffer.resize(floats);
  // A float's address is a multiple of 4: step up to the next multiple of 64 in floats.
  const auto misalignment = reinterpret_cast<uintptr_t>(buffer.data()) % 64;
  float* aligned = buffer.data() + (misalignment == 0 ? 0 : (64 - misalignment) / 4);
  return reinterpret_cast<__m512*>(aligned);
}

// The column-pair kernels pack B per call: up to this many registers (256 KiB); larger
// products (a rare shape: n <= 16 with k in the thousands) stay on the row kernel.
constexpr int64_t kMaxPackVectors = 4096;

template <int G>
LOOM_AVX512DQ bool PairGemmFor(bool transpose_a, int64_t m, int64_t n, int64_t k, float alpha,
                               const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                               float* c, int64_t ldc) {
  if (transpose_a) {
    // Needs a block of 8 rows of C; the pack (k x G registers) is shared by m / 8 blocks.
    if (m < 8 || k * G > kMaxPackVectors) return false;
    PairTransGemm<G>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, PackBuffer(k * G));
  } else {
    // Needs a block of rows and a chunk of 8 k's; packing B costs about what 1 row saves.
    if (m < 4 || k < 16 || (k / 8) * G > kMaxPackVectors) return false;
    PairGemm<G>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, PackBuffer((k / 8) * G));
  }
  return true;
}

bool PairGemmAvx512(bool transpose_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  switch ((n + 1) / 2) {
#define LOOM_PAIR_CASE(G) \
  case G:                 \
    return PairGemmFor<G>(transpose_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    LOOM_PAIR_CASE(1)
    LOOM_PAIR_CASE(2)
    LOOM_PAIR_CASE(3)
    LOOM_PAIR_CASE(4)
    LOOM_PAIR_CASE(5)
    LOOM_PAIR_CASE(6)
    LOOM_PAIR_CASE(7)
    LOOM_PAIR_CASE(8)
#undef LOOM_PAIR_CASE
    default:
      return false;
  }
}

#endif  // defined(__x86_64__)

}  // namespace

void GemmAvx512(bool transpose_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  LOOM_CHECK(n >= 1 && n <= 16) << "narrow Gemm with n = " << n;
#if defined(__x86_64__)
  if (PairGemmAvx512(transpose_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
  if (transpose_a) {
    NarrowGemmAvx512<true>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    NarrowGemmAvx512<false>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
#else
  LOOM_CHECK(false) << "the AVX-512 narrow Gemm needs an x86-64 CPU";
#endif
}

}  // namespace loom::blas_narrow
