#ifndef LOOM_GRAPH_RESOURCE_H_
#define LOOM_GRAPH_RESOURCE_H_

// Session state that outlives a single Run: variables, iterators, random-op counters.
// A ResourceMgr owns named Resources; kernels find theirs by name (a variable's node name,
// an iterator's shared name), or by type for state no graph node names (Unnamed<T>).
// Thread-safe; a resource guards its own contents.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "loom/base/error.h"
#include "loom/base/mutex.h"
#include "loom/tensor/tensor.h"

namespace loom {

class Resource {
 public:
  virtual ~Resource() = default;
};

// A variable's value. Undefined until an initializer or a restore assigns it.
// Thread-safety: the value is guarded by mu(); a Session's kernels, the Saver and the
// Session's own ReadVariable/WriteVariable may run on different threads (a hook's thread
// writes while a step reads). Read and Write lock it themselves; a read-modify-write (the
// Assign kernels, the optimizers' fused updates) holds mu() across its accesses.
//
// Every change of the value goes through Write, SetValue or MutableValue, and each bumps
// version(), so a copy derived from the value (the bf16 copy a product reads: ops/
// bf16_weights.h) is known current while the version is unchanged. There is no other
// way to write it: value() is const.
class VariableResource : public Resource {
 public:
  // The current value, read under mu(): a view sharing the buffer (writers copy on write
  // when it is shared), undefined when the variable is not initialized.
  Tensor Read() const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    return value_;
  }
  // Replaces the value with `value` itself (no copy): the caller hands over a buffer that
  // nothing else writes.
  void Write(Tensor value) LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    SetValue(std::move(value));
  }

  // The lock guarding the value, for updates in place.
  Mutex& mu() const LOOM_LOCK_RETURNED(mu_) { return mu_; }
  // REQUIRES: mu() held.
  bool initialized() const LOOM_REQUIRES(mu_) { return value_.defined(); }
  // REQUIRES: mu() held, for as long as the reference is used.
  const Tensor& value() const LOOM_REQUIRES(mu_) { return value_; }
  // Counts the changes of the value: never the same for two different values of one
  // variable. REQUIRES: mu() held.
  uint64_t version() const LOOM_REQUIRES(mu_) { return version_; }
  // Replaces the value, as Write. REQUIRES: mu() held.
  void SetValue(Tensor value) LOOM_REQUIRES(mu_) {
    value_ = std::move(value);
    ++version_;
  }
  // The value, to update in place: first copied when its buffer is shared with a reader
  // or not owned (a memory-mapped restore), so no reader sees the update. Counts as a
  // change. REQUIRES: mu() held, for as long as the reference is used; the value is
  // initialized.
  Tensor& MutableValue() LOOM_REQUIRES(mu_) {
    if (!value_.BufferIsUnique() || !value_.buffer()->owned()) value_ = value_.Clone();
    ++version_;
    return value_;
  }

 private:
  mutable Mutex mu_;
  Tensor value_ LOOM_GUARDED_BY(mu_);
  uint64_t version_ LOOM_GUARDED_BY(mu_) = 0;
};

// Ownership: the ResourceMgr owns every resource it holds, and nothing is ever removed,
// so a pointer or reference that Lookup, LookupOrCreate or Unnamed returns stays valid
// for the ResourceMgr's lifetime (a Session's: the Session owns its ResourceMgr). Callers
// never delete it and must not keep it past the Session. What the resource holds is
// guarded by the resource itself (VariableResource::mu(), IteratorResource's methods).
class ResourceMgr {
 public:
  ResourceMgr() = default;
  ResourceMgr(const ResourceMgr&) = delete;
  ResourceMgr& operator=(const ResourceMgr&) = delete;

  // The resource named `name`, or nullptr when absent. Throws Internal when present with
  // another type.
  template <typename T>
  T* Lookup(const std::string& name) const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) return nullptr;
    return Cast<T>(name, it->second.get());
  }
  // The resource named `name`, made by `create` (under the manager's lock, so exactly
  // once) when absent. Throws Internal when present with another type.
  template <typename T>
  T* LookupOrCreate(const std::string& name, const std::function<std::unique_ptr<T>()>& create)
      LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    auto& slot = resources_[name];
    if (!slot) slot = create();
    return Cast<T>(name, slot.get());
  }
  template <typename T>
  T* LookupOrCreate(const std::string& name) {
    return LookupOrCreate<T>(name, [] { return std::make_unique<T>(); });
  }
  // The one resource of type T that no graph node names (a kernel family's per-Session
  // state, such as the convolutions' scratch buffer), default-constructed on first use.
  // Kept apart from the named resources: no node or iterator name can collide with it,
  // and Names() does not list it.
  template <typename T>
  T& Unnamed() LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    auto& slot = unnamed_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_unique<T>();
    return static_cast<T&>(*slot);
  }
  // The names of the named resources, sorted.
  std::vector<std::string> Names() const LOOM_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    std::vector<std::string> names;
    for (const auto& [name, r] : resources_) names.push_back(name);
    return names;
  }

 private:
  template <typename T>
  static T* Cast(const std::string& name, Resource* r) {
    T* typed = dynamic_cast<T*>(r);
    if (typed == nullptr) throw Internal("resource '", name, "' has an unexpected type");
    return typed;
  }

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Resource>> resources_ LOOM_GUARDED_BY(mu_);
  std::map<std::type_index, std::unique_ptr<Resource>> unnamed_ LOOM_GUARDED_BY(mu_);
};

}  // namespace loom

#endif  // LOOM_GRAPH_RESOURCE_H_
