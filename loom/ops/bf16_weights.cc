#include "loom/ops/bf16_weights.h"

#include <unordered_map>

#include "loom/graph/graph.h"
#include "loom/graph/resource.h"
#include "loom/ops/bf16.h"

namespace loom::bf16 {

// The Session's copies, one per variable (the ResourceMgr never removes a variable, so its
// address names it for the Session's lifetime).
class VariableBitsCache : public Resource {
 public:
  // The copy made for (var, version), or undefined.
  Tensor Find(const VariableResource* var, uint64_t version) LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    auto it = entries_.find(var);
    if (it == entries_.end() || it->second.version != version) return Tensor();
    ++counts_.reused;
    return it->second.bits;
  }
  // Whether the cache holds a copy of any version of var.
  bool Has(const VariableResource* var) const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return entries_.count(var) != 0;
  }
  // Keeps `bits` as the copy of (var, version) unless a copy of a later version is kept;
  // `by_update` counts it as an update's.
  void Store(const VariableResource* var, uint64_t version, const Tensor& bits, bool by_update)
      LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    ++(by_update ? counts_.updated : counts_.made);
    Entry& entry = entries_[var];
    if (!entry.bits.defined() || entry.version < version) entry = Entry{version, bits};
  }
  VariableBitsCounts counts() const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return counts_;
  }

 private:
  struct Entry {
    uint64_t version = 0;
    Tensor bits;
  };
  mutable Mutex mu_;
  std::unordered_map<const VariableResource*, Entry> entries_ LOOM_GUARDED_BY(mu_);
  VariableBitsCounts counts_ LOOM_GUARDED_BY(mu_);
};

namespace {

// The Variable node whose value `out` is, through Identity nodes; nullptr when none.
const Node* VariableSource(Output out) {
  const Node* node = out.node;
  while (node != nullptr && node->op_def().name == "Identity" && node->num_inputs() == 1) {
    node = node->input(0).node;
  }
  return node != nullptr && node->op_def().role == OpRole::kVariable ? node : nullptr;
}

}  // namespace

Tensor VariableBits(const KernelContext& c, int input) {
  const Tensor& x = c.input(input);
  if (!x.defined() || x.dtype() != kFloat32 || x.NumElements() == 0) return Tensor();
  const Node* source = VariableSource(c.node().input(input));
  if (source == nullptr) return Tensor();
  const auto* var = c.resources().Lookup<VariableResource>(source->name());
  if (var == nullptr) return Tensor();
  uint64_t version = 0;
  {
    MutexLock lock(var->mu());
    const Tensor& value = var->value();
    if (value.buffer() != x.buffer() || value.byte_offset() != x.byte_offset() ||
        value.dtype() != x.dtype() || value.NumElements() != x.NumElements()) {
      return Tensor();  // not the current value: written since the read, or a view of it
    }
    version = var->version();
  }
  auto& cache = c.resources().Unnamed<VariableBitsCache>();
  if (Tensor bits = cache.Find(var, version); bits.defined()) return bits;
  // x views the buffer, so no writer changes it while this converts (see the header).
  Tensor bits(kUInt8, Shape{x.NumElements() * 2});
  FloatToBf16(x.data<float>(), static_cast<uint16_t*>(bits.raw_data()), x.NumElements(), c.pool());
  cache.Store(var, version, bits, /*by_update=*/false);
  return bits;
}

UpdatedBits::UpdatedBits(ResourceMgr& resources, const VariableResource& var) {
  const Tensor& value = var.value();
  if (value.dtype() != kFloat32 || value.NumElements() == 0) return;
  auto& cache = resources.Unnamed<VariableBitsCache>();
  if (!cache.Has(&var)) return;  // no bf16 product has read it
  cache_ = &cache;
  var_ = &var;
  version_ = var.version();
  bits_ = Tensor(kUInt8, Shape{value.NumElements() * 2});
}

void UpdatedBits::Convert(const float* values, int64_t begin, int64_t end) {
  FloatToBf16(values + begin, static_cast<uint16_t*>(bits_.raw_data()) + begin, end - begin);
}

void UpdatedBits::Publish() { cache_->Store(var_, version_, bits_, /*by_update=*/true); }

VariableBitsCounts CountVariableBits(ResourceMgr& resources) {
  return resources.Unnamed<VariableBitsCache>().counts();
}

}  // namespace loom::bf16
