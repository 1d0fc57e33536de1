#ifndef LOOM_BASE_STRCAT_H_
#define LOOM_BASE_STRCAT_H_

// StrCat(a, b, ...) streams every argument into one string, like absl::StrCat but for
// anything with an operator<<. StrJoin joins a range with a separator.
#include <sstream>
#include <string>
#include <string_view>

namespace loom {

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename Range>
std::string StrJoin(const Range& range, std::string_view sep) {
  std::ostringstream os;
  bool first = true;
  for (const auto& item : range) {
    if (!first) os << sep;
    os << item;
    first = false;
  }
  return os.str();
}

}  // namespace loom

#endif  // LOOM_BASE_STRCAT_H_
