#include "loom/ops/blas.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>

#include "loom/base/check.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define LOOM_BLAS_X86 1
#endif

namespace loom {
namespace {

#ifdef LOOM_BLAS_X86
// The narrow kernels compute C = alpha * op(A) * B + beta * C for a narrow B (n <= 16, not
// transposed): a row of B or C fits in one AVX-512 register or two AVX2 registers, and a
// block of rows of C accumulates in registers while A's entries are broadcast. For these
// shapes (the logits layer of a classifier: 32x784 * 784x10 forward, 784x32 * 32x10 for
// the weight gradient) OpenBLAS spends most of its time packing panels; the kernel runs at
// about twice its speed (bench/RESULTS.md). Each function carries its instruction set in a
// target attribute, so the file compiles without -m flags and the CPU is asked at run time.
// Accumulators are named variables: as an array, g++ 12 spills them to the stack on every
// iteration.
template <bool kTransA>
inline float EntryA(const float* a, int64_t lda, int64_t i, int64_t p) {
  return kTransA ? a[p * lda + i] : a[i * lda + p];
}

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
#endif  // LOOM_BLAS_X86

// Narrow products up to this many multiply-adds stay on the calling thread (~60 us);
// larger ones go to the BLAS, which can use several threads.
constexpr int64_t kMaxNarrowWork = int64_t{1} << 22;

GemmVariant DetectVariant() {
#ifdef LOOM_BLAS_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return GemmVariant::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return GemmVariant::kAvx2;
#endif
  return GemmVariant::kBlas;
}

// The count SetBlasThreads last set (0: never set).
std::atomic<int>& CurrentBlasThreads() {
  static std::atomic<int> current{0};
  return current;
}

void OpenBlasGemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

void OnednnGemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                int64_t ldc) {
  // OpenMP's thread count is per calling thread: set it on the thread that runs the kernel.
  const int threads = CurrentBlasThreads().load(std::memory_order_relaxed);
  omp_set_num_threads(threads > 0 ? threads : openblas_get_num_threads());
  const dnnl_status_t status = dnnl_sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k,
                                          alpha, a, lda, b, ldb, beta, c, ldc);
  LOOM_CHECK(status == dnnl_success)
      << "dnnl_sgemm failed with status " << int(status) << " on " << m << "x" << n << "x" << k;
}

void LibraryGemm(GemmLibrary library, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                 int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float beta, float* c, int64_t ldc) {
  // dnnl_sgemm refuses an empty product; OpenBLAS computes C = beta * C as BLAS defines it.
  if (library == GemmLibrary::kOnednn && m > 0 && n > 0 && k > 0) {
    OnednnGemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    OpenBlasGemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

}  // namespace

void SetBlasThreads(int num_threads) {
  if (CurrentBlasThreads().exchange(num_threads) != num_threads) {
    openblas_set_num_threads(num_threads);
  }
}

int BlasThreads() { return openblas_get_num_threads(); }

const char* GemmVariantName(GemmVariant variant) {
  switch (variant) {
    case GemmVariant::kBlas:
      return "blas";
    case GemmVariant::kAvx2:
      return "avx2";
    case GemmVariant::kAvx512:
      return "avx512";
  }
  return "?";
}

const char* GemmLibraryName(GemmLibrary library) {
  return library == GemmLibrary::kOnednn ? "onednn" : "openblas";
}

GemmLibrary ChooseGemmLibrary(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  (void)transpose_a, (void)transpose_b, (void)n;                  // the measured rule needs neither
  if (m == 0 || n == 0 || k == 0) return GemmLibrary::kOpenBlas;  // C = beta * C only
  if (ActiveGemmVariant() == GemmVariant::kAvx512) return GemmLibrary::kOnednn;
  return m <= 64 || k <= 64 ? GemmLibrary::kOnednn : GemmLibrary::kOpenBlas;
}

void GemmWithLibrary(GemmLibrary library, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc) {
  LibraryGemm(library, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool CpuSupports(GemmVariant variant) {
  switch (variant) {
    case GemmVariant::kBlas:
      return true;
    case GemmVariant::kAvx2:
      return ActiveGemmVariant() != GemmVariant::kBlas;  // every AVX-512F CPU has AVX2 + FMA
    case GemmVariant::kAvx512:
      return ActiveGemmVariant() == GemmVariant::kAvx512;
  }
  return false;
}

GemmVariant ActiveGemmVariant() {
  static const GemmVariant variant = DetectVariant();
  return variant;
}

namespace {

// REQUIRES: CpuSupports(variant).
void GemmOn(GemmVariant variant, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
            int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
            float beta, float* c, int64_t ldc) {
#ifdef LOOM_BLAS_X86
  if (variant != GemmVariant::kBlas && !transpose_b && n >= 1 && n <= 16 &&
      m * n * k <= kMaxNarrowWork) {
    if (variant == GemmVariant::kAvx512) {
      if (transpose_a) {
        NarrowGemmAvx512<true>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      } else {
        NarrowGemmAvx512<false>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      }
    } else if (transpose_a) {
      NarrowGemmAvx2<true>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
      NarrowGemmAvx2<false>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    return;
  }
#endif
  LibraryGemm(ChooseGemmLibrary(transpose_a, transpose_b, m, n, k), transpose_a, transpose_b, m, n,
              k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void GemmWithVariant(GemmVariant variant, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc) {
  LOOM_CHECK(CpuSupports(variant))
      << "this CPU cannot run the " << GemmVariantName(variant) << " Gemm";
  GemmOn(variant, transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  GemmOn(ActiveGemmVariant(), transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
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
