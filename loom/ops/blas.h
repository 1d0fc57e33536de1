#ifndef LOOM_OPS_BLAS_H_
#define LOOM_OPS_BLAS_H_

// The one place Loom calls a BLAS (OpenBLAS, chosen by measurement: bench/RESULTS.md).
// Row-major GEMM: C = alpha * op(A) * op(B) + beta * C, with op(X) = X or X^T.
#include <cstdint>

namespace loom {

// Sets the BLAS's thread count. OpenBLAS has one count per process: every Session::Run
// sets it to its Session's intra-op thread count as it starts, so a Run's products use its
// own Session's count (two Sessions running at once share whichever was set last). Only a
// change reaches OpenBLAS (setting it may start threads).
void SetBlasThreads(int num_threads);
// OpenBLAS's current thread count.
int BlasThreads();

void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc);
void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);

}  // namespace loom

#endif  // LOOM_OPS_BLAS_H_
