// TFRecordDataset: the records of a list of files, streamed by one RecordReader at a time.
// State: the index of the open file and the reader's offset in its uncompressed stream
// (a restore reopens the file and seeks there; on a compressed file that re-inflates up to
// the offset, once).
#include "loom/data/file_sources_internal.h"
#include "loom/io/record_reader.h"

namespace loom::data {
namespace {

constexpr const char* kStage = "TFRecordDataset";

struct TFRecordConfig {
  std::vector<std::string> files;
  RecordReaderOptions reader;
  Env* env = nullptr;
  std::shared_ptr<TFRecordStats> stats;
};

class TFRecordIterator : public Iterator {
 public:
  TFRecordIterator(ElementSpec spec, std::shared_ptr<const TFRecordConfig> config)
      : Iterator(kStage, std::move(spec)), config_(std::move(config)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    const auto& files = config_->files;
    while (file_index_ < files.size()) {
      if (!reader_) Open(0);
      Tensor record(DType::kString, Shape{});
      const bool got = reader_->ReadRecord(record.data<std::string>());
      CountSkipped();
      if (got) {
        if (config_->stats) config_->stats->records_read.fetch_add(1, std::memory_order_relaxed);
        return Element{{kRecordKey, std::move(record)}};
      }
      reader_.reset();
      ++file_index_;
    }
    return std::nullopt;
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint64_t>(file_index_);
    w.Write<uint8_t>(reader_ != nullptr);
    w.Write<uint64_t>(reader_ ? reader_->offset() : 0);
  }

  void RestoreInternal(StateReader& r) override {
    const uint64_t file_index = r.Read<uint64_t>();
    const bool open = r.Read<uint8_t>() != 0;
    const uint64_t offset = r.Read<uint64_t>();
    if (file_index > config_->files.size() || (open && file_index == config_->files.size())) {
      throw InvalidArgument(kStage, ": iterator state is at file ", file_index, " of a list of ",
                            config_->files.size(), ": it was saved over different files");
    }
    reader_.reset();
    file_index_ = file_index;
    if (open) Open(offset);
  }

 private:
  void Open(uint64_t offset) {
    reader_ = RecordReader::Open(config_->env, config_->files[file_index_], config_->reader);
    skipped_seen_ = 0;
    if (offset > 0) reader_->Seek(offset);
  }
  void CountSkipped() {
    const uint64_t skipped = reader_->corrupt_records();
    if (skipped != skipped_seen_ && config_->stats) {
      config_->stats->corrupt_records_skipped.fetch_add(skipped - skipped_seen_,
                                                        std::memory_order_relaxed);
    }
    skipped_seen_ = skipped;
  }

  std::shared_ptr<const TFRecordConfig> config_;
  uint64_t file_index_ = 0;
  std::unique_ptr<RecordReader> reader_;
  uint64_t skipped_seen_ = 0;
};

class TFRecordSource : public DatasetImpl {
 public:
  explicit TFRecordSource(std::shared_ptr<const TFRecordConfig> config)
      : DatasetImpl(kStage, {{kRecordKey, {DType::kString, Shape{}}}}, {}),
        config_(std::move(config)) {}

 protected:
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
  config->files = internal::ExpandFilenames(config->env, filenames, kStage);
  CheckArg(options.buffer_size > 0, kStage, "buffer_size must be positive");
  config->reader.compression = internal::ParseCompressionOption(options.compression, kStage);
  config->reader.skip_corrupt_records = options.skip_corrupt_records;
  config->reader.buffer_size = options.buffer_size;
  config->stats = std::move(options.stats);
  return Dataset(std::make_shared<TFRecordSource>(std::move(config)));
}

}  // namespace loom::data
