// CsvDataset: typed records of CSV files, streamed. Records are cut here (so that the
// byte offset and line of each are known: a quoted field may span lines), split by
// io/csv.h's ParseCsvRecord and typed by ParseCsvValue with TF's record_defaults rules.
// State: the open file's index, byte offset (uncompressed) and line count.
#include "loom/data/file_sources_internal.h"
#include "loom/io/csv.h"

namespace loom::data {
namespace {

constexpr const char* kCsvStage = "CsvDataset";

struct CsvConfig {
  std::vector<std::string> files;
  std::vector<Tensor> defaults;    // one per output column
  std::vector<int> file_columns;   // the file column of each output column
  std::vector<std::string> names;  // the component of each output column
  bool all_columns = true;         // no select_cols: a record must have exactly defaults.size()
  CsvDatasetOptions options;
  Compression compression = Compression::kNone;
  Env* env = nullptr;
};

std::string FileLine(const std::string& path, int64_t line) {
  return StrCat("CSV file '", path, "' line ", line);
}

// The next record's text from `in` (lines joined by '\n' while a quoted field is open),
// skipping blank lines; false at the end of the file. *line is the record's first line.
bool NextRecord(internal::TextFileReader& in, const CsvConfig& c, std::string* record,
                int64_t* line) {
  enum State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted };
  std::string text;
  record->clear();
  do {
    if (!in.ReadLine(&text)) return false;
  } while (text.empty());
  *line = in.lines_read();
  const char delim = c.options.field_delim;
  State state = kFieldStart;
  while (true) {
    for (char ch : text) {
      switch (state) {
        case kFieldStart:
          state = ch == delim                                ? kFieldStart
                  : (ch == '"' && c.options.use_quote_delim) ? kQuoted
                                                             : kUnquoted;
          break;
        case kUnquoted:
          if (ch == delim) state = kFieldStart;
          break;
        case kQuoted:
          if (ch == '"') state = kQuoteInQuoted;
          break;
        case kQuoteInQuoted:
          state = ch == '"' ? kQuoted : ch == delim ? kFieldStart : kUnquoted;
          break;
      }
    }
    record->append(text);
    if (state != kQuoted) return true;
    if (!in.ReadLine(&text)) {
      throw InvalidArgument(FileLine(in.path(), *line), ": a quoted field is not closed before ",
                            "the end of the file (is the file truncated?)");
    }
    record->push_back('\n');
  }
}

class CsvIterator : public Iterator {
 public:
  CsvIterator(ElementSpec spec, std::shared_ptr<const CsvConfig> config)
      : Iterator(kCsvStage, std::move(spec)),
        config_(std::move(config)),
        walk_(kCsvStage, config_->files,
              [c = config_.get()](const std::string& path, bool restoring) {
                auto reader = std::make_unique<internal::TextFileReader>(
                    c->env, path, c->compression, c->options.file.buffer_size);
                std::string header;
                int64_t line = 0;
                if (!restoring && c->options.header) NextRecord(*reader, *c, &header, &line);
                return reader;
              }) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    std::string record;
    int64_t line = 0;
    if (!walk_.Next(
            [&](internal::TextFileReader& r) { return NextRecord(r, *config_, &record, &line); })) {
      return std::nullopt;
    }
    return Parse(record, line);
  }
  // Cuts the record (quotes decide where it ends) but does not split or type its fields.
  bool SkipInternal() override {
    int64_t line = 0;
    return walk_.Next(
        [&](internal::TextFileReader& r) { return NextRecord(r, *config_, &scratch_, &line); });
  }
  void SaveInternal(StateWriter& w) override { walk_.Save(w); }
  void RestoreInternal(StateReader& r) override { walk_.Restore(r); }

 private:
  Element Parse(const std::string& record, int64_t line) const {
    const CsvConfig& c = *config_;
    const std::string& path = walk_.reader()->path();
    const std::vector<std::string> fields = ParseCsvRecord(
        record, c.options.field_delim, c.options.use_quote_delim, FileLine(path, line));
    const size_t needed = c.all_columns ? c.defaults.size() : c.file_columns.back() + 1;
    if (c.all_columns ? fields.size() != needed : fields.size() < needed) {
      throw InvalidArgument(FileLine(path, line), ": ", fields.size(), " fields, expected ",
                            c.all_columns ? "" : "at least ", needed);
    }
    Element out;
    for (size_t i = 0; i < c.defaults.size(); ++i) {
      const int col = c.file_columns[i];
      const std::string& field = fields[col];
      auto where = [&] {
        return StrCat(FileLine(path, line), " column ", col + 1, " ('", c.names[i], "')");
      };
      const bool missing =
          field.empty() || (!c.options.na_value.empty() && field == c.options.na_value);
      if (missing) {
        if (c.defaults[i].NumElements() == 0) {
          throw InvalidArgument(where(),
                                ": the field is empty but the column is required (its "
                                "record_default has no value)");
        }
        out[c.names[i]] = c.defaults[i].Reshaped(Shape{});
      } else {
        out[c.names[i]] = ParseCsvValue(field, c.defaults[i].dtype(), where());
      }
    }
    return out;
  }

  std::shared_ptr<const CsvConfig> config_;
  std::string scratch_;  // SkipInternal's record
  internal::FileWalk<internal::TextFileReader> walk_;
};

class CsvSource : public DatasetImpl {
 public:
  CsvSource(ElementSpec spec, std::shared_ptr<const CsvConfig> config)
      : DatasetImpl(kCsvStage, std::move(spec), {}), config_(std::move(config)) {}

  std::string Params() const override { return internal::FilesParams(config_->files); }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext&) const override {
    return std::make_unique<CsvIterator>(spec(), config_);
  }

 private:
  std::shared_ptr<const CsvConfig> config_;
};

// The first file's header fields.
std::vector<std::string> ReadHeader(const CsvConfig& c) {
  internal::TextFileReader reader(c.env, c.files[0], c.compression, c.options.file.buffer_size);
  std::string record;
  int64_t line = 0;
  if (!NextRecord(reader, c, &record, &line)) {
    throw InvalidArgument(kCsvStage, ": '", c.files[0], "' is empty but options.header is set");
  }
  return ParseCsvRecord(record, c.options.field_delim, c.options.use_quote_delim,
                        FileLine(c.files[0], line));
}

}  // namespace

Dataset CsvDataset(const std::vector<std::string>& filenames, std::vector<Tensor> record_defaults,
                   CsvDatasetOptions options) {
  auto c = std::make_shared<CsvConfig>();
  c->env = internal::EnvOr(options.file.env);
  c->files = internal::ExpandFilenames(c->env, filenames, kCsvStage);
  CheckArg(options.file.buffer_size > 0, kCsvStage, "buffer_size must be positive");
  c->compression = internal::ParseCompressionOption(options.file.compression, kCsvStage);
  CheckArg(!record_defaults.empty(), kCsvStage, "record_defaults is empty; give one per column");
  for (size_t i = 0; i < record_defaults.size(); ++i) {
    const DType t = record_defaults[i].dtype();
    CheckArg(t == kFloat32 || t == kFloat64 || t == kInt32 || t == kInt64 || t == kString,
             kCsvStage, "record_defaults[", i, "] has dtype ", DTypeName(t),
             "; use float32, float64, int32, int64 or string");
    CheckArg(record_defaults[i].NumElements() <= 1, kCsvStage, "record_defaults[", i,
             "] must be a scalar (the default) or empty (required), not ",
             record_defaults[i].shape());
  }
  const auto& sel = options.select_cols;
  c->all_columns = sel.empty();
  if (!sel.empty()) {
    CheckArg(sel.size() == record_defaults.size(), kCsvStage, sel.size(), " select_cols but ",
             record_defaults.size(), " record_defaults");
    for (size_t i = 0; i < sel.size(); ++i) {
      CheckArg(sel[i] >= 0 && (i == 0 || sel[i] > sel[i - 1]), kCsvStage,
               "select_cols must be non-negative and strictly increasing");
    }
    c->file_columns = sel;
  } else {
    for (size_t i = 0; i < record_defaults.size(); ++i)
      c->file_columns.push_back(static_cast<int>(i));
  }
  c->defaults = std::move(record_defaults);
  c->options = std::move(options);

  if (!c->options.column_names.empty()) {
    CheckArg(c->options.column_names.size() == c->defaults.size(), kCsvStage,
             c->options.column_names.size(), " column_names but ", c->defaults.size(),
             " returned columns");
    c->names = c->options.column_names;
  } else if (c->options.header) {
    const std::vector<std::string> header = ReadHeader(*c);
    const size_t needed = c->file_columns.back() + 1;
    CheckArg(header.size() >= needed, kCsvStage, "the header of '", c->files[0], "' has ",
             header.size(), " columns but ", needed, " are needed");
    for (int col : c->file_columns) c->names.push_back(header[col]);
  } else {
    for (int col : c->file_columns) c->names.push_back(StrCat("col", col));
  }
  ElementSpec spec;
  for (size_t i = 0; i < c->names.size(); ++i) {
    CheckArg(!c->names[i].empty(), kCsvStage, "column ", c->file_columns[i] + 1,
             " has an empty name (set options.column_names)");
    CheckArg(spec.emplace(c->names[i], TensorSpec{c->defaults[i].dtype(), Shape{}}).second,
             kCsvStage, "two columns are named '", c->names[i], "' (set options.column_names)");
  }
  return Dataset(std::make_shared<CsvSource>(std::move(spec), std::move(c)));
}

}  // namespace loom::data
