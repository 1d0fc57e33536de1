// TextLineDataset: the lines of a list of text files, streamed. State: the open file's
// index, byte offset (uncompressed) and line count.
#include "loom/data/file_sources_internal.h"

namespace loom::data {
namespace {

constexpr const char* kStage = "TextLineDataset";
constexpr const char* kLineKey = "line";

struct TextLineConfig {
  std::vector<std::string> files;
  Compression compression = Compression::kNone;
  size_t buffer_size = 0;
  Env* env = nullptr;
};

class TextLineIterator : public Iterator {
 public:
  TextLineIterator(ElementSpec spec, std::shared_ptr<const TextLineConfig> config)
      : Iterator(kStage, std::move(spec)), config_(std::move(config)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    while (file_index_ < config_->files.size()) {
      if (!reader_) Open();
      Tensor line(DType::kString, Shape{});
      if (reader_->ReadLine(line.data<std::string>())) return Element{{kLineKey, std::move(line)}};
      reader_.reset();
      ++file_index_;
    }
    return std::nullopt;
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint64_t>(file_index_);
    w.Write<uint8_t>(reader_ != nullptr);
    w.Write<uint64_t>(reader_ ? reader_->offset() : 0);
    w.Write<int64_t>(reader_ ? reader_->lines_read() : 0);
  }

  void RestoreInternal(StateReader& r) override {
    const uint64_t file_index = r.Read<uint64_t>();
    const bool open = r.Read<uint8_t>() != 0;
    const uint64_t offset = r.Read<uint64_t>();
    const int64_t lines = r.Read<int64_t>();
    if (file_index > config_->files.size() || (open && file_index == config_->files.size())) {
      throw InvalidArgument(kStage, ": iterator state is at file ", file_index, " of a list of ",
                            config_->files.size(), ": it was saved over different files");
    }
    reader_.reset();
    file_index_ = file_index;
    if (open) {
      Open();
      reader_->Seek(offset, lines);
    }
  }

 private:
  void Open() {
    reader_ = std::make_unique<internal::TextFileReader>(
        config_->env, config_->files[file_index_], config_->compression, config_->buffer_size);
  }

  std::shared_ptr<const TextLineConfig> config_;
  uint64_t file_index_ = 0;
  std::unique_ptr<internal::TextFileReader> reader_;
};

class TextLineSource : public DatasetImpl {
 public:
  explicit TextLineSource(std::shared_ptr<const TextLineConfig> config)
      : DatasetImpl(kStage, {{kLineKey, {DType::kString, Shape{}}}}, {}),
        config_(std::move(config)) {}

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<TextLineIterator>(spec(), config_);
  }

 private:
  std::shared_ptr<const TextLineConfig> config_;
};

}  // namespace

Dataset TextLineDataset(const std::vector<std::string>& filenames, TextFileOptions options) {
  auto config = std::make_shared<TextLineConfig>();
  config->env = internal::EnvOr(options.env);
  config->files = internal::ExpandFilenames(config->env, filenames, kStage);
  CheckArg(options.buffer_size > 0, kStage, "buffer_size must be positive");
  config->compression = internal::ParseCompressionOption(options.compression, kStage);
  config->buffer_size = options.buffer_size;
  return Dataset(std::make_shared<TextLineSource>(std::move(config)));
}

}  // namespace loom::data
