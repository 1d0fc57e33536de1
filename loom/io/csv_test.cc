#include "loom/io/csv.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/base/error.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

using Fields = std::vector<std::string>;

TEST(CsvTest, ParseRecordFollowsRfc4180) {
  EXPECT_EQ(ParseCsvRecord("a,b,c"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(ParseCsvRecord(""), (Fields{""}));
  EXPECT_EQ(ParseCsvRecord(",,"), (Fields{"", "", ""}));
  EXPECT_EQ(ParseCsvRecord(R"("a,b","say ""hi""",)"), (Fields{"a,b", R"(say "hi")", ""}));
  EXPECT_EQ(ParseCsvRecord("\"multi\nline\",x"), (Fields{"multi\nline", "x"}));
  EXPECT_EQ(ParseCsvRecord(R"("")"), (Fields{""}));
  EXPECT_EQ(ParseCsvRecord("1\t2\t\"3\t4\"", '\t'), (Fields{"1", "2", "3\t4"}));
  EXPECT_EQ(ParseCsvRecord(R"(a"b,c)", ',', /*use_quote_delim=*/false), (Fields{"a\"b", "c"}));
  const std::string msg = ErrorOf([] { ParseCsvRecord(R"(a,"open)", ',', true, "f.csv line 4"); },
                                  ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("f.csv line 4 column 2"), std::string::npos) << msg;
  EXPECT_NE(
      ErrorOf([] { ParseCsvRecord(R"("a"b,c)"); }, ErrorCode::kInvalidArgument).find("column 1"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf([] { ParseCsvRecord(R"(x,a"b)"); }, ErrorCode::kInvalidArgument).find("column 2"),
      std::string::npos);
}

TEST(CsvTest, ParseValueIsStrict) {
  EXPECT_EQ(ParseCsvValue("1.5", kFloat32, "w").scalar<float>(), 1.5f);
  EXPECT_EQ(ParseCsvValue(" -2e3 ", kFloat64, "w").scalar<double>(), -2000.0);
  EXPECT_TRUE(std::isnan(ParseCsvValue("nan", kFloat32, "w").scalar<float>()));
  EXPECT_TRUE(std::isinf(ParseCsvValue("-inf", kFloat64, "w").scalar<double>()));
  EXPECT_EQ(ParseCsvValue("+7", kInt32, "w").scalar<int32_t>(), 7);
  EXPECT_EQ(ParseCsvValue("-9000000000", kInt64, "w").scalar<int64_t>(), -9000000000);
  EXPECT_EQ(ParseCsvValue(" x ", kString, "w").scalar<std::string>(), " x ");
  const std::string msg =
      ErrorOf([] { ParseCsvValue("1.5", kInt32, "here"); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("here: cannot parse '1.5' as int32"), std::string::npos) << msg;
  EXPECT_THROW(ParseCsvValue("3000000000", kInt32, "w"), Error);
  EXPECT_THROW(ParseCsvValue("12abc", kFloat32, "w"), Error);
  EXPECT_THROW(ParseCsvValue("", kInt64, "w"), Error);
  EXPECT_THROW(ParseCsvValue("1", kBool, "w"), Error);
}

TEST(CsvTest, RecordReaderStreamsAcrossLinesAndBuffers) {
  auto env = NewMemEnv();
  std::string text = "a,b\r\n\n\"x\ny\",2\n";
  for (int i = 0; i < 20000; ++i) text += "row" + std::to_string(i) + ",v\n";  // > 64 KiB
  text += "last,no newline";
  WriteFileAtomically(env.get(), "r.csv", text);
  CsvRecordReader reader(env->NewSequentialFile("r.csv"), "r.csv");
  EXPECT_EQ(*reader.Next(), (Fields{"a", "b"}));
  EXPECT_EQ(reader.line(), 1);
  EXPECT_EQ(*reader.Next(), (Fields{"x\ny", "2"}));
  EXPECT_EQ(reader.line(), 3);
  for (int i = 0; i < 20000; ++i) {
    auto r = reader.Next();
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ((*r)[0], "row" + std::to_string(i));
  }
  EXPECT_EQ(reader.line(), 20004);
  EXPECT_EQ(*reader.Next(), (Fields{"last", "no newline"}));
  EXPECT_FALSE(reader.Next().has_value());
  EXPECT_FALSE(reader.Next().has_value());
}

class CsvReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFileAtomically(env_.get(), "data.csv",
                        "id,price,name,count\n"
                        "1,2.5,apple,10\n"
                        "2,,\"pear, green\",\n"
                        "3,4,plum,NA\n");
  }
  std::unique_ptr<Env> env_ = NewMemEnv();
};

TEST_F(CsvReaderTest, TypedRowsWithDefaultsHeaderAndNa) {
  CsvOptions options;
  options.header = true;
  options.na_value = "NA";
  auto reader = CsvReader::Open(env_.get(), "data.csv",
                                {Tensor(kInt64, Shape{0}), Tensor::Scalar<float>(-1.0f),
                                 Tensor::ScalarString(""), Tensor::Scalar<int32_t>(0)},
                                options);
  EXPECT_EQ(reader->column_names(), (Fields{"id", "price", "name", "count"}));
  EXPECT_EQ(reader->column_dtypes(), (std::vector<DType>{kInt64, kFloat32, kString, kInt32}));
  auto row = reader->NextRow();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ((*row)[0].scalar<int64_t>(), 1);
  EXPECT_EQ((*row)[1].scalar<float>(), 2.5f);
  EXPECT_EQ((*row)[2].scalar<std::string>(), "apple");
  EXPECT_EQ((*row)[3].scalar<int32_t>(), 10);
  EXPECT_EQ((*row)[3].rank(), 0);
  row = reader->NextRow();
  EXPECT_EQ((*row)[1].scalar<float>(), -1.0f);
  EXPECT_EQ((*row)[2].scalar<std::string>(), "pear, green");
  EXPECT_EQ((*row)[3].scalar<int32_t>(), 0);
  row = reader->NextRow();
  EXPECT_EQ((*row)[3].scalar<int32_t>(), 0);  // "NA"
  EXPECT_FALSE(reader->NextRow().has_value());
}

TEST_F(CsvReaderTest, SelectColumnsAndBatches) {
  CsvOptions options;
  options.header = true;
  options.select_cols = {0, 2};
  auto reader = CsvReader::Open(env_.get(), "data.csv",
                                {Tensor::Scalar<int32_t>(0), Tensor::ScalarString("")}, options);
  EXPECT_EQ(reader->column_names(), (Fields{"id", "name"}));
  auto batch = reader->NextBatch(2);
  ASSERT_TRUE(batch.has_value());
  EXPECT_TRUE((*batch)[0].Equals(Tensor::FromVector<int32_t>({1, 2})));
  EXPECT_TRUE((*batch)[1].Equals(Tensor::FromVector<std::string>({"apple", "pear, green"})));
  batch = reader->NextBatch(2);
  EXPECT_TRUE((*batch)[0].Equals(Tensor::FromVector<int32_t>({3})));
  EXPECT_FALSE(reader->NextBatch(2).has_value());
}

TEST_F(CsvReaderTest, ErrorsNameFileLineAndColumn) {
  CsvOptions options;
  options.header = true;
  auto required = CsvReader::Open(env_.get(), "data.csv",
                                  {Tensor::Scalar<int64_t>(0), Tensor(kFloat32, Shape{0}),
                                   Tensor::ScalarString(""), Tensor::Scalar<int32_t>(0)},
                                  options);
  required->NextRow();
  std::string msg = ErrorOf([&] { required->NextRow(); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("CSV file 'data.csv' line 3 column 2 ('price')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("required"), std::string::npos) << msg;

  auto typed = CsvReader::Open(env_.get(), "data.csv",
                               {Tensor::Scalar<int64_t>(0), Tensor::Scalar<float>(0),
                                Tensor::Scalar<int32_t>(0), Tensor::Scalar<int32_t>(0)},
                               options);
  msg = ErrorOf([&] { typed->NextRow(); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("line 2 column 3 ('name'): cannot parse 'apple' as int32"), std::string::npos)
      << msg;

  auto narrow = CsvReader::Open(env_.get(), "data.csv", {Tensor::Scalar<int64_t>(0)}, options);
  msg = ErrorOf([&] { narrow->NextRow(); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("line 2: 4 fields, expected 1"), std::string::npos) << msg;

  EXPECT_THROW(CsvReader::Open(env_.get(), "data.csv", {}), Error);
  EXPECT_THROW(CsvReader::Open(env_.get(), "data.csv", {Tensor::Scalar<bool>(true)}), Error);
  try {
    CsvReader::Open(env_.get(), "missing.csv", {Tensor::Scalar<float>(0)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

}  // namespace
}  // namespace loom
