#include "loom/io/array_layout.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <vector>

#include "loom/base/error.h"

namespace loom::io_internal {
namespace {

template <typename T>
T LoadElement(const char* p, bool swap) {
  T value;
  if (swap) {
    char bytes[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = p[sizeof(T) - 1 - i];
    std::memcpy(&value, bytes, sizeof(T));
  } else {
    std::memcpy(&value, p, sizeof(T));
  }
  return value;
}

// Converts n stored elements at src into out (of the widened dtype).
template <typename Out>
void ConvertRun(const char* src, int64_t n, const StoredType& type, Out* out) {
  const bool swap = type.big_endian && type.size > 1;
  for (int64_t i = 0; i < n; ++i, src += type.size) {
    if (type.kind == 'f') {
      if (type.size == 2) {
        const uint16_t bits = LoadElement<uint16_t>(src, swap);
        out[i] = static_cast<Out>(type.bfloat16 ? BFloat16ToFloat(bits) : HalfToFloat(bits));
      } else if (type.size == 4) {
        out[i] = static_cast<Out>(LoadElement<float>(src, swap));
      } else {
        out[i] = static_cast<Out>(LoadElement<double>(src, swap));
      }
    } else if (type.kind == 'b') {
      out[i] = static_cast<Out>(*src != 0);
    } else if (type.kind == 'i') {
      switch (type.size) {
        case 1:
          // int8 values widen with their sign on purpose.
          // NOLINTNEXTLINE(bugprone-signed-char-misuse)
          out[i] = static_cast<Out>(LoadElement<int8_t>(src, swap));
          break;
        case 2:
          out[i] = static_cast<Out>(LoadElement<int16_t>(src, swap));
          break;
        case 4:
          out[i] = static_cast<Out>(LoadElement<int32_t>(src, swap));
          break;
        default:
          out[i] = static_cast<Out>(LoadElement<int64_t>(src, swap));
          break;
      }
    } else {
      switch (type.size) {
        case 1:
          out[i] = static_cast<Out>(LoadElement<uint8_t>(src, swap));
          break;
        case 2:
          out[i] = static_cast<Out>(LoadElement<uint16_t>(src, swap));
          break;
        default:
          out[i] = static_cast<Out>(LoadElement<uint32_t>(src, swap));
          break;
      }
    }
  }
}

// Reorders column-major bytes into row-major.
std::vector<char> FortranToC(const char* src, const Shape& shape, int elem_size) {
  const int rank = shape.rank();
  const int64_t n = shape.num_elements();
  std::vector<char> out(static_cast<size_t>(n) * elem_size);
  if (n == 0) return out;
  std::vector<int64_t> f_stride(rank, 1);  // in elements
  for (int d = 1; d < rank; ++d) f_stride[d] = f_stride[d - 1] * shape.dim(d - 1);
  std::vector<int64_t> index(rank, 0);
  int64_t src_offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out.data() + i * elem_size, src + src_offset * elem_size, elem_size);
    // Advance the row-major index (last dim fastest), keeping src_offset in step.
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape.dim(d)) {
        src_offset += f_stride[d];
        break;
      }
      src_offset -= (index[d] - 1) * f_stride[d];
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000 | (mantissa << 13);  // inf / nan
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalize.
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mantissa & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

float BFloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

DType WidenedDType(const StoredType& type) {
  switch (type.kind) {
    case 'b':
      return type.size == 1 ? DType::kBool : DType::kInvalid;
    case 'f':
      if (type.size == 2 || type.size == 4) return DType::kFloat32;
      return type.size == 8 ? DType::kFloat64 : DType::kInvalid;
    case 'i':
      if (type.size == 1 || type.size == 2 || type.size == 4) return DType::kInt32;
      return type.size == 8 ? DType::kInt64 : DType::kInvalid;
    case 'u':
      if (type.size == 1) return DType::kUInt8;
      if (type.size == 2) return DType::kInt32;
      return type.size == 4 ? DType::kInt64 : DType::kInvalid;
  }
  return DType::kInvalid;
}

bool IsNativeLayout(const StoredType& type, DType dtype) {
  if (type.size != static_cast<int>(DTypeSize(dtype))) return false;
  if (type.big_endian && type.size > 1) return false;
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
      return type.kind == 'f' && !type.bfloat16;
    case DType::kInt32:
    case DType::kInt64:
      return type.kind == 'i';
    case DType::kUInt8:
      return type.kind == 'u';
    case DType::kBool:
      return type.kind == 'b';
    default:
      return false;
  }
}

Tensor MakeTensorFromBytes(const char* data, const StoredType& type, DType dtype,
                           const Shape& shape, bool fortran_order,
                           const std::shared_ptr<Buffer>& mapping) {
  const int64_t n = shape.num_elements();
  std::vector<char> reordered;
  if (fortran_order && shape.rank() > 1) {
    reordered = FortranToC(data, shape, type.size);
    data = reordered.data();
  }
  const bool native = IsNativeLayout(type, dtype);
  const bool aligned = reinterpret_cast<uintptr_t>(data) % DTypeSize(dtype) == 0;
  if (native && reordered.empty() && aligned && type.kind != 'b') {
    const size_t offset = data - static_cast<const char*>(mapping->data());
    return Tensor::FromBuffer(dtype, shape, mapping, offset);
  }
  if (native && type.kind != 'b') {
    Tensor t(dtype, shape);
    if (n > 0) std::memcpy(t.raw_data(), data, t.TotalBytes());
    return t;
  }
  // Converting path; bools always land here so that bytes other than 0/1 become true.
  LOOM_CHECK(dtype == WidenedDType(type)) << "no conversion to " << DTypeName(dtype);
  Tensor t(dtype, shape);
  SwitchAll(dtype, "MakeTensorFromBytes", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      LOOM_CHECK(false) << "string elements are not stored as bytes";
    } else {
      ConvertRun<T>(data, n, type, t.data<T>());
    }
    return 0;
  });
  return t;
}

std::shared_ptr<Buffer> BufferOverMapping(std::shared_ptr<MappedRegion> region) {
  void* data = const_cast<char*>(region->data());
  const size_t size = region->size();
  return Buffer::Borrow(data, size, [region = std::move(region)]() mutable { region.reset(); });
}

void WriteFileWith(Env* env, const std::string& path, bool atomic,
                   const std::function<void(WritableFile&)>& write) {
  if (!atomic) {
    auto file = env->NewWritableFile(path);
    write(*file);
    file->Close();
    return;
  }
  static std::atomic<uint64_t> counter{0};
  const std::string temp = StrCat(path, ".tmp.", env->ProcessId(), ".", counter.fetch_add(1));
  try {
    auto file = env->NewWritableFile(temp);
    write(*file);
    file->Sync();
    file->Close();
    env->RenameFile(temp, path);
  } catch (...) {
    try {
      if (env->FileExists(temp)) env->DeleteFile(temp);
    } catch (const Error&) {
      // Report the original failure.
    }
    throw;
  }
  env->SyncDir(Dirname(path));
}

int64_t CheckedNumElements(const Shape& shape, uint64_t limit, std::string_view what) {
  for (int64_t d : shape.dims()) {
    if (d < 0) throw DataLoss(what, ": negative dimension in shape ", shape.ToString());
  }
  // Every nonzero dim counts, even beside a zero one: strides and row sizes multiply them.
  const std::optional<int64_t> n = shape.NumElementsAtMost(std::min<uint64_t>(limit, INT64_MAX));
  if (!n) {
    throw DataLoss(what, ": shape ", shape.ToString(),
                   " has more elements than any file could hold; the header is corrupt");
  }
  return *n;
}

}  // namespace loom::io_internal
