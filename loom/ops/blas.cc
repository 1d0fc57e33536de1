#include "loom/ops/blas.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "loom/base/check.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/blas_narrow.h"
#include "loom/ops/vector_isa.h"

#if defined(__x86_64__)
#define LOOM_BLAS_X86 1
#endif

namespace loom {
namespace {

// Narrow products up to this many multiply-adds stay on the calling thread (~60 us);
// larger ones go to the BLAS, which can use several threads.
constexpr int64_t kMaxNarrowWork = int64_t{1} << 22;

GemmVariant DetectVariant() {
#ifdef LOOM_BLAS_X86
  __builtin_cpu_init();
  // The AVX-512 kernels use DQ's 256-bit broadcasts: every AVX-512 CPU but Xeon Phi has it.
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) {
    return GemmVariant::kAvx512;
  }
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

// True on AMD CPUs with AVX-512F (Zen 4 and later): where the transposed-product rule was
// measured (blas.h: ChooseTransposedProduct).
bool AmdWithAvx512() {
#ifdef LOOM_BLAS_X86
  return internal::CpuIsAmd() && internal::CpuHasAvx512F();
#else
  return false;
#endif
}

// C = alpha * A B^T + beta * C (A m x k, B stored n x k) as C^T = alpha * B A^T: A
// transposed into a buffer, one product with neither operand transposed, C^T transposed
// back (blas.h: ChooseTransposedProduct says when and why).
void TransposedProduct(GemmLibrary library, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  thread_local std::vector<float> a_t, c_t;  // kept: no allocation per call
  if (a_t.size() < static_cast<size_t>(k * m)) a_t.resize(k * m);
  if (c_t.size() < static_cast<size_t>(n * m)) c_t.resize(n * m);
  array_internal::Transpose2D(a, lda, a_t.data(), m, m, 0, k);
  LibraryGemm(library, false, false, n, m, k, alpha, b, ldb, a_t.data(), m, 0.f, c_t.data(), m);
  if (beta == 0.f) {
    array_internal::Transpose2D(c_t.data(), m, c, ldc, n, 0, m);  // C written without being read
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = c_t[j * m + i] + beta * c[i * ldc + j];
  }
}

}  // namespace

bool ChooseTransposedProduct(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  return AmdWithAvx512() && !transpose_a && transpose_b && m <= 64 && n >= 1024 && k >= 256;
}

void GemmByTransposedProduct(GemmLibrary library, int64_t m, int64_t n, int64_t k, float alpha,
                             const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                             float* c, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0) {
    LibraryGemm(GemmLibrary::kOpenBlas, false, true, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  TransposedProduct(library, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

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
      blas_narrow::GemmAvx512(transpose_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
      blas_narrow::GemmAvx2(transpose_a, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    return;
  }
#endif
  if (ChooseTransposedProduct(transpose_a, transpose_b, m, n, k)) {
    TransposedProduct(ChooseGemmLibrary(false, false, n, m, k), m, n, k, alpha, a, lda, b, ldb,
                      beta, c, ldc);
    return;
  }
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
