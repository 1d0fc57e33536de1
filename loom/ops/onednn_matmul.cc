#include "loom/ops/onednn_matmul.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>

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
// (leading dim included), so the strides stay valid. Undefined (nothing converted) when
// the caller has the bits already (`have`).
Tensor ToBf16(const float* x, const uint16_t* have, bool transposed, int64_t rows, int64_t cols,
              int64_t ld, ThreadPool& pool) {
  if (have != nullptr) return Tensor();
  const int64_t stored_rows = transposed ? cols : rows;
  const int64_t stored_cols = transposed ? rows : cols;
  const int64_t n = (stored_rows - 1) * ld + stored_cols;
  Tensor out(kUInt8, Shape{n * 2});
  FloatToBf16(x, static_cast<uint16_t*>(out.raw_data()), n, pool);
  return out;
}

// A product's primitive: everything that depends only on the shapes, transposes and thread
// count. Made once per key (a primitive descriptor costs tens of microseconds to make: more
// than the whole product at the MLP's small shapes) and then shared: with a user scratchpad
// a oneDNN primitive keeps no state between executions, so threads may run it at once.
struct Prepared {
  memory::desc a, b, c;
  memory::desc b_plain;  // b as the caller stores it (b itself unless b is in oneDNN's layout)
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  size_t scratch_bytes = 0;
};

// (transpose_a, transpose_b, m, n, k, lda, ldb, threads, b in oneDNN's own layout)
using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int, bool>;

struct KeyHash {
  size_t operator()(const Key& key) const {
    size_t h = 0;
    std::apply([&](const auto&... v) { ((h = h * 1000003u ^ std::hash<int64_t>()(v)), ...); }, key);
    return h;
  }
};

// At most this many products are kept; the cache is emptied when it fills (a model has a
// few dozen product shapes; only a workload whose shapes change every step reaches this).
constexpr size_t kMaxCached = 512;

// The prepared product for a key; nullptr when oneDNN has no bf16 matmul for it (remembered:
// declining is not retried per call).
std::shared_ptr<const Prepared> Prepare(const Key& key) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<Key, std::shared_ptr<const Prepared>, KeyHash>();
  const auto [transpose_a, transpose_b, m, n, k, lda, ldb, threads, blocked_b] = key;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache->find(key); it != cache->end()) return it->second;
  }
  std::shared_ptr<Prepared> prepared;
  const auto bf16 = memory::data_type::bf16;
  const memory::desc a_desc({m, k}, bf16, Strides(transpose_a, lda));
  const memory::desc b_plain({k, n}, bf16, Strides(transpose_b, ldb));
  const memory::desc b_desc =
      blocked_b ? memory::desc({k, n}, bf16, memory::format_tag::any) : b_plain;
  const memory::desc c_desc({m, n}, memory::data_type::f32, memory::dims{n, 1});
  onednn_internal::UseThreads(threads);  // before the descriptor fixes the work split
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, b_desc, c_desc),
                                    onednn_internal::UserScratchpad(), CpuEngine());
    prepared =
        std::make_shared<Prepared>(Prepared{a_desc, pd.weights_desc(), c_desc, b_plain, pd,
                                            dnnl::matmul(pd), pd.scratchpad_desc().get_size()});
  } catch (const dnnl::error&) {
    // no bf16 matmul on this CPU (or for this shape): prepared stays null
  }
  std::lock_guard<std::mutex> lock(mu);
  if (cache->size() >= kMaxCached) cache->clear();
  return cache->emplace(key, std::move(prepared)).first->second;
}

}  // namespace

// WeightLayouts' contents, for the products here.
class WeightLayoutsAccess {
 public:
  static constexpr size_t kMaxLayouts = 8;
  // The layout `prepared` runs b in, made from `b_bits` (stored as prepared->b_plain) on
  // first use; nullptr when the operand has its most layouts already.
  static const void* Get(WeightLayouts& layouts, const Key& key, const Prepared& prepared,
                         const uint16_t* b_bits) LOOM_LOCKS_EXCLUDED(layouts.mu_) {
    std::vector<int64_t> id;
    std::apply([&](const auto&... v) { (id.push_back(static_cast<int64_t>(v)), ...); }, key);
    MutexLock lock(layouts.mu_);
    for (const auto& [layout_id, data] : layouts.layouts_) {
      if (layout_id == id) return data.raw_data();
    }
    if (layouts.layouts_.size() >= kMaxLayouts) return nullptr;
    // Under the lock: two products of one weight wait for one reorder.
    Tensor data(kUInt8, Shape{static_cast<int64_t>(std::max<size_t>(prepared.b.get_size(), 1))});
    memory from(prepared.b_plain, CpuEngine(), const_cast<uint16_t*>(b_bits));
    memory to(prepared.b, CpuEngine(), data.raw_data());
    dnnl::stream stream(CpuEngine());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
    layouts.layouts_.emplace_back(std::move(id), data);
    return data.raw_data();
  }
};

bool OnednnMatMulBf16(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                      ThreadPool& pool, const uint16_t* a_bf16, const uint16_t* b_bf16,
                      WeightLayouts* b_layouts) {
  const int threads = std::max(1, pool.num_threads());
  const Key plain_key{transpose_a, transpose_b, m, n, k, lda, ldb, threads, false};
  const Key blocked_key{transpose_a, transpose_b, m, n, k, lda, ldb, threads, true};
  std::shared_ptr<const Prepared> prepared;
  const void* b_blocked = nullptr;
  if (b_layouts != nullptr && b_bf16 != nullptr) {
    prepared = Prepare(blocked_key);
    if (prepared != nullptr) {
      onednn_internal::UseThreads(threads);
      b_blocked = WeightLayoutsAccess::Get(*b_layouts, blocked_key, *prepared, b_bf16);
    }
  }
  if (b_blocked == nullptr) prepared = Prepare(plain_key);
  if (prepared == nullptr) return false;
  onednn_internal::UseThreads(threads);  // the team size the primitive was made for
  const Tensor a16 = ToBf16(a, a_bf16, transpose_a, m, k, lda, pool);
  const Tensor b16 = ToBf16(b, b_bf16, transpose_b, k, n, ldb, pool);
  // oneDNN's memory objects take a non-const handle; the primitive only reads src and weights.
  void* a_bits = a_bf16 != nullptr ? const_cast<uint16_t*>(a_bf16) : a16.raw_data();
  void* b_bits = b_blocked != nullptr ? const_cast<void*>(b_blocked)
                 : b_bf16 != nullptr  ? const_cast<uint16_t*>(b_bf16)
                                      : b16.raw_data();
  Tensor scratch(kUInt8, Shape{static_cast<int64_t>(std::max<size_t>(prepared->scratch_bytes, 1))});
  dnnl::stream stream(CpuEngine());
  memory a_mem(prepared->a, CpuEngine(), a_bits);
  memory b_mem(prepared->b, CpuEngine(), b_bits);
  memory c_mem(prepared->c, CpuEngine(), c);
  memory scratch_mem(prepared->pd.scratchpad_desc(), CpuEngine(), scratch.raw_data());
  prepared->primitive.execute(stream, {{DNNL_ARG_SRC, a_mem},
                                       {DNNL_ARG_WEIGHTS, b_mem},
                                       {DNNL_ARG_DST, c_mem},
                                       {DNNL_ARG_SCRATCHPAD, scratch_mem}});
  stream.wait();
  return true;
}

std::string OnednnMatMulBf16Impl(bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                                 int64_t k, int64_t lda, int64_t ldb, int threads) {
  const auto prepared =
      Prepare(Key{transpose_a, transpose_b, m, n, k, lda, ldb, std::max(1, threads), false});
  return prepared == nullptr ? std::string() : std::string(prepared->pd.impl_info_str());
}

}  // namespace loom::bf16
