#ifndef LOOM_OPS_BLAS_NARROW_H_
#define LOOM_OPS_BLAS_NARROW_H_

// Loom's own kernels for narrow float32 products, C = alpha * op(A) * B + beta * C with
// n <= 16 columns and B not transposed (a classifier's logits layer, X W, and its weight
// gradient, X^T dY): shapes on which a BLAS spends most of its time packing panels.
// Internal to the ops layer: blas.cc calls them for the products its rule gives them.
//
// Each function carries its instruction set in a target attribute, so the file compiles
// without -m flags; the caller asks the CPU first. As BLAS defines it, with beta = 0 C is
// written without being read. Results are deterministic: the same inputs give the same bits
// on every call and thread (the summation order depends only on the shape).
// Thread-safety: all functions are thread-safe (scratch space is per thread).
#include <cstdint>

namespace loom::blas_narrow {

// Entry (i, p) of op(A), A stored row-major with leading dimension lda: the kernels'
// common accessor.
template <bool kTransA>
inline float EntryA(const float* a, int64_t lda, int64_t i, int64_t p) {
  return kTransA ? a[p * lda + i] : a[i * lda + p];
}

// REQUIRES: the CPU has AVX-512F and AVX-512DQ; 1 <= n <= 16.
void GemmAvx512(bool transpose_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// REQUIRES: the CPU has AVX2 and FMA; 1 <= n <= 16.
void GemmAvx2(bool transpose_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace loom::blas_narrow

#endif  // LOOM_OPS_BLAS_NARROW_H_
