#ifndef LOOM_IO_IDX_H_
#define LOOM_IO_IDX_H_

// IDX: the MNIST / Fashion-MNIST file format (docs/formats/idx.md). Two zero bytes, a type
// byte, a rank byte, `rank` big-endian uint32 dimensions, then the big-endian elements.
// Files may be gzip-compressed (detected by the gzip magic, not the file name).
//
// ReadIdx returns a tensor of the file's shape: uint8 data as uint8 (a zero-copy view of
// the mapped file when it is not compressed), int8 / int16 / int32 as int32, float32 and
// float64 as themselves. The dimensions are checked against the data before anything is
// allocated: a plain file must hold exactly the bytes they imply, and a gzip file cannot
// claim more than deflate's maximum ratio allows, so a corrupt length field never causes
// an allocation the file could not fill. Errors are DataLoss naming the file.
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom {

Tensor ReadIdx(Env* env, const std::string& path);

// Writes `tensor` (uint8, int32, float32 or float64) as an uncompressed IDX file. For tests
// and tools; not crash-safe.
void WriteIdx(Env* env, const std::string& path, const Tensor& tensor);

}  // namespace loom

#endif  // LOOM_IO_IDX_H_
