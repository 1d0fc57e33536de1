// TFRecordDataset: the records of a list of files, streamed by one RecordReader at a time.
// State: the index of the open file and the reader's offset in its uncompressed stream
// (a restore reopens the file and seeks there; on a compressed file that re-inflates up to
// the offset, once).
#include "loom/data/file_sources_internal.h"
#include "loom/io/record_reader.h"

namespace loom::data {
namespace {

constexpr const char* kTFRecordStage = "TFRecordDataset";

struct TFRecordConfig {
  std::vector<std::string> files;
  std::string origin_key;
  RecordReaderOptions reader;
  Env* env = nullptr;
  std::shared_ptr<TFRecordStats> stats;
};

class TFRecordIterator : public Iterator {
 public:
  TFRecordIterator(ElementSpec spec, std::shared_ptr<const TFRecordConfig> config)
      : Iterator(kTFRecordStage, std::move(spec)),
        config_(std::move(config)),
        walk_(kTFRecordStage, config_->files, [this](const std::string& path, bool restoring) {
          skipped_seen_ = 0;
          // A restore seeks into the file: the records before the offset are not counted.
          record_in_file_ = restoring ? -1 : 0;
          return RecordReader::Open(config_->env, path, config_->reader);
        }) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    Tensor record(DType::kString, Shape{});
    uint64_t offset = 0;
    if (!walk_.Next([&](RecordReader& r) {
          offset = r.offset();
          const bool got = r.ReadRecord(record.data<std::string>());
          CountSkipped(r);
          return got;
        })) {
      return std::nullopt;
    }
    if (config_->stats) config_->stats->records_read.fetch_add(1, std::memory_order_relaxed);
    Element out{{kRecordKey, std::move(record)}};
    if (!config_->origin_key.empty()) {
      const std::string& path = walk_.reader()->path();
      out[config_->origin_key] = Tensor::ScalarString(
          record_in_file_ >= 0 ? StrCat("record ", record_in_file_, " of '", path, "'")
                               : StrCat("the record at offset ", offset, " of '", path, "'"));
    }
    if (record_in_file_ >= 0) ++record_in_file_;
    return out;
  }
  // Reads the framing and payload (the CRCs are checked) into a reused buffer: no tensor,
  // no origin string.
  bool SkipInternal() override {
    if (!walk_.Next([&](RecordReader& r) {
          const bool got = r.ReadRecord(&scratch_);
          CountSkipped(r);
          return got;
        })) {
      return false;
    }
    if (config_->stats) config_->stats->records_read.fetch_add(1, std::memory_order_relaxed);
    if (record_in_file_ >= 0) ++record_in_file_;
    return true;
  }
  void SaveInternal(StateWriter& w) override { walk_.Save(w); }
  void RestoreInternal(StateReader& r) override { walk_.Restore(r); }

 private:
  void CountSkipped(const RecordReader& reader) {
    const uint64_t skipped = reader.corrupt_records();
    if (skipped != skipped_seen_ && config_->stats) {
      config_->stats->corrupt_records_skipped.fetch_add(skipped - skipped_seen_,
                                                        std::memory_order_relaxed);
    }
    skipped_seen_ = skipped;
  }

  std::shared_ptr<const TFRecordConfig> config_;
  uint64_t skipped_seen_ = 0;
  // Index of the next record in the open file; -1 after a restore into the middle of it.
  int64_t record_in_file_ = 0;
  std::string scratch_;  // SkipInternal's record
  internal::FileWalk<RecordReader> walk_;
};

class TFRecordSource : public DatasetImpl {
 public:
  explicit TFRecordSource(std::shared_ptr<const TFRecordConfig> config)
      : DatasetImpl(kTFRecordStage, Spec(*config), {}), config_(std::move(config)) {}

  std::string Params() const override { return internal::FilesParams(config_->files); }

 protected:
  static ElementSpec Spec(const TFRecordConfig& config) {
    ElementSpec spec{{kRecordKey, {DType::kString, Shape{}}}};
    if (!config.origin_key.empty()) spec[config.origin_key] = {DType::kString, Shape{}};
    return spec;
  }

  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<TFRecordIterator>(spec(), config_);
  }

 private:
  std::shared_ptr<const TFRecordConfig> config_;
};

}  // namespace

Dataset TFRecordDataset(const std::vector<std::string>& filenames, TFRecordOptions options) {
  auto config = std::make_shared<TFRecordConfig>();
  config->env = internal::EnvOr(options.env);
  config->files = internal::ExpandFilenames(config->env, filenames, kTFRecordStage);
  CheckArg(options.buffer_size > 0, kTFRecordStage, "buffer_size must be positive");
  config->reader.compression =
      internal::ParseCompressionOption(options.compression, kTFRecordStage);
  config->reader.skip_corrupt_records = options.skip_corrupt_records;
  config->reader.buffer_size = options.buffer_size;
  config->stats = std::move(options.stats);
  CheckArg(options.origin_key != kRecordKey, kTFRecordStage, "origin_key must differ from '",
           kRecordKey, "'");
  config->origin_key = std::move(options.origin_key);
  return Dataset(std::make_shared<TFRecordSource>(std::move(config)));
}

}  // namespace loom::data
