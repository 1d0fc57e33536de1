#ifndef LOOM_BASE_ERROR_H_
#define LOOM_BASE_ERROR_H_

// Errors caused by input (bad shapes, files, feeds, records) are thrown as loom::Error
// with a code that mirrors TensorFlow's. The message names the node, file, offset or
// argument and says what to do. Our own bugs are LOOM_CHECK failures (check.h), not Errors.
//
//   throw InvalidArgument("MatMul 'dense/MatMul': inner dimensions ", a, " and ", b, " differ");
#include <stdexcept>
#include <string>
#include <string_view>

#include "loom/base/strcat.h"

namespace loom {

enum class ErrorCode {
  kCancelled = 1,
  // An error no other code fits: TF's UNKNOWN (a py_func's exception that TF maps to no
  // other code arrives as it).
  kUnknown = 2,
  kInvalidArgument = 3,
  kNotFound = 5,
  kAlreadyExists = 6,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

// The code's TF name, e.g. "InvalidArgument".
std::string_view ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }
  // The message without the "Code: " prefix that what() carries.
  const std::string& message() const { return message_; }

  // The name of the graph node this error is about, once the message names it; empty
  // otherwise. A kernel error that names its node says so with AtNode (KernelContext::Fail
  // does); Session::Run appends " [in <node>]" to every other kernel error and sets it, so
  // each message names its node exactly once.
  const std::string& node() const { return node_; }
  // This error, marked as naming the node `node` in its message.
  Error AtNode(std::string node) const {
    Error e = *this;
    e.node_ = std::move(node);
    return e;
  }

 private:
  ErrorCode code_;
  std::string message_;
  std::string node_;
};

#define LOOM_DEFINE_ERROR_FACTORY(Name)                \
  template <typename... Args>                          \
  Error Name(const Args&... args) {                    \
    return Error(ErrorCode::k##Name, StrCat(args...)); \
  }
LOOM_DEFINE_ERROR_FACTORY(Cancelled)
LOOM_DEFINE_ERROR_FACTORY(Unknown)
LOOM_DEFINE_ERROR_FACTORY(InvalidArgument)
LOOM_DEFINE_ERROR_FACTORY(NotFound)
LOOM_DEFINE_ERROR_FACTORY(AlreadyExists)
LOOM_DEFINE_ERROR_FACTORY(ResourceExhausted)
LOOM_DEFINE_ERROR_FACTORY(FailedPrecondition)
LOOM_DEFINE_ERROR_FACTORY(Aborted)
LOOM_DEFINE_ERROR_FACTORY(OutOfRange)
LOOM_DEFINE_ERROR_FACTORY(Unimplemented)
LOOM_DEFINE_ERROR_FACTORY(Internal)
LOOM_DEFINE_ERROR_FACTORY(Unavailable)
LOOM_DEFINE_ERROR_FACTORY(DataLoss)
#undef LOOM_DEFINE_ERROR_FACTORY

// Rethrows `e` with `context` prepended to its message, keeping its code and node:
//   catch (const Error& e) { throw WithContext(e, "while reading ", path); }
template <typename... Args>
Error WithContext(const Error& e, const Args&... context) {
  return Error(e.code(), StrCat(context..., ": ", e.message())).AtNode(e.node());
}

}  // namespace loom

#endif  // LOOM_BASE_ERROR_H_
