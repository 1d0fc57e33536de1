#ifndef LOOM_IO_TF_CHECKPOINT_H_
#define LOOM_IO_TF_CHECKPOINT_H_

// TensorFlow's V2 checkpoint ("tensor bundle"), read-only (docs/formats/tf_checkpoint.md).
// A checkpoint is a prefix, e.g. "model_dir/model.ckpt-1000", naming
//   <prefix>.index                    a LevelDB table: "" -> BundleHeaderProto, then
//                                     tensor name -> BundleEntryProto, in name order;
//   <prefix>.data-0000K-of-0000N      the tensors' bytes, N shards.
// Numeric tensors are their raw little-endian bytes; strings are varint lengths, a masked
// CRC of the lengths, then the bytes. A partitioned variable (TF's PartitionedVariable,
// graph variables "name/part_0", ...) is one full entry "name" listing its slices, each
// slice stored under an OrderedCode key; Get reassembles the full tensor.
//
// Every check TF makes is made: the table's block checksums, each tensor's CRC-32C, sizes
// against dtype and shape, slices against the full shape. Damage throws DataLoss naming the
// file (and the tensor, its offset); a missing file throws NotFound naming it; a dtype
// Loom lacks (DT_HALF, DT_BFLOAT16, DT_VARIANT, ...) or a big-endian bundle throws
// Unimplemented from Get, while listing still works.
//
//   auto reader = loom::TfCheckpointReader::Open(env, "tf_model/model.ckpt-999");
//   for (const auto& e : reader->entries()) std::cout << e.name << " " << e.shape << "\n";
//   loom::Tensor w = reader->Get("dnn/hiddenlayer_0/kernel");
//
// Thread-safety: a reader is immutable after Open; Get is safe from many threads.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom {

// "<prefix>.index" and "<prefix>.data-%05d-of-%05d".
std::string TfCheckpointIndexPath(std::string_view prefix);
std::string TfCheckpointDataPath(std::string_view prefix, int shard, int num_shards);
// The prefix of a bundle path: strips ".index" or ".data-K-of-N"; other paths unchanged.
std::string TfCheckpointPrefix(std::string_view path);
// True when `path` is a bundle prefix, index or data file whose ".index" exists.
bool IsTfCheckpoint(Env* env, std::string_view path);

// One dimension of a slice: [start, start + length), length -1 for the whole dimension.
struct TfSliceExtent {
  int64_t start = 0;
  int64_t length = -1;
};
using TfSlice = std::vector<TfSliceExtent>;

// A tensor as the index describes it (slice entries are folded into their full tensor).
struct TfCheckpointEntry {
  std::string name;
  int tf_dtype = 0;               // TF's DataType number as stored (DT_FLOAT = 1, ...)
  DType dtype = DType::kInvalid;  // kInvalid when Loom has no such dtype
  Shape shape;                    // the full tensor's shape
  int shard_id = 0;               // location of the bytes (unpartitioned tensors only)
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t masked_crc32c = 0;
  std::vector<TfSlice> slices;  // non-empty: a partitioned tensor
};

struct TfBundleHeader {
  int num_shards = 1;
  bool big_endian = false;
  int producer = 0;
  int min_consumer = 0;
  std::vector<int> bad_consumers;
};

class TfCheckpointReader {
 public:
  // Reads and verifies the index and opens every data shard. `path` may be the prefix or
  // its .index / .data file. Throws NotFound (index or a shard missing), DataLoss
  // (damaged index), FailedPrecondition (a bundle version this reader does not accept).
  static std::unique_ptr<TfCheckpointReader> Open(Env* env, const std::string& path);
  ~TfCheckpointReader();
  TfCheckpointReader(const TfCheckpointReader&) = delete;
  TfCheckpointReader& operator=(const TfCheckpointReader&) = delete;

  const std::string& prefix() const { return prefix_; }
  const TfBundleHeader& header() const { return header_; }
  // Full tensors in name order (TF's tf.train.list_variables).
  const std::vector<TfCheckpointEntry>& entries() const { return entries_; }
  std::vector<std::string> names() const;
  bool Contains(const std::string& name) const { return by_name_.count(name) > 0; }
  // Throws NotFound naming the checkpoint and the tensor.
  const TfCheckpointEntry& Entry(const std::string& name) const;
  // The tensor's value in a new owned buffer, its CRC verified (partitioned: reassembled).
  Tensor Get(const std::string& name) const;
  // Part `part` of partitioned tensor `name`, the variable a TF1 graph calls
  // "name/part_<part>": its slices ordered by their offsets. Throws NotFound when `name`
  // is not partitioned or has no such part.
  Tensor GetPart(const std::string& name, int part) const;

 private:
  struct Shard;
  TfCheckpointReader() = default;
  Tensor ReadStored(const std::string& name, DType dtype, const Shape& shape, int shard_id,
                    uint64_t offset, uint64_t size, uint32_t masked_crc) const;
  Tensor Reassemble(const TfCheckpointEntry& entry) const;
  void CheckReadable(const TfCheckpointEntry& entry) const;

  std::string prefix_;
  std::string index_path_;
  TfBundleHeader header_;
  std::vector<TfCheckpointEntry> entries_;
  std::map<std::string, size_t> by_name_;
  // Slice entries by their encoded key.
  std::map<std::string, TfCheckpointEntry> slice_entries_;
  std::vector<std::unique_ptr<Shard>> shards_;
};

// Every tensor of the checkpoint, by name (the library call behind `loom inspect`).
std::map<std::string, Tensor> ReadTfCheckpoint(Env* env, const std::string& path);

// The index key of one slice of tensor `name`: TF's EncodeTensorNameSlice, an OrderedCode
// string of 0, name, rank, then each extent's start and length (signed). Exposed for tests.
std::string TfSliceKey(std::string_view name, const TfSlice& slice);

}  // namespace loom

#endif  // LOOM_IO_TF_CHECKPOINT_H_
