#ifndef LOOM_IO_NPY_H_
#define LOOM_IO_NPY_H_

// .npy: numpy's single-array format (docs/formats/npy.md). A magic string, a version,
// a header length, a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), } padded with spaces and a newline, then the raw elements.
//
// ReadNpy memory-maps the file and returns a zero-copy, read-only view of it when the array
// is C-ordered, little-endian and of a dtype Loom has (float32/64, int32/64, uint8); the
// mapping lives as long as the tensor. Otherwise it converts into an owned tensor: Fortran
// order is transposed to C order, big-endian is byte-swapped, bool bytes become 0/1,
// float16 -> float32, int8/int16/uint16 -> int32, uint32 -> int64. Object, string,
// complex, datetime and structured dtypes throw Unimplemented; malformed headers and
// truncated files throw DataLoss naming the file. Versions 1.0, 2.0 and 3.0 are read,
// including legacy headers such as shape '(2L,)'.
#include <cstdint>
#include <string>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom {

// The parsed header of a .npy file.
struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  std::string descr;  // numpy's dtype string, e.g. "<f4", "|u1", ">i8"
  bool fortran_order = false;
  Shape shape;
  uint64_t data_offset = 0;  // where the elements start
};

// Reads and validates only the header.
NpyHeader ReadNpyHeader(Env* env, const std::string& path);

struct NpyReadOptions {
  // Convert dtypes Loom lacks (float16, int8, int16, uint16, uint32) to the nearest wider
  // Loom dtype. When false they throw Unimplemented.
  // Default: true.
  bool convert_unsupported_dtypes = true;
};

Tensor ReadNpy(Env* env, const std::string& path, const NpyReadOptions& options = {});

struct NpyWriteOptions {
  // Temporary file, Sync, rename over `path`, SyncDir (see WriteFileAtomically).
  // Default: true.
  bool atomic = true;
};

// Writes `tensor` in C order, little-endian, as version 1.0. The header is padded so that
// the data starts at a multiple of 64. The elements are streamed from the tensor without
// a copy. String tensors and ranks above 32 (numpy's limit) throw InvalidArgument.
void WriteNpy(Env* env, const std::string& path, const Tensor& tensor,
              const NpyWriteOptions& options = {});

// The header bytes WriteNpy writes for a tensor of this dtype and shape (magic included).
std::string EncodeNpyHeader(DType dtype, const Shape& shape);

}  // namespace loom

#endif  // LOOM_IO_NPY_H_
