#include "loom/ops/bf16_weights.h"

#include <memory>
#include <unordered_map>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/graph/resource.h"
#include "loom/ops/bf16.h"

namespace loom::bf16 {

// The Session's copies, one per variable (the ResourceMgr never removes a variable, so its
// address names it for the Session's lifetime).
class VariableBitsCache : public Resource {
 public:
  // The copy made for (var, version), or none; with oneDNN's layouts of it once it has
  // served kStableUses products and is large enough for them to pay (onednn_matmul.h).
  OperandCopy Find(const VariableResource* var, uint64_t version) LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    auto it = entries_.find(var);
    if (it == entries_.end() || it->second.version != version) return {};
    ++counts_.reused;
    Entry& entry = it->second;
    if (++entry.uses >= kStableUses && entry.layouts == nullptr &&
        entry.bits.NumElements() / 2 >= kMinLayoutElements) {
      entry.layouts = std::make_shared<WeightLayouts>();
      ++counts_.relaid;
    }
    return {entry.bits, entry.layouts};
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
    if (!entry.bits.defined() || entry.version < version) entry = Entry{version, bits, 1, nullptr};
  }
  VariableBitsCounts counts() const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return counts_;
  }

 private:
  // A training step reads a weight's version twice (x W, dy W^T): its layouts are made only
  // for a version read more often (Predict, Evaluate), and for weights of 32 k elements or
  // more (below, the kernel's own copy is too cheap to skip).
  static constexpr int kStableUses = 4;
  static constexpr int64_t kMinLayoutElements = 32 * 1024;
  struct Entry {
    uint64_t version = 0;
    Tensor bits;
    int uses = 0;
    std::shared_ptr<WeightLayouts> layouts;
  };
  mutable Mutex mu_;
  std::unordered_map<const VariableResource*, Entry> entries_ LOOM_GUARDED_BY(mu_);
  VariableBitsCounts counts_ LOOM_GUARDED_BY(mu_);
};

// The Session's copies of intermediate values for one step (see the header).
class StepBitsCache : public Resource {
 public:
  // The copy of x made in `step`, or undefined.
  Tensor Find(const Tensor& x, int64_t step) LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    for (const Entry& e : entries_) {
      if (e.step == step && e.value.buffer() == x.buffer() &&
          e.value.byte_offset() == x.byte_offset() && e.value.NumElements() == x.NumElements()) {
        ++counts_.step_reused;
        return e.bits;
      }
    }
    return Tensor();
  }
  // Keeps `bits` as the copy of x in `step`, dropping the copies of other steps, and the
  // oldest ones while the values and copies kept exceed the budget (a while loop's body
  // runs in one step).
  void Store(const Tensor& x, int64_t step, const Tensor& bits) LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    ++counts_.step_made;
    std::erase_if(entries_, [&](const Entry& e) { return e.step != step; });
    entries_.push_back(Entry{step, x, bits});
    size_t bytes = 0;
    for (const Entry& e : entries_) bytes += e.value.TotalBytes() + e.bits.TotalBytes();
    while (entries_.size() > 1 && (entries_.size() > kMaxEntries || bytes > kMaxBytes)) {
      bytes -= entries_.front().value.TotalBytes() + entries_.front().bits.TotalBytes();
      entries_.erase(entries_.begin());
    }
  }
  // Whether output `out` is read by two or more bf16 products of its graph (which only
  // grows: the nodes added since the last call are counted on the way).
  bool ReadTwice(Output out) LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    const Graph& graph = *out.node->graph();
    if (&graph != graph_) {
      graph_ = &graph;
      counted_ = 0;
      readers_.clear();
    }
    for (; counted_ < graph.num_nodes(); ++counted_) {
      const Node& node = *graph.node(counted_);
      if (node.op() != "MatMul") continue;
      const Precision p = NodePrecision(node);
      if (p != Precision::kBf16 && p != Precision::kBf16Strict) continue;
      for (const Output& in : node.inputs()) ++readers_[Key(in)];
    }
    auto it = readers_.find(Key(out));
    return it != readers_.end() && it->second >= 2;
  }
  VariableBitsCounts counts() const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return counts_;
  }

 private:
  static constexpr size_t kMaxEntries = 64;
  static constexpr size_t kMaxBytes = size_t{256} << 20;
  struct Entry {
    int64_t step;
    Tensor value;  // holds the buffer: it is neither freed nor written in place meanwhile
    Tensor bits;
  };
  static int64_t Key(Output out) { return (int64_t{out.node->id()} << 16) | out.index; }

  mutable Mutex mu_;
  std::vector<Entry> entries_ LOOM_GUARDED_BY(mu_);
  const Graph* graph_ LOOM_GUARDED_BY(mu_) = nullptr;
  int counted_ LOOM_GUARDED_BY(mu_) = 0;
  std::unordered_map<int64_t, int> readers_ LOOM_GUARDED_BY(mu_);
  VariableBitsCounts counts_ LOOM_GUARDED_BY(mu_);
};

namespace {

// x's bf16 bits, converted on the kernel's pool.
Tensor Convert(const KernelContext& c, const Tensor& x) {
  Tensor bits(kUInt8, Shape{x.NumElements() * 2});
  FloatToBf16(x.data<float>(), static_cast<uint16_t*>(bits.raw_data()), x.NumElements(), c.pool());
  return bits;
}

// The Variable node whose value `out` is, through Identity nodes; nullptr when none.
const Node* VariableSource(Output out) {
  const Node* node = out.node;
  while (node != nullptr && node->op_def().name == "Identity" && node->num_inputs() == 1) {
    node = node->input(0).node;
  }
  return node != nullptr && node->op_def().role == OpRole::kVariable ? node : nullptr;
}

}  // namespace

OperandCopy VariableBits(const KernelContext& c, int input) {
  const Tensor& x = c.input(input);
  if (!x.defined() || x.dtype() != kFloat32 || x.NumElements() == 0) return {};
  const Node* source = VariableSource(c.node().input(input));
  if (source == nullptr) return {};
  const auto* var = c.resources().Lookup<VariableResource>(source->name());
  if (var == nullptr) return {};
  uint64_t version = 0;
  {
    MutexLock lock(var->mu());
    const Tensor& value = var->value();
    if (value.buffer() != x.buffer() || value.byte_offset() != x.byte_offset() ||
        value.dtype() != x.dtype() || value.NumElements() != x.NumElements()) {
      return {};  // not the current value: written since the read, or a view of it
    }
    version = var->version();
  }
  auto& cache = c.resources().Unnamed<VariableBitsCache>();
  if (OperandCopy copy = cache.Find(var, version); copy.bits.defined()) return copy;
  // x views the buffer, so no writer changes it while this converts (see the header).
  Tensor bits = Convert(c, x);
  cache.Store(var, version, bits, /*by_update=*/false);
  return {bits, nullptr};
}

OperandCopy OperandBits(const KernelContext& c, int input) {
  const Output source = c.node().input(input);
  if (VariableSource(source) != nullptr) return VariableBits(c, input);
  const Tensor& x = c.input(input);
  if (!x.defined() || x.dtype() != kFloat32 || x.NumElements() == 0 || !x.buffer()->owned()) {
    return {};
  }
  auto& cache = c.resources().Unnamed<StepBitsCache>();
  if (!cache.ReadTwice(source)) return {};
  if (Tensor bits = cache.Find(x, c.step_id()); bits.defined()) return {bits, nullptr};
  Tensor bits = Convert(c, x);
  cache.Store(x, c.step_id(), bits);
  return {bits, nullptr};
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
  VariableBitsCounts counts = resources.Unnamed<VariableBitsCache>().counts();
  const VariableBitsCounts step = resources.Unnamed<StepBitsCache>().counts();
  counts.step_made = step.step_made;
  counts.step_reused = step.step_reused;
  return counts;
}

}  // namespace loom::bf16
