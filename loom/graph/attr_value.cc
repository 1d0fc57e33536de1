#include "loom/graph/attr_value.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>

namespace loom {

std::string AttrValueToString(const AttrValue& value) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, HostObject>) {
          os << "<host object " << v.type_name() << ">";
        } else if constexpr (std::is_same_v<T, Tensor>) {
          os << "<tensor " << DTypeName(v.dtype()) << v.shape().ToString() << ">";
        } else if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << v << '"';
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                             std::is_same_v<T, DType> || std::is_same_v<T, Shape>) {
          os << v;
        } else {
          os << "[" << StrJoin(v, ",") << "]";
        }
      },
      value);
  return os.str();
}

bool AttrValueEquals(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Tensor>) {
          return x.buffer() == y.buffer() && x.dtype() == y.dtype() && x.shape() == y.shape();
        } else {
          return x == y;
        }
      },
      a);
}

std::string_view AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kType:
      return "type";
    case AttrType::kShape:
      return "shape";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kIntList:
      return "list(int)";
    case AttrType::kFloatList:
      return "list(float)";
    case AttrType::kStringList:
      return "list(string)";
    case AttrType::kTypeList:
      return "list(type)";
    case AttrType::kShapeList:
      return "list(shape)";
    case AttrType::kHostObject:
      return "host object";
  }
  return "?";
}

namespace {
std::string Demangle(const std::type_info& type) {
  int status = 0;
  char* name = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string result = status == 0 && name != nullptr ? name : type.name();
  std::free(name);
  return result;
}
}  // namespace

std::string HostObject::type_name() const { return Demangle(*type_); }

void HostObject::ThrowWrongType(std::string_view owner, const std::type_info& wanted) const {
  if (object_ == nullptr) {
    throw InvalidArgument(owner, ": the host object attribute is empty; expected a ",
                          Demangle(wanted));
  }
  throw InvalidArgument(owner, ": the host object attribute holds a ", type_name(), ", expected a ",
                        Demangle(wanted));
}

}  // namespace loom
