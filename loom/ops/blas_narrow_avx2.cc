// The AVX2 + FMA variant of the narrow kernels (blas_narrow.h): blas_narrow.cc's row kernel
// with a row of B or C in two 8-lane registers, for CPUs without AVX-512.
#include <cstdint>

#include "loom/base/check.h"
#include "loom/ops/blas_narrow.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::blas_narrow {
namespace {

#if defined(__x86_64__)
// ---- AVX2 + FMA: a row is two 8-lane registers (columns 0-7 and 8-15) loaded and stored
// with lane masks; blocks of 4 rows (8 accumulators of the 16 registers).
#define LOOM_AVX2 __attribute__((target("avx2,fma")))

struct Masks256 {
  __m256i lo, hi;
};

LOOM_AVX2 inline Masks256 MakeMasks256(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const auto count = static_cast<int>(n);
  return {_mm256_cmpgt_epi32(_mm256_set1_epi32(count), lanes),
          _mm256_cmpgt_epi32(_mm256_set1_epi32(count - 8), lanes)};
}

LOOM_AVX2 inline void StoreRow256(float* out, const Masks256& mask, __m256 lo, __m256 hi,
                                  float alpha, float beta) {
  const __m256 va = _mm256_set1_ps(alpha);
  lo = _mm256_mul_ps(lo, va);
  hi = _mm256_mul_ps(hi, va);
  if (beta != 0.f) {
    const __m256 vb = _mm256_set1_ps(beta);
    lo = _mm256_fmadd_ps(vb, _mm256_maskload_ps(out, mask.lo), lo);
    hi = _mm256_fmadd_ps(vb, _mm256_maskload_ps(out + 8, mask.hi), hi);
  }
  _mm256_maskstore_ps(out, mask.lo, lo);
  _mm256_maskstore_ps(out + 8, mask.hi, hi);
}

template <bool kTransA>
LOOM_AVX2 void NarrowBlock4Avx2(int64_t i0, int64_t k, const Masks256& mask, float alpha,
                                const float* a, int64_t lda, const float* b, int64_t ldb,
                                float beta, float* c, int64_t ldc) {
  __m256 l0 = _mm256_setzero_ps(), l1 = l0, l2 = l0, l3 = l0;
  __m256 h0 = l0, h1 = l0, h2 = l0, h3 = l0;
  for (int64_t p = 0; p < k; ++p) {
    const float* row = b + p * ldb;
    const __m256 lo = _mm256_maskload_ps(row, mask.lo);
    const __m256 hi = _mm256_maskload_ps(row + 8, mask.hi);
    __m256 e = _mm256_set1_ps(EntryA<kTransA>(a, lda, i0 + 0, p));
    l0 = _mm256_fmadd_ps(e, lo, l0);
    h0 = _mm256_fmadd_ps(e, hi, h0);
    e = _mm256_set1_ps(EntryA<kTransA>(a, lda, i0 + 1, p));
    l1 = _mm256_fmadd_ps(e, lo, l1);
    h1 = _mm256_fmadd_ps(e, hi, h1);
    e = _mm256_set1_ps(EntryA<kTransA>(a, lda, i0 + 2, p));
    l2 = _mm256_fmadd_ps(e, lo, l2);
    h2 = _mm256_fmadd_ps(e, hi, h2);
    e = _mm256_set1_ps(EntryA<kTransA>(a, lda, i0 + 3, p));
    l3 = _mm256_fmadd_ps(e, lo, l3);
    h3 = _mm256_fmadd_ps(e, hi, h3);
  }
  StoreRow256(c + (i0 + 0) * ldc, mask, l0, h0, alpha, beta);
  StoreRow256(c + (i0 + 1) * ldc, mask, l1, h1, alpha, beta);
  StoreRow256(c + (i0 + 2) * ldc, mask, l2, h2, alpha, beta);
  StoreRow256(c + (i0 + 3) * ldc, mask, l3, h3, alpha, beta);
}

template <bool kTransA>
LOOM_AVX2 void NarrowRowAvx2(int64_t i, int64_t k, const Masks256& mask, float alpha,
                             const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                             float* c, int64_t ldc) {
  __m256 lo = _mm256_setzero_ps(), hi = lo;
  for (int64_t p = 0; p < k; ++p) {
    const float* row = b + p * ldb;
    const __m256 e = _mm256_set1_ps(EntryA<kTransA>(a, lda, i, p));
    lo = _mm256_fmadd_ps(e, _mm256_maskload_ps(row, mask.lo), lo);
    hi = _mm256_fmadd_ps(e, _mm256_maskload_ps(row + 8, mask.hi), hi);
  }
  StoreRow256(c + i * ldc, mask, lo, hi, alpha, beta);
}

template <bool kTransA>
LOOM_AVX2 void NarrowGemmAvx2(int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                              int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                              int64_t ldc) {
  const Masks256 mask = MakeMasks256(n);
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    NarrowBlock4Avx2<kTransA>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  for (; i < m; ++i) NarrowRowAvx2<kTransA>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif  // defined(__x86_64__)

}  // namespace

void GemmAvx2(bool transpose_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  LOOM_CHECK(n >= 1 && n <= 16) << "narrow Gemm with n = " << n;
#if defined(__x86_64__)
  if (transpose_a) {
    NarrowGemmAvx2<true>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    NarrowGemmAvx2<false>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
#else
  LOOM_CHECK(false) << "the AVX2 narrow Gemm needs an x86-64 CPU";
#endif
}

}  // namespace loom::blas_narrow
