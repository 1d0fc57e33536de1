#ifndef LOOM_IO_SAFETENSORS_H_
#define LOOM_IO_SAFETENSORS_H_

// safetensors: Loom's checkpoint and weight format (docs/formats/safetensors.md). An
// 8-byte little-endian header length N, N bytes of JSON (tensor name -> dtype, shape,
// data_offsets; optional "__metadata__": string -> string), then the raw little-endian
// tensor bytes, back to back. The JSON's nesting depth is bounded (a tensor entry needs 3
// levels), so a hostile header cannot make parsing or messages recurse deeply.
//
// Reading maps the file (Env::MapFile) and returns zero-copy views into the mapping; the
// mapping lives until the reader and every tensor from it are gone. Views are read-only
// (the mapping is PROT_READ): Clone() a tensor before writing into it. A tensor whose
// bytes are misaligned for its type (files whose header is not padded) or whose file dtype
// Loom lacks is copied instead. Every malformed header, offset or dtype throws DataLoss /
// Unimplemented naming the file and the tensor.
//
// Writing streams the header and then each tensor's bytes straight from the tensor (no
// second copy in memory), so files above 2 GiB work; by default it is crash-safe.
// Thread-safety: a SafetensorsReader is immutable after Open; Get is safe from many threads.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom {

// One tensor as the header describes it.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // the file's name for it: "F32", "I64", "U16", "BF16", ...
  Shape shape;
  uint64_t begin = 0;  // byte offsets [begin, end) relative to the start of the data
  uint64_t end = 0;
};

// What a file holds, from its header alone.
struct SafetensorsIndex {
  std::vector<SafetensorsEntry> tensors;  // in data order (ascending offsets)
  std::map<std::string, std::string> metadata;
  uint64_t header_length = 0;  // N: the JSON bytes, padding included
  uint64_t file_size = 0;
};

// Reads and validates only the header (8 + N bytes), not the tensor data.
SafetensorsIndex ReadSafetensorsIndex(Env* env, const std::string& path);

struct SafetensorsReadOptions {
  // File dtypes Loom has no DType for are converted into owned tensors: I8, I16, U16 ->
  // int32; U32 -> int64; F16, BF16 -> float32. When false they throw Unimplemented.
  // U64 and other types always throw Unimplemented.
  // Default: true.
  bool convert_unsupported_dtypes = true;
};

class SafetensorsReader {
 public:
  // Maps and validates the file. Throws NotFound, DataLoss (malformed), Unimplemented.
  static std::unique_ptr<SafetensorsReader> Open(Env* env, const std::string& path,
                                                 const SafetensorsReadOptions& options = {});

  const SafetensorsIndex& index() const { return index_; }
  const std::map<std::string, std::string>& metadata() const { return index_.metadata; }
  // Tensor names in data order.
  std::vector<std::string> names() const;
  bool Contains(const std::string& name) const { return by_name_.count(name) > 0; }
  // The tensor (a view when possible). Throws NotFound naming the file and the tensor.
  Tensor Get(const std::string& name) const;

 private:
  SafetensorsReader() = default;
  std::string path_;
  SafetensorsReadOptions options_;
  SafetensorsIndex index_;
  std::map<std::string, size_t> by_name_;
  std::shared_ptr<Buffer> mapping_;
  uint64_t data_start_ = 0;
};

// Every tensor in the file, by name.
std::map<std::string, Tensor> ReadSafetensors(Env* env, const std::string& path,
                                              const SafetensorsReadOptions& options = {});

struct SafetensorsWriteOptions {
  // Write a temporary file beside `path`, Sync it, rename it over `path`, then SyncDir:
  // a crash leaves the old file or the new one, never a torn one.
  // Default: true.
  bool atomic = true;
};

// Writes the tensors with `metadata` under "__metadata__". Names must be unique, non-empty
// and not "__metadata__"; dtypes float32, float64, int32, int64, uint8, bool (string
// tensors throw InvalidArgument). The header is padded with spaces to a multiple of 8
// bytes, and the data holds the 8-byte dtypes first, then the 4-byte, then the 1-byte ones
// (the given order within each size; the format allows no gaps), so every tensor starts at
// a multiple of its element size: readers map each one without a copy.
void WriteSafetensors(Env* env, const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const SafetensorsWriteOptions& options = {});

// The order in which WriteSafetensors lays out `tensors` in the data section (indices into
// `tensors`): a checksum over the data bytes "in file order" follows it.
std::vector<size_t> SafetensorsDataOrder(
    const std::vector<std::pair<std::string, Tensor>>& tensors);

// The header entries WriteSafetensors writes for `tensors`, in data order (file dtype
// names, shapes, offsets), so a writer can checksum the header it is about to write.
std::vector<SafetensorsEntry> SafetensorsLayout(
    const std::vector<std::pair<std::string, Tensor>>& tensors);

}  // namespace loom

#endif  // LOOM_IO_SAFETENSORS_H_
