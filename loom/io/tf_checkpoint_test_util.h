#ifndef LOOM_IO_TF_CHECKPOINT_TEST_UTIL_H_
#define LOOM_IO_TF_CHECKPOINT_TEST_UTIL_H_

// Tests only (link leveldb::leveldb): TestBundleWriter writes TF V2 checkpoints the way
// TF's BundleWriter does, the index table built by LevelDB's own TableBuilder (an
// independent writer of the format TfCheckpointReader reads): several shards, any dtype,
// partitioned tensors. Header-only; not thread-safe.
#include <leveldb/env.h>
#include <leveldb/options.h>
#include <leveldb/table_builder.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "loom/base/crc32c.h"
#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/io/proto/tensor_bundle.pb.h"
#include "loom/io/tf_checkpoint.h"

namespace loom::tf_testing {

inline void Overwrite(Env* env, const std::string& path, const std::string& bytes) {
  auto f = env->NewWritableFile(path);
  f->Append(bytes);
  f->Close();
}

// A leveldb::WritableFile appending to a string.
class StringFile : public leveldb::WritableFile {
 public:
  leveldb::Status Append(const leveldb::Slice& data) override {
    bytes.append(data.data(), data.size());
    return leveldb::Status::OK();
  }
  leveldb::Status Close() override { return leveldb::Status::OK(); }
  leveldb::Status Flush() override { return leveldb::Status::OK(); }
  leveldb::Status Sync() override { return leveldb::Status::OK(); }
  std::string bytes;
};

// Writes bundles the way TF's BundleWriter does, with the table built by LevelDB.
class TestBundleWriter {
 public:
  explicit TestBundleWriter(int num_shards) : data_(num_shards) {}

  void Add(const std::string& key, const Tensor& t, int shard) {
    proto::BundleEntryProto& e = entries_[key];
    SetTypeAndShape(e, t.dtype(), t.shape());
    e.set_shard_id(shard);
    e.set_offset(data_[shard].size());
    uint32_t crc = 0;
    std::string bytes;
    if (t.dtype() == kString) {
      for (const std::string& s : t.flat<std::string>()) {
        uint64_t n = s.size();
        do {
          bytes += static_cast<char>((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
          n >>= 7;
        } while (n > 0);
        const auto n32 = static_cast<uint32_t>(s.size());
        crc = crc32c::Extend(crc, reinterpret_cast<const char*>(&n32), 4);
      }
      const uint32_t masked = crc32c::Mask(crc);
      bytes.append(reinterpret_cast<const char*>(&masked), 4);
      crc = crc32c::Extend(crc, reinterpret_cast<const char*>(&masked), 4);
      for (const std::string& s : t.flat<std::string>()) {
        bytes += s;
        crc = crc32c::Extend(crc, s.data(), s.size());
      }
    } else {
      bytes.assign(static_cast<const char*>(t.raw_data()), t.TotalBytes());
      crc = crc32c::Value(bytes);
    }
    e.set_size(bytes.size());
    e.set_crc32c(crc32c::Mask(crc));
    data_[shard] += bytes;
  }

  // Tensor `name` of shape `full` stored as `parts` (slice, its values, its shard).
  void AddPartitioned(const std::string& name, const Shape& full,
                      const std::vector<std::tuple<TfSlice, Tensor, int>>& parts) {
    for (const auto& [slice, value, shard] : parts) {
      proto::BundleEntryProto& e = entries_[name];
      SetTypeAndShape(e, value.dtype(), full);
      auto* s = e.add_slices();
      for (const TfSliceExtent& x : slice) {
        auto* extent = s->add_extent();
        extent->set_start(x.start);
        if (x.length >= 0) extent->set_length(x.length);
      }
      Add(TfSliceKey(name, slice), value, shard);
    }
  }

  proto::BundleEntryProto& entry(const std::string& key) { return entries_.at(key); }

  void Write(Env* env, const std::string& prefix, bool snappy) {
    leveldb::Options options;
    options.compression = snappy ? leveldb::kSnappyCompression : leveldb::kNoCompression;
    options.block_size = 100;            // many data blocks
    options.block_restart_interval = 3;  // several restarts per block
    StringFile file;
    leveldb::TableBuilder builder(options, &file);
    proto::BundleHeaderProto header;
    header.set_num_shards(data_.size());
    header.mutable_version()->set_producer(1);
    builder.Add("", header.SerializeAsString());
    for (const auto& [key, e] : entries_) builder.Add(key, e.SerializeAsString());
    if (!builder.Finish().ok()) throw Internal("leveldb::TableBuilder failed");
    Overwrite(env, TfCheckpointIndexPath(prefix), file.bytes);
    for (size_t s = 0; s < data_.size(); ++s) {
      Overwrite(env, TfCheckpointDataPath(prefix, s, data_.size()), data_[s]);
    }
  }

 private:
  static void SetTypeAndShape(proto::BundleEntryProto& e, DType dtype, const Shape& shape) {
    e.set_dtype(static_cast<proto::DataType>(dtype));
    e.mutable_shape()->clear_dim();
    for (int64_t d : shape.dims()) e.mutable_shape()->add_dim()->set_size(d);
  }

  std::map<std::string, proto::BundleEntryProto> entries_;  // bytewise key order
  std::vector<std::string> data_;
};

}  // namespace loom::tf_testing

#endif  // LOOM_IO_TF_CHECKPOINT_TEST_UTIL_H_
