#ifndef LOOM_TRAIN_TRAINING_KERNELS_H_
#define LOOM_TRAIN_TRAINING_KERNELS_H_

// Internal to training_ops.cc: the two drivers every fused update kernel goes through.
// An update is a class template Update<T> with
//   static constexpr int kNumRefs;                      // the variable, then its slots
//   static Update Make(const KernelContext& c);         // reads the scalar inputs
//   void operator()(T* const* refs, const T* grad, int64_t n) const;
// operator() updates n contiguous elements of every ref from n gradient elements; the
// drivers call it on chunks of a dense variable (from the thread pool) or on each touched
// row of a sparse update, so one piece of math serves both.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "loom/graph/op_def.h"
#include "loom/ops/bf16_weights.h"
#include "loom/ops/state.h"

namespace loom::train::internal {

// Elements per thread-pool chunk: below this a loop stays on the calling thread.
inline constexpr int64_t kMinParallelChunk = 32 * 1024;
// Elements per block of a dense update that also makes the variable's bf16 copy: Adam's
// four arrays of 4,096 floats are 64 KiB, in L2 when the block is converted.
inline constexpr int64_t kBitsBlock = 4096;

// Locks the variables named by ref inputs [0, num_refs) in address order (so two ops
// sharing variables never deadlock), checks they are initialized and shaped alike, and
// makes their buffers exclusively theirs (copy-on-write), for the object's lifetime.
class LockedRefs {
 public:
  // The most refs an update op has (held inline: no heap allocation per update).
  static constexpr int kMaxRefs = 4;
  // REQUIRES: num_refs <= kMaxRefs.
  LockedRefs(const KernelContext& c, int num_refs) LOOM_NO_THREAD_SAFETY_ANALYSIS;
  LockedRefs(const LockedRefs&) = delete;
  LockedRefs& operator=(const LockedRefs&) = delete;
  Tensor& value(int i) { return *values_[i]; }
  const VariableResource& variable(int i) const { return *vars_[i]; }

 private:
  // Held from the constructor to the destructor. A lock set known only at run time is
  // beyond clang's thread-safety analysis, so the constructor opts out of it.
  std::array<std::unique_lock<Mutex>, kMaxRefs> locks_;
  std::array<Tensor*, kMaxRefs> values_{};
  std::array<VariableResource*, kMaxRefs> vars_{};
};

// The scalar input i as a double (float32, float64, int32 or int64).
double ScalarInput(const KernelContext& c, int i);

// Checks a dense gradient against the variable's dtype and shape.
void CheckDenseGrad(const KernelContext& c, const Tensor& var, const Tensor& grad);

// The rows a sparse gradient touches. Without duplicate indices, rows[k] receives values
// row k and slot_of is empty. With duplicates, rows holds each index once (in order of
// first appearance) and slot_of[i] is the position in rows of indices[i]; the values
// rows are then summed per position before the update.
struct RowGroups {
  std::vector<int64_t> rows;
  std::vector<int64_t> slot_of;
};
// Checks values/indices against the variable and groups the indices. Returns the row size.
int64_t GroupSparseRows(const KernelContext& c, const Tensor& var, const Tensor& values,
                        const Tensor& indices, RowGroups& groups);

// True when some element of a or b is NaN or +-Inf. An OR-reduction of unordered compares
// (`!(|x| <= max)` is true exactly for NaN and Inf), so the loop vectorizes; the drivers
// run it over each chunk right after its update, while the chunk is still in cache.
template <typename T>
bool AnyNonFinite(const T* __restrict a, const T* __restrict b, int64_t n) {
  constexpr T kMax = std::numeric_limits<T>::max();
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    bad |=
        static_cast<int>(!(std::abs(a[i]) <= kMax)) | static_cast<int>(!(std::abs(b[i]) <= kMax));
  }
  return bad != 0;
}

// One chunk of a dense update and its finite check: true when the chunk holds a NaN or
// Inf afterwards. The update loops are the hot ones of a training step, so on x86-64 the
// chunk is also compiled for AVX2 + FMA (UpdateChunkAvx2) and the drivers pick that one at
// run time when the CPU has both (CpuHasAvx2Fma), or an update's own AVX-512 chunk where
// it has one and the CPU has AVX-512F (UpdateChunkOn, below); the build itself targets
// baseline x86-64 (bench/RESULTS.md has the step times).
// An update may fuse the check into its own loop: a member `bool Checked(r, g, n)` that
// does what operator() does and returns AnyNonFinite(r[0], g, n) of the result. Adam's
// four streams are memory-bound, so a second pass over var and g cost about a quarter of
// the apply (bench/RESULTS.md, session 12).
template <typename Update, typename T>
inline bool UpdateAndCheck(const Update& update, T* const* r, const T* g, int64_t n) {
  if constexpr (requires { update.Checked(r, g, n); }) {
    return update.Checked(r, g, n);
  } else {
    update(r, g, n);
    return AnyNonFinite<T>(r[0], g, n);
  }
}
template <typename Update, typename T>
bool UpdateChunk(const Update& update, T* const* r, const T* g, int64_t n) {
  return UpdateAndCheck(update, r, g, n);
}
#if defined(__x86_64__)
template <typename Update, typename T>
__attribute__((target("avx2,fma"))) bool UpdateChunkAvx2(const Update& update, T* const* r,
                                                         const T* g, int64_t n) {
  return UpdateAndCheck(update, r, g, n);
}
#endif
// True when UpdateChunkAvx2 may run here (checked once).
bool CpuHasAvx2Fma();
// True when the CPU has AVX-512F (checked once): an update with a member
// `bool CheckedAvx512(r, g, n)` (Adam in float32) then runs that instead of its AVX2 copy.
bool CpuHasAvx512F();

// Adam's dense update and finite check of n float32 elements on 16-lane AVX-512F registers:
// the operations of AdamUpdate::Checked in its order, contracted into fused multiply-adds
// as in its AVX2 + FMA copy, so bitwise that copy's results under g++ 12
// (training_kernels_avx512.cc says why it is written by hand). REQUIRES: CpuHasAvx512F().
bool AdamChunkAvx512(float* var, float* m, float* v, const float* g, int64_t n, float alpha,
                     float beta1, float beta2, float epsilon);

// The instruction sets a dense update chunk can run on, widest last.
enum class UpdateIsa { kBaseline, kAvx2, kAvx512 };
// The widest this CPU runs (checked once): kAvx512 with AVX-512F, kAvx2 with AVX2 + FMA.
UpdateIsa ActiveUpdateIsa();
// One chunk of a dense update on `isa`: the update's CheckedAvx512 on kAvx512 when it has
// one (else its AVX2 copy), UpdateChunkAvx2 on kAvx2, UpdateChunk on kBaseline.
// REQUIRES: the CPU runs `isa` (ActiveUpdateIsa() is it or wider).
template <typename Update, typename T>
bool UpdateChunkOn(UpdateIsa isa, const Update& update, T* const* r, const T* g, int64_t n) {
#if defined(__x86_64__)
  if constexpr (requires { update.CheckedAvx512(r, g, n); }) {
    if (isa == UpdateIsa::kAvx512) return update.CheckedAvx512(r, g, n);
  }
  if (isa != UpdateIsa::kBaseline) return UpdateChunkAvx2(update, r, g, n);
#else
  (void)isa;
#endif
  return UpdateChunk(update, r, g, n);
}

// Throws InvalidArgument naming the variable (ref input 0) whose update produced or
// consumed a NaN or Inf, and whether its gradient (`grad`, n elements) was the source.
[[noreturn]] void FailNonFiniteUpdate(const KernelContext& c, const Tensor& grad);

// Every driver checks the updated variable and the gradient it consumed: a NaN or Inf
// reaching a variable stops training with FailNonFiniteUpdate (TF1's NanTensorHook only
// sees the loss, which a Relu or a clipped loss can keep finite).
template <template <typename> class Update>
void DenseApplyKernel(KernelContext& c) {
  constexpr int kRefs = Update<float>::kNumRefs;
  LockedRefs refs(c, kRefs);
  const Tensor& grad = c.input(c.num_inputs() - 1);
  CheckDenseGrad(c, refs.value(0), grad);
  // A weight that bf16 products read gets its new bf16 copy chunk by chunk, while each
  // chunk is in cache (ops/bf16_weights.h).
  bf16::UpdatedBits bits(c.resources(), refs.variable(0));
  SwitchFloat(refs.value(0).dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const Update<T> update = Update<T>::Make(c);
    std::array<T*, kRefs> base;
    for (int i = 0; i < kRefs; ++i) base[i] = refs.value(i).template data<T>();
    const T* g = grad.data<T>();
    std::atomic<bool> non_finite{false};
    const UpdateIsa isa = ActiveUpdateIsa();
    // With a bf16 copy to make, a chunk is updated in blocks, each converted right after
    // its update while it is still in L1/L2 (a chunk is up to the whole variable).
    const int64_t block = bits.wanted() ? kBitsBlock : grad.NumElements();
    c.pool().ParallelFor(grad.NumElements(), kMinParallelChunk,
                         [&](int64_t chunk_b, int64_t chunk_e) {
                           for (int64_t b = chunk_b; b < chunk_e; b += block) {
                             const int64_t e = std::min(chunk_e, b + block);
                             std::array<T*, kRefs> r;
                             for (int i = 0; i < kRefs; ++i) r[i] = base[i] + b;
                             const bool bad = UpdateChunkOn(isa, update, r.data(), g + b, e - b);
                             if (bad) non_finite.store(true, std::memory_order_relaxed);
                             if constexpr (std::is_same_v<T, float>) {
                               if (bits.wanted()) bits.Convert(base[0], b, e);
                             }
                           }
                         });
    if (non_finite.load()) FailNonFiniteUpdate(c, grad);
    if (bits.wanted()) bits.Publish();
    return 0;
  });
}

// Inputs end with values [n, row...] and indices [n]. Touches only the indexed rows.
template <template <typename> class Update>
void SparseApplyKernel(KernelContext& c) {
  constexpr int kRefs = Update<float>::kNumRefs;
  LockedRefs refs(c, kRefs);
  const Tensor& values = c.input(c.num_inputs() - 2);
  const Tensor& indices = c.input(c.num_inputs() - 1);
  RowGroups groups;
  const int64_t row_size = GroupSparseRows(c, refs.value(0), values, indices, groups);
  SwitchFloat(refs.value(0).dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* v = values.data<T>();
    std::vector<T> summed;
    if (!groups.slot_of.empty()) {
      // Duplicate indices: one update per row with the rows' gradients summed (TF1's
      // _apply_sparse_duplicate_indices), so a row is never updated twice concurrently.
      summed.assign(groups.rows.size() * row_size, T(0));
      for (size_t i = 0; i < groups.slot_of.size(); ++i) {
        T* dst = summed.data() + groups.slot_of[i] * row_size;
        const T* src = v + static_cast<int64_t>(i) * row_size;
        for (int64_t j = 0; j < row_size; ++j) dst[j] += src[j];
      }
      v = summed.data();
    }
    const Update<T> update = Update<T>::Make(c);
    std::array<T*, kRefs> base;
    for (int i = 0; i < kRefs; ++i) base[i] = refs.value(i).template data<T>();
    const int64_t rows_per_chunk =
        std::max<int64_t>(1, kMinParallelChunk / std::max<int64_t>(1, row_size));
    std::atomic<bool> non_finite{false};
    c.pool().ParallelFor(static_cast<int64_t>(groups.rows.size()), rows_per_chunk,
                         [&](int64_t b, int64_t e) {
                           std::array<T*, kRefs> r;
                           bool bad = false;
                           for (int64_t k = b; k < e; ++k) {
                             const int64_t offset = groups.rows[k] * row_size;
                             for (int i = 0; i < kRefs; ++i) r[i] = base[i] + offset;
                             bad |= UpdateAndCheck(update, r.data(), v + k * row_size, row_size);
                           }
                           if (bad) non_finite.store(true, std::memory_order_relaxed);
                         });
    if (non_finite.load()) FailNonFiniteUpdate(c, values);
    return 0;
  });
}

}  // namespace loom::train::internal

#endif  // LOOM_TRAIN_TRAINING_KERNELS_H_
