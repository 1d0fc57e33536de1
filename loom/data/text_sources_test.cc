// Tests of the text and Example file sources (file_sources.h): ParseExamples over TFRecord
// files, TextLineDataset and CsvDataset, with their bad inputs and mid-stream restore. The
// binary sources (npy, IDX, TFRecord) are tested in file_sources_test.cc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/data/dataset_impl.h"
#include "loom/data/file_sources.h"
#include "loom/data/test_util.h"
#include "loom/io/byte_stream.h"
#include "loom/io/example_builder.h"

namespace loom::data {
namespace {

using testing::CodeOf;
using testing::ExpectRestoreAtEveryPoint;
using testing::Strings;
using testing::WriteBytes;
using testing::WriteRecords;
// ---------------------------------------------------------------- Examples

class ParseExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> records;
    for (int i = 0; i < 5; ++i) {
      ExampleBuilder b;
      b.AddInt64s("label", {i}).AddFloats("image", {1.0f * i, 2.0f * i, 3.0f * i, 4.0f * i});
      std::vector<std::string> words(i, StrCat("w", i));
      b.AddBytes("words", words);
      if (i != 3) b.AddFloats("weight", {0.5f});
      records.push_back(b.Serialize());
    }
    WriteRecords(env_.get(), "/ex.tfrecord", records, Compression::kGzip);
    spec_.fixed["label"] = {.dtype = kInt64};
    spec_.fixed["image"] = {.dtype = kFloat32, .shape = {2, 2}};
    spec_.fixed["weight"] = {.dtype = kFloat32, .default_value = Tensor::Scalar<float>(1.0f)};
    spec_.var_len["words"] = {.dtype = kString, .output = VarLenOutput::kRagged};
  }
  Dataset Records() {
    return TFRecordDataset({"/ex.tfrecord"}, {.compression = "GZIP", .env = env_.get()});
  }

  std::unique_ptr<Env> env_ = NewMemEnv();
  ExampleSpec spec_;
};

TEST_F(ParseExamplesTest, SingleRecords) {
  Dataset d = ParseExamples(Records(), spec_);
  EXPECT_EQ(SpecString(d.spec()),
            "{image: float32[2,2], label: int64[], weight: float32[], words: string[?], "
            "words_row_splits: int64[2]}");
  auto it = d.MakeIterator();
  for (int i = 0; i < 5; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->at("label").scalar<int64_t>(), i);
    EXPECT_EQ(e->at("image").flat<float>()[3], 4.0f * i);
    EXPECT_EQ(e->at("weight").scalar<float>(), i == 3 ? 1.0f : 0.5f);
    EXPECT_EQ(e->at("words").dim(0), i);
  }
}

TEST_F(ParseExamplesTest, BatchesRaggedAndPadded) {
  Dataset d =
      ParseExamples(Records().Batch(3, {.drop_remainder = true}), spec_, {.num_parallel_calls = 2});
  EXPECT_EQ(d.spec().at("image").shape, (Shape{3, 2, 2}));
  EXPECT_EQ(d.spec().at("words_row_splits").shape, (Shape{4}));
  auto e = d.MakeIterator()->GetNext();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->at("label").flat<int64_t>()[2], 2);
  EXPECT_EQ(e->at("words").dim(0), 0 + 1 + 2);
  EXPECT_EQ(std::vector<int64_t>(e->at("words_row_splits").flat<int64_t>().begin(),
                                 e->at("words_row_splits").flat<int64_t>().end()),
            (std::vector<int64_t>{0, 0, 1, 3}));

  ExampleSpec padded = spec_;
  padded.var_len["words"] = {.dtype = kString, .output = VarLenOutput::kPadded};
  auto it = ParseExamples(Records().Batch(2), padded).MakeIterator();
  it->GetNext();
  auto second = it->GetNext();  // records 2 and 3: 2 and 3 words
  ASSERT_TRUE(second);
  EXPECT_EQ(second->at("words").shape(), (Shape{2, 3}));
  EXPECT_EQ(second->at("words").flat<std::string>()[2], "");
  EXPECT_EQ(second->at("words").flat<std::string>()[5], "w3");
}

TEST_F(ParseExamplesTest, BadSpecsAndRecords) {
  EXPECT_EQ(CodeOf([&] { ParseExamples(Records(), spec_, {.record_key = "nope"}); }),
            ErrorCode::kInvalidArgument);
  ExampleSpec clash = spec_;
  clash.fixed["words_row_splits"] = {.dtype = kInt64};
  EXPECT_EQ(CodeOf([&] { ParseExamples(Records(), clash); }), ErrorCode::kInvalidArgument);
  ExampleSpec strict = spec_;
  strict.fixed["weight"].default_value.reset();
  std::string msg;
  auto it = ParseExamples(Records().Skip(3), strict).MakeIterator();
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("weight"), std::string::npos) << msg;
}

// With an origin component, a parse error names the file and the record's index in it
// (not "record i of the batch"), batched or not, across files, and after a restore.
TEST_F(ParseExamplesTest, OriginNamesTheFileAndTheRecordInIt) {
  WriteRecords(env_.get(), "/first.tfrecord",
               {ExampleBuilder().AddInt64s("label", {7}).Serialize(),
                ExampleBuilder().AddInt64s("label", {8}).Serialize()});
  WriteRecords(env_.get(), "/second.tfrecord",
               {ExampleBuilder().AddInt64s("label", {9}).Serialize(),
                ExampleBuilder().AddFloats("weight", {1.0f}).Serialize()});
  auto records = [&] {
    return TFRecordDataset({"/first.tfrecord", "/second.tfrecord"},
                           {.env = env_.get(), .origin_key = "origin"});
  };
  EXPECT_EQ(SpecString(records().spec()), "{origin: string[], record: string[]}");
  EXPECT_EQ(records().MakeIterator()->GetNext()->at("origin").scalar<std::string>(),
            "record 0 of '/first.tfrecord'");
  // /ex.tfrecord is gzipped: read it alone for the weight error (its record 3 lacks it).
  auto gz = TFRecordDataset({"/ex.tfrecord"},
                            {.compression = "GZIP", .env = env_.get(), .origin_key = "origin"});
  ExampleSpec ex = spec_;
  ex.fixed["weight"].default_value.reset();
  for (bool batched : {false, true}) {
    SCOPED_TRACE(batched);
    Dataset d = ParseExamples(batched ? gz.Batch(2) : gz, ex, {.origin_key = "origin"});
    EXPECT_EQ(d.spec().count("origin"), 0u);
    auto it = d.MakeIterator();
    std::string msg;
    EXPECT_EQ(CodeOf(
                  [&] {
                    while (it->GetNext()) {
                    }
                  },
                  &msg),
              ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("feature 'weight' is missing from record 3 of '/ex.tfrecord'"),
              std::string::npos)
        << msg;
  }
  // Across files: the batch's last record is the second file's record 1.
  ExampleSpec labels;
  labels.fixed["label"] = {.dtype = kInt64};
  std::string msg;
  auto it = ParseExamples(records().Batch(4), labels, {.origin_key = "origin"}).MakeIterator();
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("feature 'label' is missing from record 1 of '/second.tfrecord'"),
            std::string::npos)
      << msg;
  // Restored into the middle of a file, the index is unknown until the next file: the
  // byte offset names the record instead.
  auto reader = gz.MakeIterator();
  reader->GetNext();
  reader->GetNext();
  const std::string state = reader->Save();
  auto restored = gz.MakeIterator();
  restored->Restore(state);
  std::string origin = restored->GetNext()->at("origin").scalar<std::string>();
  EXPECT_TRUE(origin.starts_with("the record at offset ")) << origin;
  EXPECT_TRUE(origin.ends_with(" of '/ex.tfrecord'")) << origin;
  // An origin component that is missing or shaped unlike the records is a spec error.
  EXPECT_EQ(CodeOf([&] { ParseExamples(Records(), spec_, {.origin_key = "origin"}); }),
            ErrorCode::kInvalidArgument);
  Dataset int_origin =
      FromTensors({{"record", Tensor::ScalarString("")}, {"origin", Tensor::Scalar<int64_t>(1)}});
  EXPECT_EQ(CodeOf([&] { ParseExamples(int_origin, spec_, {.origin_key = "origin"}); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([&] { ParseExamples(gz, spec_, {.origin_key = "record"}); }),
            ErrorCode::kInvalidArgument);
}

// ---------------------------------------------------------------- text and CSV

TEST(TextLineDatasetTest, LinesOfPlainAndGzippedFilesAndRestore) {
  auto env = NewMemEnv();
  WriteBytes(env.get(), "/a.txt", "first\r\nsecond\n\nfourth");
  WriteBytes(env.get(), "/b.txt.gz", "b1\nb2\n", Compression::kGzip);
  Dataset a = TextLineDataset({"/a.txt"}, {.env = env.get()});
  EXPECT_EQ(SpecString(a.spec()), "{line: string[]}");
  EXPECT_EQ(Strings(a, "line"), (std::vector<std::string>{"first", "second", "", "fourth"}));
  Dataset gz =
      TextLineDataset({"/b.txt.gz"}, {.compression = "GZIP", .buffer_size = 3, .env = env.get()});
  EXPECT_EQ(Strings(gz, "line"), (std::vector<std::string>{"b1", "b2"}));
  ExpectRestoreAtEveryPoint(
      TextLineDataset({"/a.txt", "/a.txt"}, {.buffer_size = 4, .env = env.get()}), "line");
  ExpectRestoreAtEveryPoint(gz, "line");

  // A gzip stream cut short is DataLoss naming the file.
  std::string bytes = ReadFileToString(env.get(), "/b.txt.gz");
  WriteBytes(env.get(), "/cut.gz", bytes.substr(0, bytes.size() - 8));
  std::string msg;
  EXPECT_EQ(CodeOf(
                [&] {
                  Strings(TextLineDataset({"/cut.gz"}, {.compression = "GZIP", .env = env.get()}),
                          "line");
                },
                &msg),
            ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("/cut.gz"), std::string::npos) << msg;
  EXPECT_EQ(CodeOf([&] { TextLineDataset({"/none.txt"}, {.env = env.get()}); }, &msg),
            ErrorCode::kNotFound);
  EXPECT_NE(msg.find("/none.txt"), std::string::npos) << msg;
}

class CsvDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteBytes(env_.get(), "/p1.csv",
               "id,name,score,note\n"
               "1,\"Smith, J\",2.5,ok\n"
               "2,Lee,,\"two\nlines\"\n"
               "\n"
               "3,\"\"\"Q\"\"\",NA,x\n");
    WriteBytes(env_.get(), "/p2.csv.gz", "id,name,score,note\n4,Kim,7,y\n", Compression::kGzip);
  }
  std::vector<Tensor> Defaults() {
    return {Tensor(kInt64, Shape{0}), Tensor::ScalarString(""), Tensor::Scalar<float>(-1.0f),
            Tensor::ScalarString("-")};
  }
  std::unique_ptr<Env> env_ = NewMemEnv();
};

TEST_F(CsvDatasetTest, TypedColumnsWithHeaderQuotesDefaultsAndNa) {
  Dataset d = CsvDataset({"/p1.csv"}, Defaults(),
                         {.header = true, .na_value = "NA", .file = {.env = env_.get()}});
  EXPECT_EQ(SpecString(d.spec()),
            "{id: int64[], name: string[], note: string[], score: float32[]}");
  auto it = d.MakeIterator();
  std::vector<std::string> names, notes;
  std::vector<float> scores;
  while (auto e = it->GetNext()) {
    names.push_back(e->at("name").scalar<std::string>());
    notes.push_back(e->at("note").scalar<std::string>());
    scores.push_back(e->at("score").scalar<float>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Smith, J", "Lee", "\"Q\""}));
  EXPECT_EQ(notes, (std::vector<std::string>{"ok", "two\nlines", "x"}));
  EXPECT_EQ(scores, (std::vector<float>{2.5f, -1.0f, -1.0f}));

  Dataset sel = CsvDataset(
      {"/p1.csv"}, {Tensor(kInt64, Shape{0}), Tensor::Scalar<double>(0)},
      {.header = true, .select_cols = {0, 2}, .na_value = "NA", .file = {.env = env_.get()}});
  EXPECT_EQ(SpecString(sel.spec()), "{id: int64[], score: float64[]}");
  EXPECT_EQ(testing::Ints(sel, "id"), (std::vector<int64_t>{1, 2, 3}));
  Dataset sel_gz = CsvDataset({"/p2.csv.gz"}, {Tensor(kInt64, Shape{0}), Tensor::Scalar<double>(0)},
                              {.header = true,
                               .select_cols = {0, 2},
                               .column_names = {"k", "v"},
                               .file = {.compression = "GZIP", .env = env_.get()}});
  auto e = sel_gz.MakeIterator()->GetNext();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->at("k").scalar<int64_t>(), 4);
  EXPECT_EQ(e->at("v").scalar<double>(), 7.0);
}

TEST_F(CsvDatasetTest, ErrorsNameFileLineAndColumn) {
  WriteBytes(env_.get(), "/bad.csv", "1,a,2.0,x\n2,b,zwei,y\n");
  std::string msg;
  auto it = CsvDataset({"/bad.csv"}, Defaults(), {.file = {.env = env_.get()}}).MakeIterator();
  ASSERT_TRUE(it->GetNext());
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("/bad.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column 3"), std::string::npos) << msg;

  WriteBytes(env_.get(), "/few.csv", "1,a,2.0,x\n\n3,b\n");
  it = CsvDataset({"/few.csv"}, Defaults(), {.file = {.env = env_.get()}}).MakeIterator();
  it->GetNext();
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;

  WriteBytes(env_.get(), "/req.csv", "1,a,2.0,x\n,b,1,y\n");
  it = CsvDataset({"/req.csv"}, Defaults(), {.file = {.env = env_.get()}}).MakeIterator();
  it->GetNext();
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("column 1"), std::string::npos) << msg;

  WriteBytes(env_.get(), "/open.csv", "1,a,2.0,x\n2,\"never closed,1,y\n");
  it = CsvDataset({"/open.csv"}, Defaults(), {.file = {.env = env_.get()}}).MakeIterator();
  it->GetNext();
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("/open.csv' line 2"), std::string::npos) << msg;

  EXPECT_EQ(CodeOf([&] {
              CsvDataset({"/p1.csv"}, {Tensor::Scalar<float>(0)},
                         {.header = true, .select_cols = {7}, .file = {.env = env_.get()}});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([&] { CsvDataset({"/x.csv"}, Defaults(), {.file = {.env = env_.get()}}); }),
            ErrorCode::kNotFound);
}

TEST_F(CsvDatasetTest, SaveRestoreMidStreamAcrossFiles) {
  WriteBytes(env_.get(), "/p2.csv", "id,name,score,note\n4,Kim,7,y\n5,\"multi\nline\nname\",8,z\n");
  Dataset d =
      CsvDataset({"/p1.csv", "/p2.csv"}, Defaults(),
                 {.header = true, .na_value = "NA", .file = {.buffer_size = 5, .env = env_.get()}});
  ExpectRestoreAtEveryPoint(d, "name");
  // Line numbers survive a restore: an error after it still names the right line.
  WriteBytes(env_.get(), "/late.csv", "1,a,1,x\n2,b,2,y\n3,c,bad,z\n");
  Dataset late = CsvDataset({"/late.csv"}, Defaults(), {.file = {.env = env_.get()}});
  auto it = late.MakeIterator();
  it->GetNext();
  auto restored = late.MakeIterator();
  restored->Restore(it->Save());
  restored->GetNext();
  std::string msg;
  EXPECT_EQ(CodeOf([&] { restored->GetNext(); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::data
