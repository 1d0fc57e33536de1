#ifndef LOOM_OPS_BLAS_H_
#define LOOM_OPS_BLAS_H_

// The one place Loom calls a BLAS. Row-major GEMM: C = alpha * op(A) * op(B) + beta * C,
// with op(X) = X or X^T. Internal to the ops layer (not installed).
//
// Float32 products run on OpenBLAS or on oneDNN's dnnl_sgemm, chosen per shape and per CPU
// by a rule taken from side-by-side measurements (ChooseGemmLibrary; bench/RESULTS.md).
// The rule depends only on the shape and the CPU's feature bits, never on a timing taken
// at run time, so two runs on one machine compute bit-identical results. Float64 products
// always run on OpenBLAS.
//
// Narrow float32 products (n <= 16 columns, B not transposed: a classifier's logits layer
// and its weight gradient) run on Loom's own kernels instead (blas_narrow.h), in the widest
// variant the CPU has: AVX-512F + DQ (column-pair kernels that fill all 16 lanes, with the
// one-masked-register-per-row kernel for the rows and shapes they leave) or AVX2 + FMA (two
// registers per row). The variant is chosen once, at run time, from the CPU's feature bits,
// so one build runs on any x86-64 machine; without either (or off x86-64) every product
// goes to the BLAS.
// Thread-safety: all functions are thread-safe.
#include <cstdint>

namespace loom {

// Sets the BLAS's thread count. OpenBLAS has one count per process: every Session::Run
// sets it to its Session's intra-op thread count as it starts, so a Run's products use its
// own Session's count (two Sessions running at once share whichever was set last). Only a
// change reaches OpenBLAS (setting it may start threads).
void SetBlasThreads(int num_threads);
// OpenBLAS's current thread count.
int BlasThreads();

// The library behind a float32 product that the narrow kernel below does not take.
enum class GemmLibrary {
  kOpenBlas,
  kOnednn,  // dnnl_sgemm, on OpenMP threads: the count set by SetBlasThreads
};
const char* GemmLibraryName(GemmLibrary library);
// The library Gemm uses for an m x n x k product on this CPU:
// - with AVX-512F: oneDNN for every product. bench/gemm_bench on the Intel Xeon (AVX-512,
//   AMX) of session 12, the MLP's and the im2col convnet's 21 products at 1 and 2 threads,
//   three runs: the step's products on oneDNN against OpenBLAS, MLP 175-179 against 158-163
//   GFLOP/s at 1 thread, 341-367 against 280-307 at 2; convnet 151-157 against 127-132 and
//   252-274 against 183-200. OpenBLAS won only the convnet's 64 x 3136 x 1024 dense input
//   gradient at 2 threads (by ~20%, twice) and, once, its forward product at 1 thread: a rule
//   for those would gain under 2% of the step's products (bench/RESULTS.md, session 12);
// - with AVX2 only: oneDNN when a side is short (m <= 64 or k <= 64, k > 0), where
//   OpenBLAS's panel packing dominates (1.3-2x slower: a dense layer's weight gradient at
//   batch 64, the logits layer's input gradient, im2col products with k = 25); OpenBLAS
//   otherwise (equal on the MLP's 256 x 512 products, 1.5x faster on 512 x 512 x 256).
GemmLibrary ChooseGemmLibrary(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);
// Whether Gemm computes a float32 C = op(A) B^T through the transposed product C^T = B A^T
// (B's rows then read in order, no transposed operand), transposing A (k x m, small) into a
// buffer and C^T back: when A is short (m <= 64), C wide (n >= 1024) and k >= 256, on AMD
// CPUs with AVX-512F. Measured on an AMD EPYC (Zen 4) at 1 thread, the convnet's dense
// input gradient 64 x 3136 x 1024: dnnl_sgemm 5.7 ms with B transposed, 4.6 ms this way
// (transposes included); OpenBLAS as slow as oneDNN on the direct product (bench/RESULTS.md,
// session 16). Not measured on Intel CPUs, which keep the direct product. The result
// differs from the direct product's by float32 rounding (another summation order); like
// the library rule it depends only on the shape and the CPU.
bool ChooseTransposedProduct(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k);
// C = alpha * A B^T + beta * C (A stored m x k, B stored n x k) through the transposed
// product on `library`, whatever the rule says, for tests and benchmarks.
void GemmByTransposedProduct(GemmLibrary library, int64_t m, int64_t n, int64_t k, float alpha,
                             const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                             float* c, int64_t ldc);
// The product on `library` alone (no narrow kernel), for tests and benchmarks. An empty
// product (m, n or k = 0) runs on OpenBLAS whatever `library` says.
void GemmWithLibrary(GemmLibrary library, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc);

void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc);
void Gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);

// The implementations of the float32 Gemm, for tests and benchmarks.
enum class GemmVariant {
  kBlas,    // the library ChooseGemmLibrary names for every product
  kAvx2,    // narrow products on the AVX2 + FMA kernel, the rest on the chosen library
  kAvx512,  // narrow products on the AVX-512F + DQ kernels, the rest on the chosen library
};
const char* GemmVariantName(GemmVariant variant);
// True when this CPU can run `variant` (kBlas: always).
bool CpuSupports(GemmVariant variant);
// The variant Gemm uses here: the last of kAvx512, kAvx2, kBlas that CpuSupports.
GemmVariant ActiveGemmVariant();
// Gemm through `variant`. REQUIRES: CpuSupports(variant).
void GemmWithVariant(GemmVariant variant, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace loom

#endif  // LOOM_OPS_BLAS_H_
