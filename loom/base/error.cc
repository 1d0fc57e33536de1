#include "loom/base/error.h"

namespace loom {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kCancelled:
      return "Cancelled";
    case ErrorCode::kUnknown:
      return "Unknown";
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kAlreadyExists:
      return "AlreadyExists";
    case ErrorCode::kResourceExhausted:
      return "ResourceExhausted";
    case ErrorCode::kFailedPrecondition:
      return "FailedPrecondition";
    case ErrorCode::kAborted:
      return "Aborted";
    case ErrorCode::kOutOfRange:
      return "OutOfRange";
    case ErrorCode::kUnimplemented:
      return "Unimplemented";
    case ErrorCode::kInternal:
      return "Internal";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kDataLoss:
      return "DataLoss";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(StrCat(ErrorCodeName(code), ": ", message)),
      code_(code),
      message_(message) {}

}  // namespace loom
