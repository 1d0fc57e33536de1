#include "loom/io/tf_checkpoint.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"
#include "loom/io/proto/tensor_bundle.pb.h"
#include "loom/io/sstable.h"

namespace loom {
namespace {

// The bundle version this reader implements (TF's kTensorBundleVersion) and the oldest
// producer it accepts (kTensorBundleMinProducer).
constexpr int kBundleVersion = 1;
constexpr int kBundleMinProducer = 0;

bool IsLoomDType(int tf_dtype) { return tf_dtype != 0 && IsValidDType(tf_dtype); }

// The shape of a stored entry; DataLoss for negative dims, unknown rank or overflow.
Shape ShapeFromProto(const proto::TensorShapeProto& p, const std::string& index_path,
                     std::string_view key) {
  if (p.unknown_rank()) {
    throw DataLoss("TF checkpoint index '", index_path, "': tensor '", key,
                   "' has an unknown rank; a checkpointed tensor has a full shape");
  }
  std::vector<int64_t> dims;
  int64_t elements = 1;
  for (const auto& d : p.dim()) {
    if (d.size() < 0 || (d.size() > 0 && elements > INT64_MAX / 8 / d.size())) {
      throw DataLoss("TF checkpoint index '", index_path, "': tensor '", key,
                     "' has an invalid dimension ", d.size(), " (the index is damaged)");
    }
    elements *= d.size();
    dims.push_back(d.size());
  }
  return Shape(std::move(dims));
}

}  // namespace

std::string TfCheckpointIndexPath(std::string_view prefix) { return StrCat(prefix, ".index"); }

std::string TfCheckpointDataPath(std::string_view prefix, int shard, int num_shards) {
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return StrCat(prefix, suffix);
}

std::string TfCheckpointPrefix(std::string_view path) {
  if (path.ends_with(".index")) return std::string(path.substr(0, path.size() - 6));
  // ".data-" digits "-of-" digits at the end.
  const size_t data = path.rfind(".data-");
  if (data != std::string_view::npos) {
    std::string_view rest = path.substr(data + 6);
    const size_t of = rest.find("-of-");
    auto digits = [](std::string_view s) {
      return !s.empty() &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (of != std::string_view::npos && digits(rest.substr(0, of)) && digits(rest.substr(of + 4))) {
      return std::string(path.substr(0, data));
    }
  }
  return std::string(path);
}

bool IsTfCheckpoint(Env* env, std::string_view path) {
  const std::string index = TfCheckpointIndexPath(TfCheckpointPrefix(path));
  return env->FileExists(index) && !env->IsDirectory(index);
}

struct TfCheckpointReader::Shard {
  std::string path;
  std::unique_ptr<RandomAccessFile> file;
  uint64_t size = 0;
};

TfCheckpointReader::~TfCheckpointReader() = default;

std::unique_ptr<TfCheckpointReader> TfCheckpointReader::Open(Env* env, const std::string& path) {
  std::unique_ptr<TfCheckpointReader> r(new TfCheckpointReader());
  r->prefix_ = TfCheckpointPrefix(path);
  r->index_path_ = TfCheckpointIndexPath(r->prefix_);
  if (!env->FileExists(r->index_path_)) {
    throw NotFound("TF checkpoint '", r->prefix_, "': its index file '", r->index_path_,
                   "' does not exist (pass the prefix, e.g. 'dir/model.ckpt-1000')");
  }
  const std::string& index_path = r->index_path_;
  Sstable table;
  try {
    table = ReadSstable(env, index_path);
  } catch (const Error& e) {
    throw WithContext(e, "reading the index of TF checkpoint '", r->prefix_, "'");
  }
  if (table.entries.empty() || !table.entries[0].key.empty()) {
    throw DataLoss("TF checkpoint index '", index_path,
                   "': no BundleHeaderProto under the empty key (not a TF V2 checkpoint?)");
  }
  proto::BundleHeaderProto header;
  if (!header.ParseFromString(table.entries[0].value)) {
    throw DataLoss("TF checkpoint index '", index_path, "': the BundleHeaderProto does not parse");
  }
  TfBundleHeader& h = r->header_;
  h.num_shards = header.num_shards();
  h.big_endian = header.endianness() == proto::BundleHeaderProto::BIG;
  h.producer = header.version().producer();
  h.min_consumer = header.version().min_consumer();
  h.bad_consumers.assign(header.version().bad_consumers().begin(),
                         header.version().bad_consumers().end());
  if (h.producer < kBundleMinProducer || h.min_consumer > kBundleVersion ||
      std::count(h.bad_consumers.begin(), h.bad_consumers.end(), kBundleVersion) > 0) {
    throw FailedPrecondition("TF checkpoint '", r->prefix_, "': bundle version (producer ",
                             h.producer, ", min_consumer ", h.min_consumer,
                             ") is not readable by a version-", kBundleVersion,
                             " reader; re-save it with an older TensorFlow");
  }
  if (h.num_shards < 1 || h.num_shards > 100000) {
    throw DataLoss("TF checkpoint index '", index_path, "': num_shards is ", h.num_shards,
                   " (the index is damaged)");
  }

  for (size_t i = 1; i < table.entries.size(); ++i) {
    const SstableEntry& kv = table.entries[i];
    proto::BundleEntryProto p;
    if (!p.ParseFromString(kv.value)) {
      throw DataLoss("TF checkpoint index '", index_path, "': the entry of tensor '", kv.key,
                     "' does not parse as a BundleEntryProto (the index is damaged)");
    }
    TfCheckpointEntry e;
    e.name = kv.key;
    e.tf_dtype = static_cast<int>(p.dtype());
    e.dtype = IsLoomDType(e.tf_dtype) ? static_cast<DType>(e.tf_dtype) : DType::kInvalid;
    e.shape = ShapeFromProto(p.shape(), index_path, kv.key);
    e.shard_id = p.shard_id();
    e.offset = static_cast<uint64_t>(p.offset());
    e.size = static_cast<uint64_t>(p.size());
    e.masked_crc32c = p.crc32c();
    for (const auto& s : p.slices()) {
      TfSlice slice;
      for (const auto& x : s.extent()) {
        slice.push_back({x.start(), x.has_length_case() == proto::TensorSliceProto::Extent::kLength
                                        ? x.length()
                                        : -1});
      }
      e.slices.push_back(std::move(slice));
    }
    if (e.slices.empty() &&
        (e.shard_id < 0 || e.shard_id >= h.num_shards || p.offset() < 0 || p.size() < 0)) {
      throw DataLoss("TF checkpoint index '", index_path, "': tensor '", kv.key,
                     "' points at shard ", e.shard_id, " offset ", p.offset(), " size ", p.size(),
                     ", outside the bundle's ", h.num_shards, " shards");
    }
    if (!kv.key.empty() && kv.key[0] == '\0') {
      r->slice_entries_.emplace(kv.key, std::move(e));  // a slice's own entry
    } else {
      r->by_name_[e.name] = r->entries_.size();
      r->entries_.push_back(std::move(e));
    }
  }
  for (int s = 0; s < h.num_shards; ++s) {
    auto shard = std::make_unique<Shard>();
    shard->path = TfCheckpointDataPath(r->prefix_, s, h.num_shards);
    if (!env->FileExists(shard->path)) {
      throw NotFound("TF checkpoint '", r->prefix_, "': data file '", shard->path,
                     "' does not exist (the index names ", h.num_shards,
                     " shards; copy every .data file with the .index)");
    }
    shard->file = env->NewRandomAccessFile(shard->path);
    shard->size = shard->file->Size();
    r->shards_.push_back(std::move(shard));
  }
  return r;
}

std::vector<std::string> TfCheckpointReader::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

const TfCheckpointEntry& TfCheckpointReader::Entry(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    throw NotFound("TF checkpoint '", prefix_, "' has no tensor '", name, "' (it holds ",
                   entries_.size(), " tensors; list them with TfCheckpointReader::names)");
  }
  return entries_[it->second];
}

void TfCheckpointReader::CheckReadable(const TfCheckpointEntry& e) const {
  if (e.dtype == DType::kInvalid) {
    throw Unimplemented("TF checkpoint '", prefix_, "': tensor '", e.name, "' has TF dtype ",
                        e.tf_dtype,
                        ", which Loom has no type for (Loom reads DT_FLOAT, "
                        "DT_DOUBLE, DT_INT32, DT_UINT8, DT_STRING, DT_INT64, DT_BOOL)");
  }
  if (header_.big_endian) {
    throw Unimplemented("TF checkpoint '", prefix_,
                        "' was written on a big-endian machine; Loom reads little-endian "
                        "bundles only (re-save it on a little-endian machine)");
  }
}

Tensor TfCheckpointReader::Get(const std::string& name) const {
  const TfCheckpointEntry& e = Entry(name);
  CheckReadable(e);
  if (!e.slices.empty()) return Reassemble(e);
  return ReadStored(name, e.dtype, e.shape, e.shard_id, e.offset, e.size, e.masked_crc32c);
}

Tensor TfCheckpointReader::ReadStored(const std::string& name, DType dtype, const Shape& shape,
                                      int shard_id, uint64_t offset, uint64_t size,
                                      uint32_t masked_crc) const {
  const Shard& shard = *shards_[shard_id];
  auto fail = [&](const auto&... what) {
    return DataLoss("TF checkpoint data file '", shard.path, "': tensor '", name, "' (bytes [",
                    offset, ", ", offset + size, ")): ", what...);
  };
  if (offset > shard.size || size > shard.size - offset) {
    throw fail("lies past the end of the file's ", shard.size,
               " bytes (the file is truncated; copy it again)");
  }
  Tensor t(dtype, shape);
  const uint32_t stored_crc = crc32c::Unmask(masked_crc);
  uint32_t crc = 0;
  if (dtype != DType::kString) {
    if (size != t.TotalBytes()) {
      throw fail("holds ", size, " bytes but ", DTypeName(dtype), shape.ToString(), " needs ",
                 t.TotalBytes(), " (the index is damaged)");
    }
    if (size > 0 && shard.file->Read(offset, size, static_cast<char*>(t.raw_data())) != size) {
      throw fail("short read (the file is truncated)");
    }
    crc = crc32c::Value(static_cast<const char*>(t.raw_data()), size);
  } else {
    // [varint64 length] x N, [masked crc32c of the lengths], then the bytes. The CRC covers
    // each length as a little-endian uint32 (uint64 above 4 GiB), the stored length
    // checksum and every string's bytes.
    if (t.NumElements() == 0 && size == 0) return t;
    std::string bytes(size, '\0');
    if (shard.file->Read(offset, size, bytes.data()) != size) {
      throw fail("short read (the file is truncated)");
    }
    const char* p = bytes.data();
    const char* end = p + size;
    std::vector<uint64_t> lengths(t.NumElements());
    for (uint64_t& length : lengths) {
      length = 0;
      int shift = 0;
      for (;;) {
        if (p == end || shift > 63) throw fail("string lengths are truncated or malformed");
        const auto b = static_cast<uint8_t>(*p++);
        length |= static_cast<uint64_t>(b & 0x7f) << shift;
        shift += 7;
        if ((b & 0x80) == 0) break;
      }
      if (length <= UINT32_MAX) {
        const auto l32 = static_cast<uint32_t>(length);
        crc = crc32c::Extend(crc, reinterpret_cast<const char*>(&l32), 4);
      } else {
        crc = crc32c::Extend(crc, reinterpret_cast<const char*>(&length), 8);
      }
    }
    if (end - p < 4) throw fail("the string length checksum is missing (truncated entry)");
    uint32_t raw_length_crc;
    std::memcpy(&raw_length_crc, p, 4);
    if (crc32c::Unmask(raw_length_crc) != crc) {
      throw fail("the string lengths fail their checksum (the file is damaged)");
    }
    crc = crc32c::Extend(crc, p, 4);
    p += 4;
    std::string* out = t.data<std::string>();
    for (size_t i = 0; i < lengths.size(); ++i) {
      if (lengths[i] > static_cast<uint64_t>(end - p)) {
        throw fail("string ", i, " of ", lengths[i], " bytes runs past the entry");
      }
      out[i].assign(p, lengths[i]);
      crc = crc32c::Extend(crc, p, lengths[i]);
      p += lengths[i];
    }
    if (p != end) throw fail(end - p, " bytes after the last string (the index is damaged)");
  }
  if (crc != stored_crc) {
    throw fail("fails its checksum (stored crc32c ", stored_crc, ", computed ", crc,
               "); the data file is damaged, restore it from a copy");
  }
  return t;
}

std::map<std::string, Tensor> ReadTfCheckpoint(Env* env, const std::string& path) {
  auto reader = TfCheckpointReader::Open(env, path);
  std::map<std::string, Tensor> out;
  for (const TfCheckpointEntry& e : reader->entries()) out.emplace(e.name, reader->Get(e.name));
  return out;
}

}  // namespace loom
