// `loom inspect` on TensorFlow's checkpoint index (`model.ckpt-N.index`): a LevelDB table
// (leveldb/table_format.md) mapping each tensor name to a BundleEntryProto (dtype, shape,
// shard, offset, size), and "" to the BundleHeaderProto. Loom does not restore these
// checkpoints; this lists what one holds and checks the index against its data shards.
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"
#include "loom/cli/inspect_internal.h"
#include "loom/io/proto/tensor_shape.pb.h"
#include "loom/io/proto/types.pb.h"

namespace loom::cli {
namespace {

constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;

// Reads the bytes of a table; every read is bounds-checked, and a failure is DataLoss
// naming the file.
class Cursor {
 public:
  Cursor(std::string_view data, const std::string& path) : data_(data), path_(path) {}
  bool done() const { return pos_ >= data_.size(); }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) Fail("a varint runs past the end");
      const auto byte = static_cast<unsigned char>(data_[pos_++]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    Fail("a varint is longer than 10 bytes");
  }
  std::string_view Bytes(uint64_t n) {
    if (n > data_.size() - pos_) Fail("a length runs past the end");
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  [[noreturn]] void Fail(const std::string& what) const {
    throw DataLoss("TensorFlow checkpoint index '", path_, "' is damaged: ", what);
  }

 private:
  std::string_view data_;
  const std::string& path_;
  size_t pos_ = 0;
};

struct BlockHandle {
  uint64_t offset = 0, size = 0;
};

BlockHandle ReadHandle(Cursor& c) { return {c.Varint(), c.Varint()}; }

// The contents of a block: checks its trailer (compression type, masked CRC-32C).
std::string_view ReadBlock(std::string_view file, const BlockHandle& h, const std::string& path) {
  Cursor fail(file, path);
  if (h.offset > file.size() || h.size + 5 > file.size() - h.offset)
    fail.Fail(StrCat("a block at offset ", h.offset, " of ", h.size, " bytes runs past the end"));
  std::string_view block = file.substr(h.offset, h.size);
  const char type = file[h.offset + h.size];
  uint32_t stored = 0;
  for (int i = 3; i >= 0; --i)
    stored = (stored << 8) | static_cast<unsigned char>(file[h.offset + h.size + 1 + i]);
  const uint32_t crc = crc32c::Extend(crc32c::Value(block.data(), block.size()), &type, 1);
  if (crc32c::Mask(crc) != stored) fail.Fail(StrCat("the block at offset ", h.offset, " fails its CRC"));
  if (type != 0) {
    throw Unimplemented("TensorFlow checkpoint index '", path, "' has compressed blocks (type ",
                        static_cast<int>(type), "), which loom inspect does not read");
  }
  return block;
}

// The (key, value) entries of a block, keys restored from their shared prefixes.
std::vector<std::pair<std::string, std::string_view>> Entries(std::string_view block,
                                                               const std::string& path) {
  Cursor tail(block, path);
  if (block.size() < 4) tail.Fail("a block is shorter than its restart count");
  uint32_t restarts = 0;
  for (int i = 3; i >= 0; --i) restarts = (restarts << 8) | static_cast<unsigned char>(block[block.size() - 4 + i]);
  if (restarts > (block.size() - 4) / 4) tail.Fail("a block's restart count is too large");
  Cursor c(block.substr(0, block.size() - 4 - 4 * uint64_t{restarts}), path);
  std::vector<std::pair<std::string, std::string_view>> out;
  std::string key;
  while (!c.done()) {
    const uint64_t shared = c.Varint(), unshared = c.Varint(), value_size = c.Varint();
    if (shared > key.size()) c.Fail("a key shares more bytes than the previous key has");
    key.resize(shared);
    key += c.Bytes(unshared);
    out.push_back({key, c.Bytes(value_size)});
  }
  return out;
}

struct BundleEntry {
  int dtype = 0;
  std::string shape = "?";
  uint64_t shard = 0, offset = 0, size = 0;
  bool sliced = false;
};

// BundleEntryProto: dtype = 1, shape = 2, shard_id = 3, offset = 4, size = 5,
// crc32c = 6 (fixed32), slices = 7.
BundleEntry ParseEntry(std::string_view value, const std::string& path) {
  BundleEntry e;
  Cursor c(value, path);
  while (!c.done()) {
    const uint64_t tag = c.Varint();
    const uint64_t field = tag >> 3, wire = tag & 7;
    if (wire == 0) {
      const uint64_t v = c.Varint();
      if (field == 1) e.dtype = static_cast<int>(v);
      if (field == 3) e.shard = v;
      if (field == 4) e.offset = v;
      if (field == 5) e.size = v;
    } else if (wire == 2) {
      std::string_view bytes = c.Bytes(c.Varint());
      if (field == 2) {
        proto::TensorShapeProto shape;
        if (!shape.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
          c.Fail("a tensor's shape does not parse");
        e.shape = "[";
        for (int i = 0; i < shape.dim_size(); ++i)
          e.shape += (i ? "," : "") + std::to_string(shape.dim(i).size());
        e.shape += "]";
      }
      if (field == 7) e.sliced = true;
    } else if (wire == 5) {
      c.Bytes(4);
    } else if (wire == 1) {
      c.Bytes(8);
    } else {
      c.Fail(StrCat("an entry has wire type ", wire));
    }
  }
  return e;
}

std::string DTypeString(int dtype) {
  const std::string& name = proto::DataType_Name(static_cast<proto::DataType>(dtype));
  return name.empty() ? StrCat("dtype ", dtype) : name;
}

}  // namespace

void InspectTFCheckpointIndex(Env* env, const std::string& path) {
  const std::string file = ReadFileToString(env, path);
  Cursor fail(file, path);
  if (file.size() < kFooterSize) fail.Fail("it is shorter than the 48-byte footer");
  uint64_t magic = 0;
  for (int i = 7; i >= 0; --i) magic = (magic << 8) | static_cast<unsigned char>(file[file.size() - 8 + i]);
  if (magic != kTableMagic) fail.Fail("the footer lacks LevelDB's table magic number");
  Cursor footer(std::string_view(file).substr(file.size() - kFooterSize, kFooterSize - 8), path);
  ReadHandle(footer);  // the metaindex block (filters), unused here
  const BlockHandle index = ReadHandle(footer);

  std::map<std::string, BundleEntry> tensors;
  uint64_t num_shards = 1;
  for (const auto& [separator, handle_bytes] : Entries(ReadBlock(file, index, path), path)) {
    Cursor h(handle_bytes, path);
    for (const auto& [key, value] : Entries(ReadBlock(file, ReadHandle(h), path), path)) {
      if (key.empty()) {  // BundleHeaderProto: num_shards = 1
        Cursor c(value, path);
        while (!c.done()) {
          const uint64_t tag = c.Varint();
          if ((tag & 7) != 0) break;
          const uint64_t v = c.Varint();
          if ((tag >> 3) == 1) num_shards = v;
        }
        continue;
      }
      tensors[key] = ParseEntry(value, path);
    }
  }
  std::printf("TensorFlow checkpoint index (tensor bundle) %s: %zu tensors in %llu data shard(s)\n",
              path.c_str(), tensors.size(), static_cast<unsigned long long>(num_shards));
  // The shards are PREFIX.data-0000i-of-0000N beside the index.
  const std::string prefix = path.ends_with(".index") ? path.substr(0, path.size() - 6) : path;
  std::vector<uint64_t> shard_sizes;
  std::string missing;
  for (uint64_t i = 0; i < num_shards && i < 100000; ++i) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".data-%05llu-of-%05llu", static_cast<unsigned long long>(i),
                  static_cast<unsigned long long>(num_shards));
    const std::string shard = prefix + suffix;
    shard_sizes.push_back(env->FileExists(shard) ? env->GetFileSize(shard) : 0);
    if (!env->FileExists(shard)) missing += (missing.empty() ? "" : ", ") + shard;
  }
  std::string damage;
  for (const auto& [name, e] : tensors) {
    std::printf("  %-48s %-10s %s%s\n", name.c_str(), DTypeString(e.dtype).c_str(), e.shape.c_str(),
                e.sliced ? "  (sliced)" : "");
    if (damage.empty() && missing.empty() && !e.sliced &&
        (e.shard >= shard_sizes.size() || e.offset > shard_sizes[e.shard] ||
         e.size > shard_sizes[e.shard] - e.offset)) {
      damage = StrCat("tensor '", name, "' lies at bytes [", e.offset, ", ", e.offset + e.size,
                      ") of shard ", e.shard, ", past its end");
    }
  }
  std::printf("loom does not restore TensorFlow checkpoints; Loom's are safetensors files "
              "(docs/formats/checkpoint.md)\n");
  if (!missing.empty()) throw DataLoss("TensorFlow checkpoint '", prefix, "': missing data shard(s) ", missing);
  if (!damage.empty()) throw DataLoss("TensorFlow checkpoint '", prefix, "' is damaged: ", damage);
}

}  // namespace loom::cli
