// Reads every file in testdata/{tfrecord,npy} (written by TensorFlow, Apache
// Beam, gzip(1) and numpy) THROUGH THE DATASETS and checks the values listed for it in
// expected.json. The io layer tests the readers themselves (io/shared_testdata_test.cc);
// this checks the dataset path: file lists, compression options, streaming, parsing with
// ParseExamples, rows of FromNpy. Fails when the folder is absent.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/data/file_sources.h"

namespace loom::data {
namespace {

using nlohmann::json;

class RealFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = LOOM_SHARED_TESTDATA;
    const std::string expected_path = JoinPath(root_, "expected.json");
    ASSERT_TRUE(Env::Default()->FileExists(expected_path))
        << "test data not found at " << root_ << " (the repository's testdata/)";
    expected_ = json::parse(ReadFileToString(Env::Default(), expected_path));
  }

  std::vector<std::string> FilesUnder(const std::string& prefix) const {
    std::vector<std::string> files;
    for (const auto& [name, value] : expected_.items()) {
      if (name.starts_with(prefix)) files.push_back(name);
    }
    return files;
  }

  std::string root_;
  json expected_;
};

DType DTypeOfKind(const std::string& kind) {
  if (kind == "float_list") return kFloat32;
  if (kind == "int64_list") return kInt64;
  if (kind == "bytes_list") return kString;
  ADD_FAILURE() << "unknown kind " << kind;
  return kFloat32;
}

// Values [begin, end) of a ragged feature, compared with the expected (possibly shortened)
// list of values.
void ExpectValues(const Tensor& values, int64_t begin, int64_t end, const json& want) {
  ASSERT_GE(end - begin, static_cast<int64_t>(want.size()));
  for (size_t k = 0; k < want.size(); ++k) {
    const int64_t i = begin + static_cast<int64_t>(k);
    switch (values.dtype()) {
      case kFloat32:
        EXPECT_FLOAT_EQ(values.flat<float>()[i], want[k].get<float>()) << k;
        break;
      case kInt64:
        EXPECT_EQ(values.flat<int64_t>()[i], want[k].get<int64_t>()) << k;
        break;
      default:
        EXPECT_EQ(values.flat<std::string>()[i], want[k].get<std::string>()) << k;
        break;
    }
  }
}

TEST_F(RealFilesTest, TFRecordFilesReadAndParseThroughTheDatasets) {
  const std::vector<std::string> files = FilesUnder("tfrecord/");
  ASSERT_EQ(files.size(), 4u);
  for (const std::string& name : files) {
    SCOPED_TRACE(name);
    const json& want = expected_[name];
    const std::string compression = want.at("compression") == "gzip" ? "GZIP" : "";
    Dataset records = TFRecordDataset({JoinPath(root_, name)}, {.compression = compression});
    const size_t count = want.at("records").get<size_t>();

    std::vector<size_t> lengths;
    auto it = records.MakeIterator();
    while (auto e = it->GetNext())
      lengths.push_back(e->at(kRecordKey).scalar<std::string>().size());
    ASSERT_EQ(lengths.size(), count);
    if (want.contains("record_lengths")) {
      EXPECT_EQ(lengths, want.at("record_lengths").get<std::vector<size_t>>());
    }
    if (!want.contains("first_example")) continue;

    // Every feature of the first example as a ragged var-len feature, parsed record by
    // record (the first one checked) and in batches (every record must parse).
    ExampleSpec spec;
    for (const auto& [feature, value] : want.at("first_example").items()) {
      spec.var_len[feature] = {.dtype = DTypeOfKind(value.at("kind").get<std::string>())};
    }
    auto first = ParseExamples(records, spec).MakeIterator()->GetNext();
    ASSERT_TRUE(first);
    for (const auto& [feature, value] : want.at("first_example").items()) {
      SCOPED_TRACE(feature);
      const Tensor& values = first->at(feature);
      ExpectValues(values, 0, values.dim(0), value.at("values"));
      EXPECT_EQ(first->at(feature + "_row_splits").flat<int64_t>()[1], values.dim(0));
    }
    int64_t parsed = 0;
    auto batches = ParseExamples(records.Batch(32), spec).MakeIterator();
    bool first_batch = true;
    const auto& first_example = want.at("first_example");
    const std::string feature = first_example.begin().key();
    const auto& value = first_example.begin().value();
    while (auto b = batches->GetNext()) {
      const Tensor& splits = b->at(feature + "_row_splits");
      if (first_batch) {
        ExpectValues(b->at(feature), splits.flat<int64_t>()[0], splits.flat<int64_t>()[1],
                     value.at("values"));
        first_batch = false;
      }
      parsed += splits.dim(0) - 1;
    }
    EXPECT_EQ(parsed, static_cast<int64_t>(count));
  }
}

double AsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case kFloat32:
      return t.flat<float>()[i];
    case kFloat64:
      return t.flat<double>()[i];
    case kInt32:
      return t.flat<int32_t>()[i];
    case kInt64:
      return static_cast<double>(t.flat<int64_t>()[i]);
    case kUInt8:
      return t.flat<uint8_t>()[i];
    case kBool:
      return t.flat<bool>()[i] ? 1.0 : 0.0;
    default:
      ADD_FAILURE() << "unexpected dtype " << DTypeName(t.dtype());
      return 0;
  }
}

double AsDouble(const json& v) {
  return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
}

TEST_F(RealFilesTest, NpyFilesReadThroughFromNpy) {
  const std::vector<std::string> files = FilesUnder("npy/");
  ASSERT_EQ(files.size(), 15u);
  for (const std::string& name : files) {
    SCOPED_TRACE(name);
    const json& want = expected_[name];
    const auto shape = want.at("shape").get<std::vector<int64_t>>();
    const std::string path = JoinPath(root_, name);
    if (shape.empty()) {
      // A 0-d array has no rows to slice: a clear InvalidArgument naming the file.
      try {
        FromNpy(path);
        ADD_FAILURE() << "FromNpy accepted a 0-d array";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
        EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
      }
      continue;
    }
    Dataset d = FromNpy(path);
    EXPECT_EQ(d.spec().at("x").shape, Shape(std::vector<int64_t>(shape.begin() + 1, shape.end())));
    std::vector<double> values;
    int64_t rows = 0;
    auto it = d.MakeIterator();
    while (auto e = it->GetNext()) {
      const Tensor& row = e->at("x");
      for (int64_t i = 0; i < row.NumElements(); ++i) values.push_back(AsDouble(row, i));
      ++rows;
    }
    EXPECT_EQ(rows, shape[0]);
    // expected.json lists a Fortran-ordered file's first values in file (column-major)
    // order; rows are C order, so compare against the column-major walk.
    if (want.at("fortran_order").get<bool>() && shape.size() == 2) {
      std::vector<double> column_major;
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t i = 0; i < shape[0]; ++i) column_major.push_back(values[i * shape[1] + j]);
      values = column_major;
    }
    const json& first = want.at("first_values");
    ASSERT_GE(values.size(), first.size());
    for (size_t k = 0; k < first.size(); ++k) EXPECT_DOUBLE_EQ(values[k], AsDouble(first[k])) << k;
    double sum = 0;
    for (double v : values) sum += v;
    const double expected_sum = want.at("sum").get<double>();
    EXPECT_NEAR(sum, expected_sum, 1e-9 * std::max(1.0, std::abs(expected_sum)));
  }
}

}  // namespace
}  // namespace loom::data
