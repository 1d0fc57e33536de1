// CSV reading (loom/io/csv.h): records alone, then typed rows and column batches with TF
// CsvDataset's record_defaults (a float column with a default, a required int64 column, a
// string column, a float64 and an int32 column), with and without a header and quoting.
// The first input byte picks the options; the rest is the file.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/csv.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  auto env = fuzz::EnvWithFile("/in/a.csv", fuzz::AsView(data + 1, size - 1));
  const bool quotes = (flags & 1) == 0;
  const char delimiter = (flags & 2) ? ';' : ',';
  try {
    CsvRecordReader records(env->NewSequentialFile("/in/a.csv"), "/in/a.csv", delimiter, quotes);
    while (auto fields = records.Next()) {
      for (const std::string& field : *fields) {
        for (DType dt : {kFloat32, kFloat64, kInt32, kInt64, kString}) {
          try {
            ParseCsvValue(field, dt, "field");
          } catch (const Error&) {
          }
        }
      }
    }
  } catch (const Error&) {
  }
  try {
    CsvOptions options{
        .delimiter = delimiter, .use_quote_delim = quotes, .header = (flags & 4) != 0};
    if (flags & 8) options.select_cols = {0, 2, 3};
    if (flags & 16) options.na_value = "NA";
    std::vector<Tensor> defaults;
    if (flags & 8) {
      defaults = {Tensor::Scalar(1.5f), Tensor::ScalarString("none"), Tensor::Scalar(0.0)};
    } else {
      defaults = {Tensor::Scalar(1.5f), Tensor(kInt64, Shape{0}), Tensor::ScalarString("none"),
                  Tensor::Scalar(0.0), Tensor::Scalar(int32_t{7})};
    }
    auto reader = CsvReader::Open(env.get(), "/in/a.csv", defaults, options);
    if (flags & 32) {
      while (reader->NextBatch(1 + (flags >> 6))) {
      }
    } else {
      while (reader->NextRow()) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
