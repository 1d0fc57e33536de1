#include "loom/io/csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "loom/base/error.h"

namespace loom {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  s = Trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  if constexpr (std::is_floating_point_v<T>) {
    // from_chars rejects "+inf" but takes "inf", "-inf", "nan" in any case.
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && ptr == s.data() + s.size();
  } else {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && ptr == s.data() + s.size();
  }
}

}  // namespace

std::vector<std::string> ParseCsvRecord(std::string_view record, char delimiter,
                                        bool use_quote_delim, std::string_view where) {
  std::vector<std::string> fields;
  size_t i = 0;
  for (;;) {
    std::string field;
    const int column = static_cast<int>(fields.size()) + 1;
    if (use_quote_delim && i < record.size() && record[i] == '"') {
      ++i;
      for (;;) {
        if (i >= record.size()) {
          throw InvalidArgument(where, " column ", column, ": quoted field has no closing quote");
        }
        if (record[i] == '"') {
          if (i + 1 < record.size() && record[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += record[i++];
      }
      if (i < record.size() && record[i] != delimiter) {
        throw InvalidArgument(where, " column ", column, ": unexpected character '", record[i],
                              "' after a closing quote; quote the whole field and double "
                              "inner quotes (\"\")");
      }
    } else {
      const size_t end = std::min(record.find(delimiter, i), record.size());
      field.assign(record.substr(i, end - i));
      if (use_quote_delim && field.find('"') != std::string::npos) {
        throw InvalidArgument(where, " column ", column, ": unquoted field '", field,
                              "' contains a quote; quote the field and double inner quotes");
      }
      i = end;
    }
    fields.push_back(std::move(field));
    if (i >= record.size()) break;
    ++i;  // the delimiter
  }
  return fields;
}

Tensor ParseCsvValue(std::string_view field, DType dtype, std::string_view where) {
  auto fail = [&]() {
    return InvalidArgument(where, ": cannot parse '", field, "' as ", DTypeName(dtype));
  };
  switch (dtype) {
    case DType::kFloat32: {
      float v;
      if (!ParseNumber(field, &v)) throw fail();
      return Tensor::Scalar<float>(v);
    }
    case DType::kFloat64: {
      double v;
      if (!ParseNumber(field, &v)) throw fail();
      return Tensor::Scalar<double>(v);
    }
    case DType::kInt32: {
      int32_t v;
      if (!ParseNumber(field, &v)) throw fail();
      return Tensor::Scalar<int32_t>(v);
    }
    case DType::kInt64: {
      int64_t v;
      if (!ParseNumber(field, &v)) throw fail();
      return Tensor::Scalar<int64_t>(v);
    }
    case DType::kString:
      return Tensor::ScalarString(std::string(field));
    default:
      throw InvalidArgument(where,
                            ": CSV columns may be float32, float64, int32, int64 or "
                            "string, not ",
                            DTypeName(dtype));
  }
}

CsvRecordReader::CsvRecordReader(std::unique_ptr<SequentialFile> file, std::string name,
                                 char delimiter, bool use_quote_delim)
    : file_(std::move(file)),
      name_(std::move(name)),
      delimiter_(delimiter),
      use_quote_delim_(use_quote_delim) {}

bool CsvRecordReader::ReadChar(char* c) {
  if (buffer_pos_ == buffer_.size()) {
    if (eof_) return false;
    buffer_.resize(1 << 16);
    buffer_.resize(file_->Read(buffer_.size(), buffer_.data()));
    buffer_pos_ = 0;
    if (buffer_.empty()) {
      eof_ = true;
      return false;
    }
  }
  *c = buffer_[buffer_pos_++];
  return true;
}

std::optional<std::vector<std::string>> CsvRecordReader::Next() {
  for (;;) {
    std::string record;
    bool in_quotes = false;
    bool any = false;
    record_line_ = next_line_;
    char c;
    while (ReadChar(&c)) {
      any = true;
      if (c == '\n') {
        ++next_line_;
        if (!in_quotes) break;
      }
      // A quote toggles quoting; "" inside quotes toggles twice, which is right.
      if (use_quote_delim_ && c == '"') in_quotes = !in_quotes;
      record += c;
    }
    if (!any) return std::nullopt;
    if (!record.empty() && record.back() == '\r' && !in_quotes) record.pop_back();
    if (record.empty()) continue;  // blank line
    return ParseCsvRecord(record, delimiter_, use_quote_delim_,
                          StrCat("CSV file '", name_, "' line ", record_line_));
  }
}

std::unique_ptr<CsvReader> CsvReader::Open(Env* env, const std::string& path,
                                           std::vector<Tensor> record_defaults,
                                           const CsvOptions& options) {
  if (record_defaults.empty()) {
    throw InvalidArgument("CSV file '", path, "': record_defaults is empty; give one per column");
  }
  for (size_t i = 0; i < record_defaults.size(); ++i) {
    const Tensor& d = record_defaults[i];
    const DType t = d.dtype();
    if (t != kFloat32 && t != kFloat64 && t != kInt32 && t != kInt64 && t != kString) {
      throw InvalidArgument("CSV file '", path, "': record_defaults[", i, "] has dtype ",
                            DTypeName(t), "; use float32, float64, int32, int64 or string");
    }
    if (d.NumElements() > 1) {
      throw InvalidArgument("CSV file '", path, "': record_defaults[", i,
                            "] must be a scalar (the default) or empty (required), not ",
                            d.shape().ToString());
    }
  }
  if (!options.select_cols.empty()) {
    if (options.select_cols.size() != record_defaults.size()) {
      throw InvalidArgument("CSV file '", path, "': ", options.select_cols.size(),
                            " select_cols but ", record_defaults.size(), " record_defaults");
    }
    for (size_t i = 0; i < options.select_cols.size(); ++i) {
      if (options.select_cols[i] < 0 ||
          (i > 0 && options.select_cols[i] <= options.select_cols[i - 1])) {
        throw InvalidArgument("CSV file '", path,
                              "': select_cols must be non-negative and strictly increasing");
      }
    }
  }
  auto records = std::make_unique<CsvRecordReader>(env->NewSequentialFile(path), path,
                                                   options.delimiter, options.use_quote_delim);
  std::unique_ptr<CsvReader> reader(
      new CsvReader(std::move(records), std::move(record_defaults), options));
  if (options.header) {
    auto header = reader->records_->Next();
    if (!header) throw InvalidArgument("CSV file '", path, "' is empty but a header was expected");
    reader->header_ = std::move(*header);
    const size_t needed =
        options.select_cols.empty() ? reader->defaults_.size() : options.select_cols.back() + 1;
    if (reader->header_.size() < needed) {
      throw InvalidArgument("CSV file '", path, "': the header has ", reader->header_.size(),
                            " columns but ", needed, " are needed");
    }
    for (size_t i = 0; i < reader->defaults_.size(); ++i) {
      const int col = options.select_cols.empty() ? static_cast<int>(i) : options.select_cols[i];
      reader->column_names_.push_back(reader->header_[col]);
    }
  }
  return reader;
}

CsvReader::CsvReader(std::unique_ptr<CsvRecordReader> records, std::vector<Tensor> defaults,
                     CsvOptions options)
    : records_(std::move(records)), defaults_(std::move(defaults)), options_(std::move(options)) {}

std::vector<DType> CsvReader::column_dtypes() const {
  std::vector<DType> out;
  for (const Tensor& d : defaults_) out.push_back(d.dtype());
  return out;
}

std::string CsvReader::Where(int file_column) const {
  std::string where = StrCat("CSV file '", records_->name(), "' line ", records_->line(),
                             " column ", file_column + 1);
  if (file_column < static_cast<int>(header_.size())) {
    where += StrCat(" ('", header_[file_column], "')");
  }
  return where;
}

std::optional<std::vector<Tensor>> CsvReader::NextRow() {
  auto fields = records_->Next();
  if (!fields) return std::nullopt;
  const bool all = options_.select_cols.empty();
  if (all ? fields->size() != defaults_.size()
          : fields->size() <= static_cast<size_t>(options_.select_cols.back())) {
    throw InvalidArgument(
        "CSV file '", records_->name(), "' line ", records_->line(), ": ", fields->size(),
        " fields, expected ",
        all ? StrCat(defaults_.size()) : StrCat("at least ", options_.select_cols.back() + 1));
  }
  std::vector<Tensor> row;
  row.reserve(defaults_.size());
  for (size_t i = 0; i < defaults_.size(); ++i) {
    const int col = all ? static_cast<int>(i) : options_.select_cols[i];
    const std::string& field = (*fields)[col];
    const bool missing =
        field.empty() || (!options_.na_value.empty() && field == options_.na_value);
    if (missing) {
      if (defaults_[i].NumElements() == 0) {
        throw InvalidArgument(Where(col),
                              ": the field is empty but the column is required "
                              "(its record_default has no value)");
      }
      row.push_back(defaults_[i].Reshaped(Shape{}));
    } else {
      row.push_back(ParseCsvValue(field, defaults_[i].dtype(), Where(col)));
    }
  }
  return row;
}

std::optional<std::vector<Tensor>> CsvReader::NextBatch(int64_t max_rows) {
  LOOM_CHECK(max_rows >= 1);
  std::vector<std::vector<Tensor>> rows;
  while (static_cast<int64_t>(rows.size()) < max_rows) {
    auto row = NextRow();
    if (!row) break;
    rows.push_back(std::move(*row));
  }
  if (rows.empty()) return std::nullopt;
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<Tensor> columns;
  for (size_t c = 0; c < defaults_.size(); ++c) {
    Tensor column(defaults_[c].dtype(), Shape{n});
    SwitchAll(column.dtype(), "CsvReader::NextBatch", [&](auto tag) {
      using T = decltype(tag);
      T* out = column.data<T>();
      for (int64_t r = 0; r < n; ++r) out[r] = rows[r][c].template scalar<T>();
      return 0;
    });
    columns.push_back(std::move(column));
  }
  return columns;
}

}  // namespace loom
