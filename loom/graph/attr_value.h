#ifndef LOOM_GRAPH_ATTR_VALUE_H_
#define LOOM_GRAPH_ATTR_VALUE_H_

// Node attributes: a small closed set of value kinds, mirroring TF's AttrValue. Integers
// are int64_t, floats are double. AttrMap is an ordered name -> value map. A HostObject
// carries a host-side object (a Dataset) through a node, checked by type (TF's
// DT_VARIANT); it is never serialized.
//
// An op record declares its attributes once (AttrDef, in op_def.h) through typed keys:
//   inline constexpr Attr<bool> kTransposeA{"transpose_a"};
//   .attrs = {kTransposeA.Default(false)}           // in the record
//   scope.AddNode(op, {a, b}, {kTransposeA(true)})  // in the builder
//   c.attr(kTransposeA)                             // in shape rule, kernel, gradient
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <variant>
#include <vector>

#include "loom/base/error.h"
#include "loom/tensor/tensor.h"

namespace loom {

// A shared, immutable host object of a type fixed when it is wrapped. Copies share it.
class HostObject {
 public:
  HostObject() = default;
  template <typename T>
  static HostObject Of(std::shared_ptr<const T> object) {
    HostObject h;
    h.type_ = &typeid(T);
    h.object_ = std::move(object);
    return h;
  }
  bool empty() const { return object_ == nullptr; }
  // The demangled name of the wrapped type ("void" when empty).
  std::string type_name() const;
  // The object as a T. Throws InvalidArgument naming `owner` and both types when it is
  // empty or holds another type: never a bad cast.
  template <typename T>
  const T& As(std::string_view owner) const {
    if (object_ == nullptr || *type_ != typeid(T)) ThrowWrongType(owner, typeid(T));
    return *static_cast<const T*>(object_.get());
  }
  bool operator==(const HostObject& o) const { return object_ == o.object_; }

 private:
  [[noreturn]] void ThrowWrongType(std::string_view owner, const std::type_info& wanted) const;

  const std::type_info* type_ = &typeid(void);
  std::shared_ptr<const void> object_;
};

using AttrValue = std::variant<int64_t, double, bool, std::string, DType, Shape, Tensor,
                               std::vector<int64_t>, std::vector<double>, std::vector<std::string>,
                               std::vector<DType>, std::vector<Shape>, HostObject>;

// The kind of an attribute; the values are AttrValue's alternative indices.
enum class AttrType {
  kInt,
  kFloat,
  kBool,
  kString,
  kType,
  kShape,
  kTensor,
  kIntList,
  kFloatList,
  kStringList,
  kTypeList,
  kShapeList,
  kHostObject,
};

namespace attr_internal {
template <typename T, typename V>
struct IndexOf;
template <typename T, typename... Ts>
struct IndexOf<T, std::variant<Ts...>> {
  static constexpr size_t Find() {
    size_t i = 0;
    bool found = false;
    ((found = found || std::is_same_v<T, Ts>, i += found ? 0 : 1), ...);
    return i;
  }
  static constexpr size_t value = Find();
  static_assert(value < sizeof...(Ts), "not an attribute value type");
};
}  // namespace attr_internal

template <typename T>
constexpr AttrType AttrTypeOf() {
  return static_cast<AttrType>(attr_internal::IndexOf<T, AttrValue>::value);
}
inline AttrType AttrTypeOf(const AttrValue& value) { return static_cast<AttrType>(value.index()); }
// "bool", "list(int)", "host object", ... for messages.
std::string_view AttrTypeName(AttrType type);

class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}

  bool Has(std::string_view name) const { return map_.find(name) != map_.end(); }
  void Set(const std::string& name, AttrValue value) { map_[name] = std::move(value); }
  // Set(kAxis(1)): an entry made by a typed key.
  void Set(std::pair<const std::string, AttrValue> entry) {
    map_[entry.first] = std::move(entry.second);
  }
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
// Equality of values of the same kind; tensors compare by identity of their buffer.
bool AttrValueEquals(const AttrValue& a, const AttrValue& b);

// One declared attribute of an op: its name and kind, and either a default (filled in
// when a builder or a serialized graph leaves it out), `optional` (may be absent: the
// kernel asks with find()), or neither (required). `allowed`, when not empty, lists the
// only values it may take (TF's "padding: {'SAME', 'VALID'}").
struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  std::optional<AttrValue> default_value;
  bool optional = false;
  std::vector<AttrValue> allowed;
};

// A typed attribute key, declared once beside the record that owns the attribute. It
// builds the record's AttrDef, the builder's AttrMap entry and the kernel's lookup, so the
// name and the type are spelled in one place.
template <typename T>
struct Attr {
  std::string_view name;

  // An AttrMap entry: scope.AddNode(op, inputs, {kAxis(1)}).
  std::pair<const std::string, AttrValue> operator()(T value) const {
    return {std::string(name), AttrValue(std::move(value))};
  }
  AttrDef Required() const { return {std::string(name), AttrTypeOf<T>()}; }
  AttrDef Default(T value) const {
    return {std::string(name), AttrTypeOf<T>(), AttrValue(std::move(value))};
  }
  AttrDef Optional() const { return {std::string(name), AttrTypeOf<T>(), std::nullopt, true}; }
  // Required (no default) or with `fallback`, and one of `values`.
  AttrDef OneOf(std::vector<T> values, std::optional<T> fallback = std::nullopt) const {
    AttrDef def{std::string(name), AttrTypeOf<T>()};
    if (fallback) def.default_value = AttrValue(*fallback);
    for (T& v : values) def.allowed.emplace_back(std::move(v));
    return def;
  }
};

}  // namespace loom

#endif  // LOOM_GRAPH_ATTR_VALUE_H_
