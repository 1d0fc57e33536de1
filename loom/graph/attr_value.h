#ifndef LOOM_GRAPH_ATTR_VALUE_H_
#define LOOM_GRAPH_ATTR_VALUE_H_

// Node attributes: a small closed set of value kinds, mirroring TF's AttrValue. Integers
// are int64_t, floats are double. AttrMap is an ordered name -> value map.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loom/base/error.h"
#include "loom/tensor/tensor.h"

namespace loom {

using AttrValue = std::variant<int64_t, double, bool, std::string, DType, Shape, Tensor,
                               std::vector<int64_t>, std::vector<double>,
                               std::vector<std::string>, std::vector<DType>, std::vector<Shape>>;

class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool Has(std::string_view name) const { return map_.find(name) != map_.end(); }
  void Set(const std::string& name, AttrValue value) { map_[name] = std::move(value); }
  // Throws InvalidArgument when missing or of another kind; `owner` names the node.
  template <typename T>
  const T& Get(std::string_view name, std::string_view owner = "") const {
    auto it = map_.find(name);
    if (it == map_.end()) throw InvalidArgument(owner, ": missing attribute '", name, "'");
    const T* value = std::get_if<T>(&it->second);
    if (value == nullptr) {
      throw InvalidArgument(owner, ": attribute '", name, "' has another kind (index ",
                            it->second.index(), ")");
    }
    return *value;
  }
  // nullptr when missing or of another kind.
  template <typename T>
  const T* Find(std::string_view name) const {
    auto it = map_.find(name);
    return it == map_.end() ? nullptr : std::get_if<T>(&it->second);
  }
  template <typename T>
  T GetOr(std::string_view name, T fallback) const {
    auto it = map_.find(name);
    if (it == map_.end()) return fallback;
    const T* value = std::get_if<T>(&it->second);
    return value ? *value : fallback;
  }
  const std::map<std::string, AttrValue, std::less<>>& map() const { return map_; }

 private:
  std::map<std::string, AttrValue, std::less<>> map_;
};

// "3", "0.5", "[1,2]", "float32", "<tensor float32[2]>" for messages and debugging.
std::string AttrValueToString(const AttrValue& value);

}  // namespace loom

#endif  // LOOM_GRAPH_ATTR_VALUE_H_
