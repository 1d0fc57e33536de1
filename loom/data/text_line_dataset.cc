// TextLineDataset: the lines of a list of text files, streamed. State: the open file's
// index, byte offset (uncompressed) and line count.
#include "loom/data/file_sources_internal.h"

namespace loom::data {
namespace {

constexpr const char* kTextLineStage = "TextLineDataset";
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
      : Iterator(kTextLineStage, std::move(spec)),
        config_(std::move(config)),
        walk_(kTextLineStage, config_->files, [c = config_.get()](const std::string& path, bool) {
          return std::make_unique<internal::TextFileReader>(c->env, path, c->compression,
                                                            c->buffer_size);
        }) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    Tensor line(DType::kString, Shape{});
    if (!walk_.Next(
            [&](internal::TextFileReader& r) { return r.ReadLine(line.data<std::string>()); })) {
      return std::nullopt;
    }
    return Element{{kLineKey, std::move(line)}};
  }
  void SaveInternal(StateWriter& w) override { walk_.Save(w); }
  void RestoreInternal(StateReader& r) override { walk_.Restore(r); }

 private:
  std::shared_ptr<const TextLineConfig> config_;
  internal::FileWalk<internal::TextFileReader> walk_;
};

class TextLineSource : public DatasetImpl {
 public:
  explicit TextLineSource(std::shared_ptr<const TextLineConfig> config)
      : DatasetImpl(kTextLineStage, {{kLineKey, {DType::kString, Shape{}}}}, {}),
        config_(std::move(config)) {}

  std::string Params() const override { return internal::FilesParams(config_->files); }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<TextLineIterator>(spec(), config_);
  }

 private:
  std::shared_ptr<const TextLineConfig> config_;
};

}  // namespace

Dataset TextLineDataset(const std::vector<std::string>& filenames, const TextFileOptions& options) {
  auto config = std::make_shared<TextLineConfig>();
  config->env = internal::EnvOr(options.env);
  config->files = internal::ExpandFilenames(config->env, filenames, kTextLineStage);
  CheckArg(options.buffer_size > 0, kTextLineStage, "buffer_size must be positive");
  config->compression = internal::ParseCompressionOption(options.compression, kTextLineStage);
  config->buffer_size = options.buffer_size;
  return Dataset(std::make_shared<TextLineSource>(std::move(config)));
}

}  // namespace loom::data
