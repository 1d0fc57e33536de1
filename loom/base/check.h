#ifndef LOOM_BASE_CHECK_H_
#define LOOM_BASE_CHECK_H_

// LOOM_CHECK(cond) << "context"; aborts with file:line and the message when cond is
// false. For our own invariants only; input-caused failures throw loom::Error.
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace loom::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << "LOOM_CHECK failed at " << file << ":" << line << ": " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace loom::internal
// NOLINTBEGIN(bugprone-macro-parentheses): unparenthesized so that `<< "why"` streams in.
#define LOOM_CHECK(condition)                 \
  (condition) ? (void)0                       \
              : ::loom::internal::Voidify() & \
                    ::loom::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()
// NOLINTEND(bugprone-macro-parentheses)
#define LOOM_CHECK_EQ(a, b) LOOM_CHECK((a) == (b)) << "(" << (a) << " vs " << (b) << ") "
#define LOOM_CHECK_LT(a, b) LOOM_CHECK((a) < (b)) << "(" << (a) << " vs " << (b) << ") "
#define LOOM_CHECK_LE(a, b) LOOM_CHECK((a) <= (b)) << "(" << (a) << " vs " << (b) << ") "
#define LOOM_CHECK_GE(a, b) LOOM_CHECK((a) >= (b)) << "(" << (a) << " vs " << (b) << ") "

#endif  // LOOM_BASE_CHECK_H_
