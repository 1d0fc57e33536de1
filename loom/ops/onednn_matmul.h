#ifndef LOOM_OPS_ONEDNN_MATMUL_H_
#define LOOM_OPS_ONEDNN_MATMUL_H_

// The bf16 policy's hardware path for MatMul: oneDNN's matmul primitive with bf16 src and
// weights and a float32 dst, accumulating in float32 (AMX tiles or AVX-512 BF16's
// vdpbf16ps, whichever oneDNN picks for the CPU). Internal to the ops layer; bf16.h says
// when it runs.
//
// The float32 operands are rounded to bf16 here (bf16::FloatToBf16, round to nearest
// even) into buffers from Loom's tensor allocator, unless the caller has their bf16 bits
// already (a variable's cached copy: bf16_weights.h); transposes are strides, not copies.
// The primitive (descriptor and compiled kernel) is made once per shape, transposes and
// thread count and kept (up to 512 of them), so a step re-creates nothing.
// Thread-safety: thread-safe.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/mutex.h"
#include "loom/base/thread_pool.h"
#include "loom/tensor/tensor.h"

namespace loom::bf16 {

// oneDNN's own layouts of one unchanging bf16 operand b (a variable's copy that many
// products read, bf16_weights.h), each made once by a reorder: a product given them runs
// a primitive on that layout and skips the copy into it that its kernel otherwise makes on
// every call (on an AMX Xeon, 1024x784x256: 0.53 -> 0.48 ms; bench/RESULTS.md, session 14).
// Not for operands that change between a few products: the reorder costs about three of
// those copies. A layout depends on the product's shape (its rows too), so at most 8 are
// kept; products of further shapes read b_bf16 as it is. Thread-safe.
class WeightLayouts {
 private:
  friend class WeightLayoutsAccess;  // onednn_matmul.cc
  mutable Mutex mu_;
  std::vector<std::pair<std::vector<int64_t>, Tensor>> layouts_ LOOM_GUARDED_BY(mu_);
};

// c[m,n] (row-major, leading dim n) = op(a) op(b), op(a) [m,k] from a (leading dim lda;
// stored [k,m] when transpose_a), op(b) [k,n] from b likewise, on `pool`'s thread count of
// OpenMP threads (the rounding on `pool` itself). Returns false, having written nothing, when
// oneDNN has no bf16 primitive for it (a CPU without bf16 support: see DetectHardware).
// `a_bf16` / `b_bf16`, when not null, are the operands' bf16 bits (FloatToBf16 of the
// stored matrix, same leading dim), used instead of converting a / b; `b_layouts`, when
// not null (and b_bf16 given), keeps oneDNN's layouts of b_bf16 for later calls.
// REQUIRES: m, n, k > 0.
bool OnednnMatMulBf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                      ThreadPool& pool, const uint16_t* a_bf16 = nullptr,
                      const uint16_t* b_bf16 = nullptr, WeightLayouts* b_layouts = nullptr);

// The name of the oneDNN implementation that OnednnMatMulBf16 runs for these arguments on
// `threads` threads ("brg:avx512_core_amx", "brg:avx512_core_bf16", ...), or "" when oneDNN
// has none (for tests and benchmarks: which kernel the CPU actually gets).
std::string OnednnMatMulBf16Impl(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                                 int64_t k, int64_t lda, int64_t ldb, int threads);

}  // namespace loom::bf16

#endif  // LOOM_OPS_ONEDNN_MATMUL_H_
