#include "loom/ops/blas.h"

#include <cblas.h>

#include <atomic>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace loom {
namespace {

#if defined(__AVX512F__)
// C = alpha * op(A) * B + beta * C for a narrow B (n <= 16, not transposed): one masked
// AVX-512 register holds a row of B or C, and blocks of 8 rows of C accumulate in 8
// registers while A's entries are broadcast. For these shapes (the logits layer of a
// classifier: 32x784 * 784x10 forward, 784x32 * 32x10 for the weight gradient) OpenBLAS
// spends most of its time packing panels; this runs at about twice its speed (bench/RESULTS.md).
template <bool kTransA>
inline float EntryA(const float* a, int64_t lda, int64_t i, int64_t p) {
  return kTransA ? a[p * lda + i] : a[i * lda + p];
}

inline void StoreRow(float* out, __mmask16 mask, __m512 acc, float alpha, float beta) {
  __m512 v = _mm512_mul_ps(acc, _mm512_set1_ps(alpha));
  if (beta != 0.f) v = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, out), v);
  _mm512_mask_storeu_ps(out, mask, v);
}

// Rows i0 .. i0+7 of C. The accumulators are named variables: as an array, g++ 12 spills
// them to the stack on every iteration.
template <bool kTransA>
void NarrowBlock8(int64_t i0, int64_t k, __mmask16 mask, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
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
  StoreRow(c + (i0 + 0) * ldc, mask, c0, alpha, beta);
  StoreRow(c + (i0 + 1) * ldc, mask, c1, alpha, beta);
  StoreRow(c + (i0 + 2) * ldc, mask, c2, alpha, beta);
  StoreRow(c + (i0 + 3) * ldc, mask, c3, alpha, beta);
  StoreRow(c + (i0 + 4) * ldc, mask, c4, alpha, beta);
  StoreRow(c + (i0 + 5) * ldc, mask, c5, alpha, beta);
  StoreRow(c + (i0 + 6) * ldc, mask, c6, alpha, beta);
  StoreRow(c + (i0 + 7) * ldc, mask, c7, alpha, beta);
}

// One row of C (the remainder after the blocks of 8), with two accumulators over p.
template <bool kTransA>
void NarrowRow(int64_t i, int64_t k, __mmask16 mask, float alpha, const float* a, int64_t lda,
               const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
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
  StoreRow(c + i * ldc, mask, _mm512_add_ps(c0, c1), alpha, beta);
}

template <bool kTransA>
void NarrowGemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
  int64_t i = 0;
  for (; i + 8 <= m; i += 8) NarrowBlock8<kTransA>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
  for (; i < m; ++i) NarrowRow<kTransA>(i, k, mask, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Narrow products up to this many multiply-adds stay on the calling thread (~60 us);
// larger ones go to the BLAS, which can use several threads.
constexpr int64_t kMaxNarrowWork = int64_t{1} << 22;
#endif

}  // namespace

void SetBlasThreads(int num_threads) {
  static std::atomic<int> current{0};
  if (current.exchange(num_threads) != num_threads) openblas_set_num_threads(num_threads);
}

int BlasThreads() { return openblas_get_num_threads(); }

void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
#if defined(__AVX512F__)
  if (!transpose_b && n >= 1 && n <= 16 && m * n * k <= kMaxNarrowWork) {
    if (transpose_a) {
      NarrowGemm<true>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
      NarrowGemm<false>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  cblas_dgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

}  // namespace loom
