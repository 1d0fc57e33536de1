#ifndef LOOM_GRAPH_RESOURCE_H_
#define LOOM_GRAPH_RESOURCE_H_

// Session state that outlives a single Run: variables, iterators, random-op counters.
// A ResourceMgr owns named Resources; kernels find theirs by name (a variable's node name,
// an iterator's shared name). Thread-safe; a resource guards its own contents.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/base/error.h"
#include "loom/tensor/tensor.h"

namespace loom {

class Resource {
 public:
  virtual ~Resource() = default;
};

// A variable's value. Undefined until an initializer or a restore assigns it.
// Thread-safety: `value` is guarded by `mu`; a Session's kernels, the Saver and the
// Session's own ReadVariable/WriteVariable may run on different threads (a hook's thread
// writes while a step reads), so every access, the initialized test included, holds `mu`.
class VariableResource : public Resource {
 public:
  std::mutex mu;
  Tensor value;  // guarded by mu
  // REQUIRES: mu held.
  bool initialized() const { return value.defined(); }
  // The current value, read under mu: a view sharing the buffer (writers copy on write
  // when it is shared), undefined when the variable is not initialized.
  Tensor Read() {
    std::lock_guard<std::mutex> lock(mu);
    return value;
  }
};

class ResourceMgr {
 public:
  ResourceMgr() = default;
  ResourceMgr(const ResourceMgr&) = delete;
  ResourceMgr& operator=(const ResourceMgr&) = delete;

  // nullptr when absent. Throws Internal when present with another type.
  template <typename T>
  T* Lookup(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = resources_.find(name);
    if (it == resources_.end()) return nullptr;
    return Cast<T>(name, it->second.get());
  }
  template <typename T>
  T* LookupOrCreate(const std::string& name, const std::function<std::unique_ptr<T>()>& create) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = resources_[name];
    if (!slot) slot = create();
    return Cast<T>(name, slot.get());
  }
  template <typename T>
  T* LookupOrCreate(const std::string& name) {
    return LookupOrCreate<T>(name, [] { return std::make_unique<T>(); });
  }
  void Erase(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    resources_.erase(name);
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    resources_.clear();
  }
  std::vector<std::string> Names() const {
    std::lock_guard<std::mutex> lock(mu_);
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

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Resource>> resources_;
};

}  // namespace loom

#endif  // LOOM_GRAPH_RESOURCE_H_
