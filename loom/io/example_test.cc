#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/base/error.h"
#include "loom/io/example.h"
#include "loom/io/example_builder.h"

namespace loom {
namespace {

template <typename Fn>
std::string ErrorMessage(ErrorCode expected, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto s = t.flat<T>();
  return std::vector<T>(s.begin(), s.end());
}

// Example{features{feature{key: "a" value{int64_list{value: [1]}}}}}, encoded by hand:
//   Int64List  0a 01 01             field 1, packed, one varint
//   Feature    1a 03 <Int64List>    field 3 (int64_list)
//   map entry  0a 01 'a' 12 05 <Feature>
//   Features   0a 0a <entry>
//   Example    0a 0c <Features>
TEST(ExampleBuilderTest, GoldenBytes) {
  const std::string expected = {0x0a, 0x0c, 0x0a, 0x0a, 0x0a, 0x01, 'a', 0x12,
                                0x05, 0x1a, 0x03, 0x0a, 0x01, 0x01};
  EXPECT_EQ(ExampleBuilder().AddInt64s("a", {1}).Serialize(), expected);
}

TEST(ExampleBuilderTest, SerializationIsDeterministic) {
  auto build = [](bool reverse) {
    ExampleBuilder b;
    if (reverse) {
      b.AddFloats("z", {1.5f}).AddBytes("m", {"x"}).AddInt64s("a", {2});
    } else {
      b.AddInt64s("a", {2}).AddBytes("m", {"x"}).AddFloats("z", {1.5f});
    }
    return b.Serialize();
  };
  EXPECT_EQ(build(false), build(true));
}

TEST(ParseExampleTest, FixedLenFeaturesOfEveryDtype) {
  std::string record = ExampleBuilder()
                           .AddInt64s("label", {7})
                           .AddFloats("image", {1, 2, 3, 4, 5, 6})
                           .AddBytes("id", {"img-1"})
                           .AddFloats("unused", {9})
                           .Serialize();
  ExampleSpec spec;
  spec.fixed["label"] = {.dtype = kInt64};
  spec.fixed["image"] = {.dtype = kFloat32, .shape = {2, 3}};
  spec.fixed["id"] = {.dtype = kString};
  ParsedFeatures out = ParseExample(record, spec);
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(out["label"].values.shape(), Shape{});
  EXPECT_EQ(out["label"].values.scalar<int64_t>(), 7);
  EXPECT_EQ(out["image"].values.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<float>(out["image"].values), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out["id"].values.scalar<std::string>(), "img-1");
  EXPECT_FALSE(out["label"].row_splits.defined());
}

TEST(ParseExampleTest, MissingFeatureUsesDefaultOrNamesFeatureAndRecord) {
  std::string record = ExampleBuilder().AddInt64s("label", {1}).Serialize();
  ExampleSpec spec;
  spec.fixed["weight"] = {.dtype = kFloat32, .shape = {2},
                          .default_value = Tensor::Scalar<float>(0.5f)};
  spec.fixed["name"] = {.dtype = kString, .default_value = Tensor::ScalarString("none")};
  ParsedFeatures out = ParseExample(record, spec);
  EXPECT_EQ(Values<float>(out["weight"].values), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(out["name"].values.scalar<std::string>(), "none");

  spec.fixed["age"] = {.dtype = kInt64};
  std::string msg = ErrorMessage(ErrorCode::kInvalidArgument, [&] {
    ParseExample(record, spec, "record 4 of 'train.tfrecord'");
  });
  EXPECT_NE(msg.find("feature 'age' is missing from record 4 of 'train.tfrecord'"),
            std::string::npos)
      << msg;
}

TEST(ParseExampleTest, WrongTypeOrCountIsInvalidArgument) {
  std::string record = ExampleBuilder().AddFloats("x", {1, 2, 3}).Serialize();
  ExampleSpec spec;
  spec.fixed["x"] = {.dtype = kInt64, .shape = {3}};
  std::string msg = ErrorMessage(ErrorCode::kInvalidArgument, [&] { ParseExample(record, spec); });
  EXPECT_NE(msg.find("feature 'x' in the example is a float_list"), std::string::npos) << msg;
  spec.fixed["x"] = {.dtype = kFloat32, .shape = {2}};
  msg = ErrorMessage(ErrorCode::kInvalidArgument, [&] { ParseExample(record, spec); });
  EXPECT_NE(msg.find("has 3 values but its FixedLenFeature shape [2] needs 2"),
            std::string::npos)
      << msg;
  spec.fixed["x"] = {.dtype = kInt32};
  msg = ErrorMessage(ErrorCode::kInvalidArgument, [&] { ParseExample(record, spec); });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(ParseExampleTest, InvalidProtoIsDataLoss) {
  ExampleSpec spec;
  std::string msg =
      ErrorMessage(ErrorCode::kDataLoss, [&] { ParseExample("\xff\xff\xff", spec, "record 9"); });
  EXPECT_NE(msg.find("record 9"), std::string::npos) << msg;
}

std::vector<std::string> Batch() {
  return {ExampleBuilder().AddInt64s("ids", {1, 2, 3}).AddFloats("y", {0.5f}).Serialize(),
          ExampleBuilder().AddFloats("y", {1.5f}).Serialize(),  // no ids
          ExampleBuilder().AddInt64s("ids", {4}).AddFloats("y", {2.5f}).Serialize()};
}

TEST(ParseExampleBatchTest, FixedLenGetsLeadingBatchDim) {
  ExampleSpec spec;
  spec.fixed["y"] = {.dtype = kFloat32, .shape = {1}};
  auto records = Batch();
  ParsedFeatures out = ParseExampleBatch(records, spec);
  EXPECT_EQ(out["y"].values.shape(), (Shape{3, 1}));
  EXPECT_EQ(Values<float>(out["y"].values), (std::vector<float>{0.5f, 1.5f, 2.5f}));
}

TEST(ParseExampleBatchTest, VarLenRaggedAndPadded) {
  auto records = Batch();
  ExampleSpec spec;
  spec.var_len["ids"] = {.dtype = kInt64};
  ParsedFeatures ragged = ParseExampleBatch(records, spec);
  EXPECT_EQ(Values<int64_t>(ragged["ids"].values), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(Values<int64_t>(ragged["ids"].row_splits), (std::vector<int64_t>{0, 3, 3, 4}));

  spec.var_len["ids"] = {.dtype = kInt64, .output = VarLenOutput::kPadded,
                         .padding_value = Tensor::Scalar<int64_t>(-1)};
  ParsedFeatures padded = ParseExampleBatch(records, spec);
  EXPECT_EQ(padded["ids"].values.shape(), (Shape{3, 3}));
  EXPECT_EQ(Values<int64_t>(padded["ids"].values),
            (std::vector<int64_t>{1, 2, 3, -1, -1, -1, 4, -1, -1}));
  EXPECT_FALSE(padded["ids"].row_splits.defined());
}

TEST(ParseExampleBatchTest, VarLenStringsAndSingleRecordShapes) {
  std::string record = ExampleBuilder().AddBytes("w", {"a", "bc"}).Serialize();
  ExampleSpec spec;
  spec.var_len["w"] = {.dtype = kString, .output = VarLenOutput::kPadded};
  ParsedFeatures out = ParseExample(record, spec);
  EXPECT_EQ(out["w"].values.shape(), Shape{2});
  EXPECT_EQ(Values<std::string>(out["w"].values), (std::vector<std::string>{"a", "bc"}));
  spec.var_len["w"].output = VarLenOutput::kRagged;
  out = ParseExample(record, spec);
  EXPECT_EQ(Values<int64_t>(out["w"].row_splits), (std::vector<int64_t>{0, 2}));
}

TEST(ParseExampleBatchTest, ErrorsNameTheRecordInTheBatch) {
  auto records = Batch();
  ExampleSpec spec;
  spec.fixed["ids"] = {.dtype = kInt64, .shape = {3}};
  std::string msg =
      ErrorMessage(ErrorCode::kInvalidArgument, [&] { ParseExampleBatch(records, spec); });
  EXPECT_NE(msg.find("missing from record 1 of the batch"), std::string::npos) << msg;
  std::vector<std::string> names = {"r0", "r1", "r2"};
  msg = ErrorMessage(ErrorCode::kInvalidArgument,
                     [&] { ParseExampleBatch(records, spec, names); });
  EXPECT_NE(msg.find("missing from r1"), std::string::npos) << msg;
}

TEST(ExampleBuilderTest, AddTensorFlattensAndConverts) {
  ExampleBuilder b;
  b.AddTensor("f", Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2}));
  b.AddTensor("i", Tensor::FromVector<int32_t>({5, -6}));
  b.AddTensor("s", Tensor::ScalarString("hi"));
  const auto& features = b.proto().features().feature();
  EXPECT_EQ(features.at("f").float_list().value_size(), 4);
  EXPECT_EQ(features.at("i").int64_list().value(1), -6);
  EXPECT_EQ(features.at("s").bytes_list().value(0), "hi");
  EXPECT_THROW(b.AddTensor("d", Tensor::Scalar<double>(1.0)), Error);
}

}  // namespace
}  // namespace loom
