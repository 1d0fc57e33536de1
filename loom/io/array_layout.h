#ifndef LOOM_IO_ARRAY_LAYOUT_H_
#define LOOM_IO_ARRAY_LAYOUT_H_

// Internal to the array formats (safetensors, npy, IDX): how a file stores elements, and
// turning those bytes into a Tensor. A file's bytes become a zero-copy view when Loom has
// the exact type, the byte order is the machine's (little-endian) and the address is
// aligned; otherwise they are converted into an owned tensor (byte swap, float16 ->
// float32, narrow integers -> int32 / int64, Fortran order -> C order).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom::io_internal {

// An element type as stored in a file.
struct StoredType {
  char kind = 'f';          // 'f' float, 'i' signed int, 'u' unsigned int, 'b' bool
  int size = 4;             // bytes per element
  bool big_endian = false;  // byte order of multi-byte elements
  bool bfloat16 = false;    // kind 'f', size 2: bfloat16 rather than IEEE half
};

// The Loom dtype that holds every value of `type` exactly: itself where Loom has it,
// int8/int16/uint16 -> int32, uint32 -> int64, float16/bfloat16 -> float32. Returns
// DType::kInvalid when there is none (uint64, float128, ...).
DType WidenedDType(const StoredType& type);
// True when `type`'s bytes are already `dtype` elements in this machine's layout.
bool IsNativeLayout(const StoredType& type, DType dtype);

// Makes a tensor of `shape` from the `num_elements * type.size` bytes at `data`, which lie
// inside `mapping`. A zero-copy view of `mapping` when possible (see above), else an owned
// tensor of `dtype` (REQUIRES: dtype == WidenedDType(type) or IsNativeLayout). With
// fortran_order the bytes are column-major and are reordered into row-major.
Tensor MakeTensorFromBytes(const char* data, const StoredType& type, DType dtype,
                           const Shape& shape, bool fortran_order,
                           const std::shared_ptr<Buffer>& mapping);

// A Buffer over a whole mapped file that keeps the mapping alive while any view exists.
std::shared_ptr<Buffer> BufferOverMapping(std::shared_ptr<MappedRegion> region);

// Converts IEEE binary16 / bfloat16 bits to float.
float HalfToFloat(uint16_t bits);
float BFloat16ToFloat(uint16_t bits);

// Writes `data` to `path`: directly, or (atomic) into a temporary file beside it that is
// synced, renamed over `path` and followed by a SyncDir. `write` receives the open file.
void WriteFileWith(Env* env, const std::string& path, bool atomic,
                   const std::function<void(WritableFile&)>& write);

// Multiplies dims, throwing DataLoss("<what>: ...") on a negative dim or a product of the
// nonzero dims above `limit` elements (pass UINT64_MAX / element size: the byte count
// cannot overflow; int64's maximum bounds it too), so that a shape like [2^32, 2^32, 0]
// is rejected, not let through by its zero.
int64_t CheckedNumElements(const Shape& shape, uint64_t limit, std::string_view what);

}  // namespace loom::io_internal

#endif  // LOOM_IO_ARRAY_LAYOUT_H_
