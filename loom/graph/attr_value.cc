#include "loom/graph/attr_value.h"

#include <sstream>

namespace loom {

std::string AttrValueToString(const AttrValue& value) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Tensor>) {
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

}  // namespace loom
