#ifndef LOOM_IO_CSV_H_
#define LOOM_IO_CSV_H_

// CSV parsing primitives (RFC 4180) for the data layer's CSV dataset. Three levels:
//   ParseCsvRecord   one record's text -> its fields (quotes removed, "" -> ").
//   CsvRecordReader  a SequentialFile -> records, streaming; a quoted field may span lines.
//   CsvReader        a file -> typed rows (one scalar Tensor per selected column) or
//                    column batches, with TF CsvDataset's record_defaults semantics.
// Every error is InvalidArgument naming the file, the 1-based line and column, and the
// column's header name when there is one. Readers are single-threaded cursors.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/env.h"
#include "loom/tensor/tensor.h"

namespace loom {

struct CsvOptions {
  // The field separator.
  // Default: ','.
  char delimiter = ',';
  // Fields may be quoted with '"' (RFC 4180). When false, '"' is an ordinary character.
  // Default: true.
  bool use_quote_delim = true;
  // The first record names the columns and is not data.
  // Default: false.
  bool header = false;
  // Indices (0-based, ascending, distinct) of the columns to return; empty means all.
  // Default: empty.
  std::vector<int> select_cols;
  // A field equal to this string counts as missing, like an empty field.
  // Default: "" (only empty fields are missing).
  std::string na_value;
};

// Splits `record` (without its line terminator) into fields. `where` prefixes errors,
// e.g. "CSV file 'a.csv' line 3". An empty record is one empty field.
std::vector<std::string> ParseCsvRecord(std::string_view record, char delimiter = ',',
                                        bool use_quote_delim = true,
                                        std::string_view where = "CSV record");

// Parses one field as a scalar of dtype (float32, float64, int32, int64, string). Numbers
// must fill the whole field (surrounding spaces allowed); "nan", "inf" and "-inf" are
// floats. Throws InvalidArgument("<where>: cannot parse ...").
Tensor ParseCsvValue(std::string_view field, DType dtype, std::string_view where);

// Streams records from a file. Lines end with "\n" or "\r\n"; blank lines are skipped.
class CsvRecordReader {
 public:
  // `name` is used in error messages (usually the path).
  CsvRecordReader(std::unique_ptr<SequentialFile> file, std::string name, char delimiter = ',',
                  bool use_quote_delim = true);

  // The next record's fields, or std::nullopt at the end of the file.
  std::optional<std::vector<std::string>> Next();
  // The 1-based line on which the record last returned by Next() starts.
  int64_t line() const { return record_line_; }
  const std::string& name() const { return name_; }

 private:
  bool ReadChar(char* c);

  std::unique_ptr<SequentialFile> file_;
  std::string name_;
  char delimiter_;
  bool use_quote_delim_;
  std::string buffer_;
  size_t buffer_pos_ = 0;
  bool eof_ = false;
  int64_t next_line_ = 1;
  int64_t record_line_ = 0;
};

// Typed rows from a CSV file.
class CsvReader {
 public:
  // record_defaults has one tensor per returned column (per select_cols entry, or per
  // column in the file), as in TF's CsvDataset: a scalar gives the column's dtype and the
  // value used for a missing field; a tensor with no elements (e.g. Tensor(kInt64,
  // Shape{0})) gives the dtype and makes the field required. Dtypes: float32, float64,
  // int32, int64, string. Throws NotFound for a missing file, InvalidArgument for bad
  // arguments or a malformed header.
  static std::unique_ptr<CsvReader> Open(Env* env, const std::string& path,
                                         std::vector<Tensor> record_defaults,
                                         const CsvOptions& options = {});

  // The header names of the returned columns; empty without options.header.
  const std::vector<std::string>& column_names() const { return column_names_; }
  // The dtype of each returned column.
  std::vector<DType> column_dtypes() const;

  // One scalar per column for the next record, or std::nullopt at the end of the file.
  std::optional<std::vector<Tensor>> NextRow();
  // Up to max_rows records as one 1-D tensor per column ([rows]), or std::nullopt when no
  // record is left. REQUIRES: max_rows >= 1.
  std::optional<std::vector<Tensor>> NextBatch(int64_t max_rows);

 private:
  CsvReader(std::unique_ptr<CsvRecordReader> records, std::vector<Tensor> defaults,
            CsvOptions options);
  std::string Where(int file_column) const;

  std::unique_ptr<CsvRecordReader> records_;
  std::vector<Tensor> defaults_;
  CsvOptions options_;
  std::vector<std::string> header_;        // every header field, when options_.header
  std::vector<std::string> column_names_;  // the selected ones
};

}  // namespace loom

#endif  // LOOM_IO_CSV_H_
