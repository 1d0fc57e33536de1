#ifndef LOOM_TENSOR_DTYPE_H_
#define LOOM_TENSOR_DTYPE_H_

// The element types a Tensor can hold. The enum values are TensorFlow's DataType values,
// so they go into GraphDef / TensorProto / Event protos unchanged.
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace loom {

enum class DType : int {
  kInvalid = 0,
  kFloat32 = 1,  // DT_FLOAT
  kFloat64 = 2,  // DT_DOUBLE
  kInt32 = 3,    // DT_INT32
  kUInt8 = 4,    // DT_UINT8
  kString = 7,   // DT_STRING: each element is a std::string of bytes
  kInt64 = 9,    // DT_INT64
  kBool = 10,    // DT_BOOL
};

inline constexpr DType kFloat32 = DType::kFloat32;
inline constexpr DType kFloat64 = DType::kFloat64;
inline constexpr DType kInt32 = DType::kInt32;
inline constexpr DType kInt64 = DType::kInt64;
inline constexpr DType kUInt8 = DType::kUInt8;
inline constexpr DType kBool = DType::kBool;
inline constexpr DType kString = DType::kString;

// "float32", "int64", ... (numpy's names).
std::string_view DTypeName(DType dtype);
// Parses DTypeName's output and TF's aliases ("float", "double"); throws InvalidArgument.
DType DTypeFromName(std::string_view name);
// Bytes per element; sizeof(std::string) for kString.
size_t DTypeSize(DType dtype);
bool IsFloating(DType dtype);
bool IsInteger(DType dtype);
// True when DType is one of the enumerators above other than kInvalid.
bool IsValidDType(int value);

std::ostream& operator<<(std::ostream& os, DType dtype);

// DTypeOf<float>() == kFloat32, and so on for every element type.
template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kFloat64;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType DTypeOf<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType DTypeOf<bool>() {
  return DType::kBool;
}
template <>
constexpr DType DTypeOf<std::string>() {
  return DType::kString;
}

// Calls fn(T{}) with T the C++ type of dtype, for the listed kinds:
//   SwitchNumeric(dtype, [&](auto tag) { using T = decltype(tag); ... });
// Throws InvalidArgument naming `what` for a dtype outside the set.
template <typename Fn>
auto SwitchFloat(DType dtype, std::string_view what, Fn&& fn);
template <typename Fn>
auto SwitchNumeric(DType dtype, std::string_view what, Fn&& fn);
template <typename Fn>
auto SwitchAll(DType dtype, std::string_view what, Fn&& fn);

[[noreturn]] void ThrowUnsupportedDType(DType dtype, std::string_view what,
                                        std::string_view allowed);

template <typename Fn>
auto SwitchFloat(DType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    default:
      ThrowUnsupportedDType(dtype, what, "float32, float64");
  }
}

template <typename Fn>
auto SwitchNumeric(DType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    case DType::kInt32:
      return fn(int32_t{});
    case DType::kInt64:
      return fn(int64_t{});
    case DType::kUInt8:
      return fn(uint8_t{});
    default:
      ThrowUnsupportedDType(dtype, what, "float32, float64, int32, int64, uint8");
  }
}

template <typename Fn>
auto SwitchAll(DType dtype, std::string_view what, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    case DType::kInt32:
      return fn(int32_t{});
    case DType::kInt64:
      return fn(int64_t{});
    case DType::kUInt8:
      return fn(uint8_t{});
    case DType::kBool:
      return fn(bool{});
    case DType::kString:
      return fn(std::string{});
    default:
      ThrowUnsupportedDType(dtype, what, "any valid dtype");
  }
}

}  // namespace loom

#endif  // LOOM_TENSOR_DTYPE_H_
