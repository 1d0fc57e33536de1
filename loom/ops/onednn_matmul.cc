#include "loom/ops/onednn_matmul.h"

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "loom/ops/bf16.h"
#include "loom/ops/onednn_internal.h"
#include "loom/tensor/tensor.h"

namespace loom::bf16 {
namespace {

using dnnl::memory;
using onednn_internal::CpuEngine;

// op(x) [rows, cols] stored row-major with leading dim ld, transposed or not, as strides.
memory::dims Strides(bool transposed, int64_t ld) {
  return transposed ? memory::dims{1, ld} : memory::dims{ld, 1};
}

// The stored matrix of op(x) [rows, cols] rounded to bf16: the elements it spans
// (leading dim included), so the strides stay valid.
Tensor ToBf16(const float* x, bool transposed, int64_t rows, int64_t cols, int64_t ld,
              ThreadPool& pool) {
  const int64_t stored_rows = transposed ? cols : rows;
  const int64_t stored_cols = transposed ? rows : cols;
  const int64_t n = (stored_rows - 1) * ld + stored_cols;
  Tensor out(kUInt8, Shape{n * 2});
  FloatToBf16(x, static_cast<uint16_t*>(out.raw_data()), n, pool);
  return out;
}

}  // namespace

bool OnednnMatMulBf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                      ThreadPool& pool) {
  const auto bf16 = memory::data_type::bf16;
  const memory::desc a_desc({m, k}, bf16, Strides(transpose_a, lda));
  const memory::desc b_desc({k, n}, bf16, Strides(transpose_b, ldb));
  const memory::desc c_desc({m, n}, memory::data_type::f32, memory::dims{n, 1});
  onednn_internal::UseThreads(pool.num_threads());  // before the descriptor fixes the split
  std::optional<dnnl::matmul::primitive_desc> pd;
  try {
    pd.emplace(dnnl::matmul::desc(a_desc, b_desc, c_desc), onednn_internal::UserScratchpad(),
               CpuEngine());
  } catch (const dnnl::error&) {
    return false;  // no bf16 matmul on this CPU (or for this shape)
  }
  Tensor a16 = ToBf16(a, transpose_a, m, k, lda, pool);
  Tensor b16 = ToBf16(b, transpose_b, k, n, ldb, pool);
  Tensor scratch(
      kUInt8, Shape{static_cast<int64_t>(std::max<size_t>(pd->scratchpad_desc().get_size(), 1))});
  dnnl::stream stream(CpuEngine());
  memory a_mem(a_desc, CpuEngine(), a16.raw_data());
  memory b_mem(b_desc, CpuEngine(), b16.raw_data());
  memory c_mem(c_desc, CpuEngine(), c);
  memory scratch_mem(pd->scratchpad_desc(), CpuEngine(), scratch.raw_data());
  dnnl::matmul(*pd).execute(stream, {{DNNL_ARG_SRC, a_mem},
                                     {DNNL_ARG_WEIGHTS, b_mem},
                                     {DNNL_ARG_DST, c_mem},
                                     {DNNL_ARG_SCRATCHPAD, scratch_mem}});
  stream.wait();
  return true;
}

}  // namespace loom::bf16
