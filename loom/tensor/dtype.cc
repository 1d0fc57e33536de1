#include "loom/tensor/dtype.h"

#include "loom/base/error.h"

namespace loom {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kUInt8:
      return "uint8";
    case DType::kBool:
      return "bool";
    case DType::kString:
      return "string";
    case DType::kInvalid:
      return "invalid";
  }
  return "invalid";
}

DType DTypeFromName(std::string_view name) {
  if (name == "float32" || name == "float") return DType::kFloat32;
  if (name == "float64" || name == "double") return DType::kFloat64;
  if (name == "int32") return DType::kInt32;
  if (name == "int64") return DType::kInt64;
  if (name == "uint8") return DType::kUInt8;
  if (name == "bool") return DType::kBool;
  if (name == "string") return DType::kString;
  throw InvalidArgument("unknown dtype name '", name,
                        "'; use one of float32, float64, int32, int64, uint8, bool, string");
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 8;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kUInt8:
      return 1;
    case DType::kBool:
      return 1;
    case DType::kString:
      return sizeof(std::string);
    case DType::kInvalid:
      return 0;
  }
  return 0;
}

bool IsFloating(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }
bool IsInteger(DType dtype) {
  return dtype == DType::kInt32 || dtype == DType::kInt64 || dtype == DType::kUInt8;
}

bool IsValidDType(int value) {
  switch (static_cast<DType>(value)) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kBool:
    case DType::kString:
      return true;
    default:
      return false;
  }
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << DTypeName(dtype); }

void ThrowUnsupportedDType(DType dtype, std::string_view what, std::string_view allowed) {
  throw InvalidArgument(what, ": dtype ", DTypeName(dtype), " is not supported (allowed: ", allowed,
                        ")");
}

}  // namespace loom
