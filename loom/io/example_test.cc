#include "loom/io/example.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/base/error.h"
#include "loom/io/example_builder.h"
#include "loom/io/example_proto.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

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
  const std::string expected = {0x0a, 0x0c, 0x0a, 0x0a, 0x0a, 0x01, 'a',
                                0x12, 0x05, 0x1a, 0x03, 0x0a, 0x01, 0x01};
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
  spec.fixed["weight"] = {
      .dtype = kFloat32, .shape = {2}, .default_value = Tensor::Scalar<float>(0.5f)};
  spec.fixed["name"] = {.dtype = kString, .default_value = Tensor::ScalarString("none")};
  ParsedFeatures out = ParseExample(record, spec);
  EXPECT_EQ(Values<float>(out["weight"].values), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(out["name"].values.scalar<std::string>(), "none");

  spec.fixed["age"] = {.dtype = kInt64};
  std::string msg = ErrorOf([&] { ParseExample(record, spec, "record 4 of 'train.tfrecord'"); },
                            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("feature 'age' is missing from record 4 of 'train.tfrecord'"),
            std::string::npos)
      << msg;
}

TEST(ParseExampleTest, WrongTypeOrCountIsInvalidArgument) {
  std::string record = ExampleBuilder().AddFloats("x", {1, 2, 3}).Serialize();
  ExampleSpec spec;
  spec.fixed["x"] = {.dtype = kInt64, .shape = {3}};
  std::string msg = ErrorOf([&] { ParseExample(record, spec); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("feature 'x' in the example is a float_list"), std::string::npos) << msg;
  spec.fixed["x"] = {.dtype = kFloat32, .shape = {2}};
  msg = ErrorOf([&] { ParseExample(record, spec); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("has 3 values but its FixedLenFeature shape [2] needs 2"), std::string::npos)
      << msg;
  spec.fixed["x"] = {.dtype = kInt32};
  msg = ErrorOf([&] { ParseExample(record, spec); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(ParseExampleTest, InvalidProtoIsDataLoss) {
  ExampleSpec spec;
  std::string msg =
      ErrorOf([&] { ParseExample("\xff\xff\xff", spec, "record 9"); }, ErrorCode::kDataLoss);
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

  spec.var_len["ids"] = {.dtype = kInt64,
                         .output = VarLenOutput::kPadded,
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
  std::string msg = ErrorOf([&] { ParseExampleBatch(records, spec); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("missing from record 1 of the batch"), std::string::npos) << msg;
  std::vector<std::string> names = {"r0", "r1", "r2"};
  msg = ErrorOf([&] { ParseExampleBatch(records, spec, names); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("missing from r1"), std::string::npos) << msg;
}

TEST(ExampleBuilderTest, AddTensorFlattensAndConverts) {
  ExampleBuilder b;
  b.AddTensor("f", Tensor::FromVector<float>({1, 2, 3, 4}, Shape{2, 2}));
  b.AddTensor("i", Tensor::FromVector<int32_t>({5, -6}));
  b.AddTensor("s", Tensor::ScalarString("hi"));
  const proto::Example example = ToExampleProto(b);
  const auto& features = example.features().feature();
  EXPECT_EQ(features.at("f").float_list().value_size(), 4);
  EXPECT_EQ(features.at("i").int64_list().value(1), -6);
  EXPECT_EQ(features.at("s").bytes_list().value(0), "hi");
  EXPECT_THROW(b.AddTensor("d", Tensor::Scalar<double>(1.0)), Error);
}

// ---- The wire decoder (example_wire.h) against libprotobuf. ----
// Records are parsed from their bytes where the decoder accepts them and by libprotobuf
// otherwise; either way the result must be what libprotobuf's reading of the record gives.
// ProtobufReading computes that directly from a proto::Example for the spec
// {a: float32, b: int64, c: string}, all ragged.

struct Reading {
  std::optional<ErrorCode> error;
  std::vector<float> a;
  std::vector<int64_t> b;
  std::vector<std::string> c;
  // Floats compare by their bits: a damaged record may hold NaNs.
  bool operator==(const Reading& o) const {
    return error == o.error && b == o.b && c == o.c && a.size() == o.a.size() &&
           (a.empty() || std::memcmp(a.data(), o.a.data(), a.size() * sizeof(float)) == 0);
  }
};

Reading Failed(ErrorCode code) {
  Reading r;
  r.error = code;
  return r;
}

void PrintTo(const Reading& r, std::ostream* os) {
  if (r.error) {
    *os << "error " << static_cast<int>(*r.error);
    return;
  }
  *os << "a=[";
  for (float v : r.a) *os << v << " ";
  *os << "] b=[";
  for (int64_t v : r.b) *os << v << " ";
  *os << "] c=[";
  for (const auto& v : r.c) *os << "'" << v << "' ";
  *os << "]";
}

ExampleSpec AbcSpec() {
  ExampleSpec spec;
  spec.var_len["a"] = {.dtype = kFloat32};
  spec.var_len["b"] = {.dtype = kInt64};
  spec.var_len["c"] = {.dtype = kString};
  return spec;
}

Reading ProtobufReading(const std::string& record) {
  proto::Example ex;
  if (!ex.ParseFromString(record)) return Failed(ErrorCode::kDataLoss);
  Reading r;
  const auto& map = ex.features().feature();
  auto kind_is = [&](const char* name, proto::Feature::KindCase kind) {
    auto it = map.find(name);
    return it == map.end() || it->second.kind_case() == kind ||
           it->second.kind_case() == proto::Feature::KIND_NOT_SET;
  };
  if (!kind_is("a", proto::Feature::kFloatList) || !kind_is("b", proto::Feature::kInt64List) ||
      !kind_is("c", proto::Feature::kBytesList)) {
    return Failed(ErrorCode::kInvalidArgument);
  }
  if (map.count("a"))
    r.a.assign(map.at("a").float_list().value().begin(), map.at("a").float_list().value().end());
  if (map.count("b"))
    r.b.assign(map.at("b").int64_list().value().begin(), map.at("b").int64_list().value().end());
  if (map.count("c"))
    r.c.assign(map.at("c").bytes_list().value().begin(), map.at("c").bytes_list().value().end());
  return r;
}

Reading LoomReading(const std::string& record) {
  Reading r;
  try {
    ParsedFeatures out = ParseExample(record, AbcSpec());
    r.a = Values<float>(out["a"].values);
    r.b = Values<int64_t>(out["b"].values);
    r.c = Values<std::string>(out["c"].values);
  } catch (const Error& e) {
    return Failed(e.code());
  }
  return r;
}

// Wire-format pieces for hand-made records.
std::string Varint(uint64_t v) {
  std::string out;
  do {
    out.push_back(static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string Field(int number, const std::string& payload) {  // length-delimited
  return Varint(static_cast<uint64_t>(number) << 3 | 2) + Varint(payload.size()) + payload;
}
std::string Fixed32(float f) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &f, 4);
  return out;
}
std::string Entry(const std::string& key, const std::string& feature) {
  return Field(1, Field(1, key) + Field(2, feature));
}
std::string Record(const std::string& entries) { return Field(1, entries); }
std::string FloatList(const std::string& packed) { return Field(2, Field(1, packed)); }
std::string Int64List(const std::string& packed) { return Field(3, Field(1, packed)); }
std::string BytesList(const std::vector<std::string>& values) {
  std::string list;
  for (const auto& v : values) list += Field(1, v);
  return Field(1, list);
}

std::vector<std::string> UnusualRecords() {
  const std::string floats = Fixed32(1.5f) + Fixed32(-2);
  return {
      // The form Loom, TF and Beam write, features in any order, value before key.
      ExampleBuilder()
          .AddFloats("a", {1, 2})
          .AddInt64s("b", {-1, 1LL << 62})
          .AddBytes("c", {"x", ""})
          .Serialize(),
      Record(Entry("c", BytesList({"p"})) + Entry("a", FloatList(floats))),
      Record(Field(1, Field(2, Int64List(Varint(5))) + Field(1, "b"))),
      // Unpacked numeric lists (tag 0x15 fixed32, 0x08 varint) and split packed lists.
      Record(Entry("a", Field(2, "\x15" + Fixed32(3) + "\x15" + Fixed32(4)))),
      Record(Entry("b", Field(3, "\x08" + Varint(7) + "\x08" + Varint(8)))),
      Record(Entry("a", Field(2, Field(1, Fixed32(1)) + Field(1, Fixed32(2))))),
      // A Feature holding two lists: the same kind merges, another kind replaces.
      Record(Entry("a", FloatList(Fixed32(1)) + FloatList(Fixed32(2)))),
      Record(Entry("a", FloatList(Fixed32(1)) + Int64List(Varint(3)))),
      Record(Entry("b", FloatList(Fixed32(1)) + Int64List(Varint(3)))),
      // A key twice (the last wins), the features field twice (merged).
      Record(Entry("b", Int64List(Varint(1))) + Entry("b", Int64List(Varint(2)))),
      Record(Entry("zz", Int64List(Varint(1))) + Entry("zz", FloatList(floats))),
      Record(Entry("a", FloatList(floats))) + Record(Entry("b", Int64List(Varint(9)))),
      // Unknown fields at each level, a map entry without key or value.
      Record(Entry("b", Int64List(Varint(1)))) + "\x10\x05",
      Record(Entry("b", Int64List(Varint(1))) + "\x18\x01"),
      Record(Field(1, Field(1, "b") + Field(2, Int64List(Varint(1))) + "\x1d" + Fixed32(0))),
      Record(Entry("b", Field(3, Field(1, Varint(1)) + Field(2, "zz")))),
      Record(Field(1, Field(2, Int64List(Varint(1))))),
      Record(Field(1, Field(1, "a"))),
      // Keys beyond ASCII: valid UTF-8 reads, invalid UTF-8 is rejected by proto3.
      Record(Entry("\xc3\xa9", Int64List(Varint(1))) + Entry("b", Int64List(Varint(2)))),
      Record(Entry("\xff", Int64List(Varint(1))) + Entry("b", Int64List(Varint(2)))),
      // Ten-byte varints, a bad packed length, truncation, wire types protobuf rejects.
      Record(Entry("b", Int64List(Varint(~0ULL) + Varint(1ULL << 63)))),
      Record(Entry("b", Int64List(std::string(9, '\xff') + "\x7f"))),
      Record(Entry("a", FloatList("\x01\x02\x03"))),
      Record(Entry("a", FloatList(floats))).substr(0, 9),
      Record(Entry("b", Int64List("\x80"))),
      Record(Entry("b", Int64List(Varint(1)))) + "\x0f",
      std::string("\x00\x01", 2),
      "",
      Record(""),
  };
}

TEST(ParseExampleWireTest, UnusualEncodingsReadAsLibprotobufReadsThem) {
  const auto records = UnusualRecords();
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(LoomReading(records[i]), ProtobufReading(records[i])) << "record " << i;
  }
  // Spot checks that the reference itself reads protobuf's rules.
  EXPECT_EQ(ProtobufReading(records[9]).b, std::vector<int64_t>{2});
  EXPECT_EQ(ProtobufReading(records[6]).a, (std::vector<float>{1, 2}));
  EXPECT_EQ(ProtobufReading(records[19]).error, ErrorCode::kDataLoss);
}

TEST(ParseExampleWireTest, DamagedRecordsReadAsLibprotobufReadsThem) {
  // Every record above with one byte changed, one byte dropped, or cut short.
  std::mt19937 rng(3);
  int checked = 0;
  for (const std::string& base : UnusualRecords()) {
    for (int round = 0; round < 200 && !base.empty(); ++round) {
      std::string r = base;
      const size_t at = rng() % r.size();
      switch (round % 3) {
        case 0:
          r[at] = static_cast<char>(rng());
          break;
        case 1:
          r.erase(at, 1);
          break;
        default:
          r.resize(at);
          break;
      }
      ASSERT_EQ(LoomReading(r), ProtobufReading(r))
          << "base " << checked << " round " << round << " bytes " << ::testing::PrintToString(r);
    }
    ++checked;
  }
}

TEST(ParseExampleWireTest, BatchMixesDecodedAndLibprotobufRecords) {
  const auto records = UnusualRecords();
  std::vector<std::string> batch = {records[0], records[3], records[9], records[1]};
  ParsedFeatures out = ParseExampleBatch(batch, AbcSpec());
  std::vector<float> a;
  std::vector<int64_t> splits = {0};
  for (const auto& r : batch) {
    Reading want = ProtobufReading(r);
    a.insert(a.end(), want.a.begin(), want.a.end());
    splits.push_back(static_cast<int64_t>(a.size()));
  }
  EXPECT_EQ(Values<float>(out["a"].values), a);
  EXPECT_EQ(Values<int64_t>(out["a"].row_splits), splits);
}

}  // namespace
}  // namespace loom
