#ifndef LOOM_DATA_FILE_SOURCES_H_
#define LOOM_DATA_FILE_SOURCES_H_

// Datasets over files, tf.data's file sources. Arrays (.npy, IDX) are index-addressable:
// the file is memory-mapped (or decoded once, for gzip / converted layouts) and element i
// views row i, so Shuffle/Batch take the fast gather path and saving stores row indices.
// Record and text files (TFRecord, text lines, CSV) are streamed: one buffered reader per
// open file, never the whole file in memory; an iterator's state is (file index, byte
// offset in the uncompressed stream), so a restore seeks instead of re-reading.
//
//   auto train = FromNpy({{"x", "train_x.npy"}, {"label", "train_y.npy"}})
//                    .Shuffle(100000, {.seed = 1}).Repeat().Batch(256).Prefetch(2);
//   ExampleSpec spec;
//   spec.fixed["label"] = {.dtype = kInt64};
//   auto records = ParseExamples(TFRecordDataset({"data/*.tfrecord"}).Batch(256), spec);
//
// File lists: each entry is a path or a glob pattern (* ? [..] in the last component),
// expanded in sorted order when the dataset is built. Building throws NotFound naming the
// path for a missing file and naming the pattern for a glob that matches nothing. Read
// errors name the file and byte offset (TFRecord: DataLoss), or the file, line and column
// (CSV: InvalidArgument). A length field in a file never causes an allocation larger
// than the file. Every options struct takes an Env (Default: nullptr, Env::Default()).
// Thread-safety: datasets are immutable; see iterator.h for iterators.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/data/dataset.h"
#include "loom/io/example.h"

namespace loom::data {

// ---- Arrays: index-addressable, zero-copy where the file layout allows. ----

struct NpyOptions {
  // Default: nullptr, Env::Default().
  Env* env = nullptr;
  // float16 / int8 / int16 / uint16 / uint32 arrays are widened (copied) instead of
  // rejected with Unimplemented. Default: true.
  bool convert_unsupported_dtypes = true;
};

// Element i is row i of the array in component "x" (or of each named file, whose dim 0
// must agree). C-ordered little-endian arrays of a Loom dtype are views of the mapping
// (zero-copy, the page cache holds the data); Fortran order and big-endian are converted
// once into an owned copy (npy.h). Object/string/complex dtypes throw Unimplemented, a 0-d
// array InvalidArgument, a truncated file or bad header DataLoss — all naming the file.
Dataset FromNpy(const std::string& path, NpyOptions options = {});
Dataset FromNpy(const std::map<std::string, std::string>& paths, NpyOptions options = {});

struct IdxOptions {
  // Default: nullptr, Env::Default().
  Env* env = nullptr;
  // Component names of the images (or single) file and of the labels file.
  // Default: "x" and "label".
  std::string features_key = "x";
  std::string labels_key = "label";
};

// MNIST-style IDX files, gzipped or not (detected from the bytes). uint8 data stays
// uint8 and, uncompressed, is a view of the mapping; gzipped files are decoded once.
Dataset FromIdx(const std::string& path, IdxOptions options = {});
Dataset FromIdx(const std::string& images_path, const std::string& labels_path,
                IdxOptions options = {});

// ---- TFRecord and tf.train.Example. ----

// Counters a TFRecordDataset adds to while its iterators read (shared by all of them).
struct TFRecordStats {
  std::atomic<uint64_t> records_read{0};
  // Records dropped because of a CRC mismatch (only with skip_corrupt_records).
  std::atomic<uint64_t> corrupt_records_skipped{0};
};

struct TFRecordOptions {
  // "" (or "NONE"), "GZIP" or "ZLIB", TF's compression_type. Default: "".
  std::string compression = "";
  // Skip records that fail a CRC check (counted in stats) instead of throwing DataLoss.
  // Default: false.
  bool skip_corrupt_records = false;
  // Compressed bytes read at a time. Default: 256 KiB.
  size_t buffer_size = 256 << 10;
  // Default: nullptr, Env::Default().
  Env* env = nullptr;
  // Default: nullptr (no counting).
  std::shared_ptr<TFRecordStats> stats = nullptr;
  // When not empty, each element also has this component: a scalar string naming where
  // the record came from, "record 17 of 'data/train.tfrecord'" (0-based; after a restore
  // into the middle of a file, until the next file: "the record at offset 2048 of
  // '...'"), for error messages (ParseExamplesOptions::origin_key). It costs one small
  // string per record. Default: "" (none).
  std::string origin_key = "";
};

// Component name of TFRecordDataset's scalar string elements.
inline constexpr const char* kRecordKey = "record";

// The records of every file in order, one scalar string per element, {"record": ...}.
// Corruption throws DataLoss naming the file and the record's byte offset.
Dataset TFRecordDataset(const std::vector<std::string>& filenames, TFRecordOptions options = {});

struct ParseExamplesOptions {
  // The component holding serialized Examples. Default: "record".
  std::string record_key = kRecordKey;
  // As MapOptions::num_parallel_calls. Default: 0.
  int num_parallel_calls = 0;
  // When not empty: the component (shaped like record_key's, string) whose values name
  // the records in parse errors, e.g. TFRecordOptions::origin_key's, in place of "record
  // i of the batch". It is consumed: the output does not have it. Default: "".
  std::string origin_key = "";
};

// Replaces component record_key (a scalar string: one Example; or a [batch] string vector,
// after Batch) by the parsed features; other components pass through. A fixed feature
// becomes `name` of shape (or [batch] + shape); a padded var-len feature `name` of [n]
// (or [batch, max_n]); a ragged one `name` (flat values) plus `name + "_row_splits"`
// (int64 [2] or [batch + 1]). Parse errors are InvalidArgument/DataLoss naming the
// feature and the record.
Dataset ParseExamples(const Dataset& input, ExampleSpec spec,
                      const ParseExamplesOptions& options = {});
// The pieces of ParseExamples, for a custom Map: the output spec (throws InvalidArgument
// when the input lacks a string record component of rank 0 or 1, or the origin component
// shaped like it), and the function.
ElementSpec ParsedExamplesSpec(const ElementSpec& input, const ExampleSpec& spec,
                               const std::string& record_key = kRecordKey,
                               const std::string& origin_key = "");
Element ParseExamplesInElement(const Element& element, const ExampleSpec& spec,
                               const std::string& record_key = kRecordKey,
                               const std::string& origin_key = "");

// ---- Text. ----

struct TextFileOptions {
  // "" (or "NONE"), "GZIP" or "ZLIB". Default: "".
  std::string compression = "";
  // Bytes read at a time. Default: 256 KiB.
  size_t buffer_size = 256 << 10;
  // Default: nullptr, Env::Default().
  Env* env = nullptr;
};

// The lines of every file in order (without "\n" / "\r\n"), {"line": scalar string}.
// A last line without a newline counts; a compressed file cut short throws DataLoss.
Dataset TextLineDataset(const std::vector<std::string>& filenames,
                        const TextFileOptions& options = {});

struct CsvDatasetOptions {
  // Every file's first record names the columns and is skipped. Default: false.
  bool header = false;
  // Default: ','.
  char field_delim = ',';
  // RFC 4180 quoting ('"'; a quoted field may span lines). Default: true.
  bool use_quote_delim = true;
  // 0-based, strictly increasing file columns to return; empty returns all.
  // Default: empty.
  std::vector<int> select_cols = {};
  // A field equal to this counts as missing. Default: "" (only empty fields).
  std::string na_value = "";
  // Component names, one per returned column. Default: empty, meaning the header's names
  // with `header`, else "col<i>" with i the 0-based file column.
  std::vector<std::string> column_names = {};
  // File-level options (compression, buffer size, Env).
  TextFileOptions file = {};
};

// One element per record: a scalar per returned column. record_defaults, as TF's: one
// per returned column; a scalar gives the dtype (float32, float64, int32, int64, string)
// and the value of a missing field, an empty tensor makes the field required. With
// `header`, the first file's header is read when the dataset is built. A field that does
// not parse, a wrong field count or an unterminated quote throws InvalidArgument naming
// the file, the line and the column.
Dataset CsvDataset(const std::vector<std::string>& filenames, std::vector<Tensor> record_defaults,
                   CsvDatasetOptions options = {});

}  // namespace loom::data

#endif  // LOOM_DATA_FILE_SOURCES_H_
