#include "loom/io/safetensors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "loom/base/error.h"
#include "loom/base/fault_injection_env.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

const std::string kTestdata = LOOM_SHARED_TESTDATA;

// Every sample file from the reference implementation holds [-3, -2, -1, 0, 1, 2] in its
// dtype (unsigned types wrap), so that is what each tensor must read as.
double ExpectedValue(const std::string& dtype, int i) {
  const double v = i - 3;
  if (v >= 0) return v;
  if (dtype == "U8") return v + 256;
  if (dtype == "U16") return v + 65536;
  if (dtype == "U32") return v + 4294967296.0;
  return v;
}

TEST(SafetensorsTest, ReadsEveryReferenceSampleAsExpected) {
  const std::string expected_path = kTestdata + "/expected.json";
  std::ifstream in(expected_path);
  ASSERT_TRUE(in) << "test data absent: " << expected_path;
  const nlohmann::json expected = nlohmann::json::parse(in);
  int files = 0;
  for (const auto& [key, info] : expected.items()) {
    if (!key.starts_with("safetensors/")) continue;
    ++files;
    SCOPED_TRACE(key);
    const std::string path = kTestdata + "/" + key;
    const SafetensorsIndex index = ReadSafetensorsIndex(Env::Default(), path);
    EXPECT_EQ(index.file_size, info["file_size"].get<uint64_t>());
    EXPECT_EQ(index.header_length, info["header_len"].get<uint64_t>());
    auto reader = SafetensorsReader::Open(Env::Default(), path);
    int tensors = 0;
    for (const auto& item : info["header"].items()) {
      // Named references, not a structured binding: clang 14 rejects lambdas that
      // capture a structured binding (the sanitizer builds use clang).
      const std::string& name = item.key();
      const nlohmann::json& entry = item.value();
      if (name == "__metadata__") {
        for (const auto& [k, v] : entry.items()) EXPECT_EQ(reader->metadata().at(k), v);
        continue;
      }
      ++tensors;
      SCOPED_TRACE(name);
      const std::string dtype = entry["dtype"];
      const auto it = std::find_if(index.tensors.begin(), index.tensors.end(),
                                   [&](const auto& t) { return t.name == name; });
      ASSERT_NE(it, index.tensors.end());
      EXPECT_EQ(it->dtype, dtype);
      EXPECT_EQ(it->begin, entry["data_offsets"][0].get<uint64_t>());
      EXPECT_EQ(it->end, entry["data_offsets"][1].get<uint64_t>());
      const Tensor t = reader->Get(name);
      EXPECT_EQ(t.shape(), Shape(entry["shape"].get<std::vector<int64_t>>()));
      SwitchNumeric(t.dtype(), "test", [&](auto tag) {
        using T = decltype(tag);
        auto values = t.flat<T>();
        for (size_t i = 0; i < values.size(); ++i) {
          EXPECT_EQ(static_cast<double>(values[i]), ExpectedValue(dtype, i)) << i;
        }
        return 0;
      });
    }
    EXPECT_EQ(reader->names().size(), static_cast<size_t>(tensors));
  }
  EXPECT_EQ(files, 10);
}

TEST(SafetensorsTest, SampleDtypesMapToLoomDtypes) {
  const std::string path = kTestdata + "/safetensors/overall.safetensors";
  ASSERT_TRUE(Env::Default()->FileExists(path)) << "test data absent: " << path;
  auto all = ReadSafetensors(Env::Default(), path);
  EXPECT_EQ(all.at("B").dtype(), kUInt8);
  EXPECT_EQ(all.at("b").dtype(), kInt32);
  EXPECT_EQ(all.at("h").dtype(), kInt32);
  EXPECT_EQ(all.at("H").dtype(), kInt32);
  EXPECT_EQ(all.at("i").dtype(), kInt32);
  EXPECT_EQ(all.at("I").dtype(), kInt64);
  EXPECT_EQ(all.at("e").dtype(), kFloat32);
  EXPECT_EQ(all.at("f").dtype(), kFloat32);
  EXPECT_EQ(all.at("d").dtype(), kFloat64);
  // Without conversion the narrow types are refused with a clear message.
  SafetensorsReadOptions strict;
  strict.convert_unsupported_dtypes = false;
  auto reader = SafetensorsReader::Open(Env::Default(), path, strict);
  EXPECT_NE(ErrorOf([&] { reader->Get("e"); }, ErrorCode::kUnimplemented).find("F16"),
            std::string::npos);
  EXPECT_EQ(reader->Get("f").dtype(), kFloat32);
}

TEST(SafetensorsTest, RoundTripIsZeroCopyAndPadded) {
  auto env = NewMemEnv();
  const Tensor w = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const Tensor step = Tensor::Scalar<int64_t>(42);
  const Tensor mask = Tensor::FromVector<bool>({true, false, true});
  const Tensor bytes = Tensor::FromVector<uint8_t>({1, 2, 3});
  const Tensor d = Tensor::FromVector<double>({0.5});
  const Tensor empty(kInt32, Shape{0, 4});
  WriteSafetensors(env.get(), "ckpt.safetensors",
                   {{"dense/w", w},
                    {"global_step", step},
                    {"mask", mask},
                    {"bytes", bytes},
                    {"d", d},
                    {"empty", empty}},
                   {{"format", "loom"}});
  const std::string raw = ReadFileToString(env.get(), "ckpt.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(raw.substr(8, 15), "{\"__metadata__\"");
  EXPECT_EQ(raw[8 + n - 1] == ' ' || raw[8 + n - 1] == '}', true);

  auto reader = SafetensorsReader::Open(env.get(), "ckpt.safetensors");
  EXPECT_EQ(reader->metadata().at("format"), "loom");
  // Data order: 8-byte dtypes, then 4-byte, then 1-byte, each in the given order.
  EXPECT_EQ(reader->names(),
            (std::vector<std::string>{"global_step", "d", "dense/w", "empty", "mask", "bytes"}));
  EXPECT_TRUE(reader->Get("dense/w").Equals(w));
  EXPECT_TRUE(reader->Get("global_step").Equals(step));
  EXPECT_TRUE(reader->Get("mask").Equals(mask));
  EXPECT_TRUE(reader->Get("bytes").Equals(bytes));
  EXPECT_TRUE(reader->Get("d").Equals(d));
  EXPECT_TRUE(reader->Get("empty").Equals(empty));
  // Aligned numeric tensors are views into the mapping, which outlives the reader.
  Tensor view = reader->Get("dense/w");
  EXPECT_FALSE(view.buffer()->owned());
  EXPECT_TRUE(view.SharesBufferWith(reader->Get("global_step")));
  reader.reset();
  EXPECT_EQ(view.flat<float>()[5], 6.0f);
  EXPECT_NE(ErrorOf([&] { SafetensorsReader::Open(env.get(), "ckpt.safetensors")->Get("nope"); },
                    ErrorCode::kNotFound)
                .find("nope"),
            std::string::npos);
}

TEST(SafetensorsTest, PosixRoundTripMapsTheFile) {
  char tmpl[] = "/tmp/loom_st_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = JoinPath(tmpl, "a.safetensors");
  Tensor big(kFloat32, Shape{1000, 100});
  for (int64_t i = 0; i < big.NumElements(); ++i) big.data<float>()[i] = i * 0.5f;
  WriteSafetensors(Env::Default(), path, {{"big", big}});
  EXPECT_EQ(Env::Default()->GetChildren(tmpl), std::vector<std::string>{"a.safetensors"});
  Tensor read = ReadSafetensors(Env::Default(), path).at("big");
  EXPECT_TRUE(read.Equals(big));
  EXPECT_FALSE(read.buffer()->owned());
  Env::Default()->DeleteRecursively(tmpl);
  EXPECT_EQ(read.flat<float>()[99999], 99999 * 0.5f);  // mapping outlives the file
}

TEST(SafetensorsTest, WriterRejectsBadInput) {
  auto env = NewMemEnv();
  const Tensor t = Tensor::Scalar<float>(1);
  EXPECT_THROW(WriteSafetensors(env.get(), "x", {{"a", t}, {"a", t}}), Error);
  EXPECT_THROW(WriteSafetensors(env.get(), "x", {{"__metadata__", t}}), Error);
  EXPECT_THROW(WriteSafetensors(env.get(), "x", {{"s", Tensor::ScalarString("no")}}), Error);
  EXPECT_FALSE(env->FileExists("x"));
}

TEST(SafetensorsTest, CrashSafeWriteKeepsTheOldFileOnFailure) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  const Tensor old_value = Tensor::FromVector<float>({1, 2});
  WriteSafetensors(&env, "dir/m.safetensors", {{"w", old_value}});
  env.FailNthAppend(3, /*short_write=*/true);  // tear the tensor bytes
  EXPECT_THROW(
      WriteSafetensors(&env, "dir/m.safetensors", {{"w", Tensor::FromVector<float>({3, 4})}}),
      Error);
  EXPECT_TRUE(ReadSafetensors(&env, "dir/m.safetensors").at("w").Equals(old_value));
  EXPECT_EQ(env.GetChildren("dir"), std::vector<std::string>{"m.safetensors"});
  env.ClearFaults();
  env.SetFreeSpace(10);
  EXPECT_THROW(WriteSafetensors(&env, "dir/m.safetensors", {{"w", old_value}}), Error);
  EXPECT_TRUE(ReadSafetensors(&env, "dir/m.safetensors").at("w").Equals(old_value));
}

// Builds a file from a header string and data bytes.
std::string MakeFile(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xFF);
  return out + header + data;
}

TEST(SafetensorsTest, CorruptFilesAreDataLossNamingFileAndTensor) {
  auto env = NewMemEnv();
  auto expect_data_loss = [&](const std::string& contents, const std::string& needle) {
    WriteFileAtomically(env.get(), "bad.safetensors", contents);
    const std::string msg = ErrorOf([&] { SafetensorsReader::Open(env.get(), "bad.safetensors"); },
                                    ErrorCode::kDataLoss);
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    ErrorOf([&] { ReadSafetensorsIndex(env.get(), "bad.safetensors"); }, ErrorCode::kDataLoss);
  };
  expect_data_loss("abc", "fewer than the 8-byte");
  expect_data_loss(MakeFile("{}", "").substr(0, 9), "exceeds the file size");
  expect_data_loss(MakeFile("{not json", ""), "not valid JSON");
  expect_data_loss(MakeFile("[]", ""), "not a JSON object");
  const std::string w = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  expect_data_loss(MakeFile(w, std::string(4, 'x')), "tensor 'w' ends at byte");
  expect_data_loss(MakeFile(w, std::string(12, 'x')), "trailing bytes");
  expect_data_loss(
      MakeFile(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 'x')),
      "tensor 'w' has shape [3]");
  expect_data_loss(
      MakeFile(R"({"w":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", std::string(8, 'x')),
      "unknown dtype");
  expect_data_loss(MakeFile(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                            std::string(6, 'x')),
                   "overlap");
  expect_data_loss(
      MakeFile(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", std::string(4, 'x')),
      "a gap");
  expect_data_loss(
      MakeFile(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,8]}})", std::string(8, 'x')),
      "invalid dimension");
  expect_data_loss(
      MakeFile(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
               std::string(8, 'x')),
      "'w'");
  expect_data_loss(MakeFile(R"({"__metadata__":{"a":1}})", ""), "__metadata__");
}

// JSON parsers keep the last of two equal keys; a header naming a tensor twice is corrupt.
TEST(SafetensorsTest, DuplicateTensorNameIsDataLoss) {
  auto env = NewMemEnv();
  WriteFileAtomically(env.get(), "dup.safetensors",
                      MakeFile(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                               R"("w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                               std::string(2, 'x')));
  const std::string msg =
      ErrorOf([&] { ReadSafetensorsIndex(env.get(), "dup.safetensors"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("names 'w' more than once"), std::string::npos) << msg;
  ErrorOf([&] { SafetensorsReader::Open(env.get(), "dup.safetensors"); }, ErrorCode::kDataLoss);
  // The same name inside a tensor's entry or the metadata is not a duplicate tensor.
  WriteFileAtomically(
      env.get(), "ok.safetensors",
      MakeFile(R"({"__metadata__":{"w":"1"},"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
               std::string(2, 'x')));
  EXPECT_EQ(ReadSafetensorsIndex(env.get(), "ok.safetensors").tensors.size(), 1u);
}

TEST(SafetensorsTest, UnsupportedFileDtypeIsUnimplemented) {
  auto env = NewMemEnv();
  WriteFileAtomically(
      env.get(), "u64.safetensors",
      MakeFile(R"({"w":{"dtype":"U64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')));
  auto reader = SafetensorsReader::Open(env.get(), "u64.safetensors");
  const std::string msg = ErrorOf([&] { reader->Get("w"); }, ErrorCode::kUnimplemented);
  EXPECT_NE(msg.find("U64"), std::string::npos);
}

// Every tensor Loom writes starts at a multiple of its element size, so each reads back as
// a view of the mapping. Before, a U8[3] first put the F64 after it at data byte 3 and the
// reader had to copy it.
TEST(SafetensorsTest, WrittenTensorsAreAlignedForTheirType) {
  auto env = NewMemEnv();
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"u8", Tensor::FromVector<uint8_t>({1, 2, 3})},
      {"f64", Tensor::FromVector<double>({0.5, 1.5})},
      {"b", Tensor::FromVector<bool>({true})},
      {"f32", Tensor::FromVector<float>({1, 2, 3})},
      {"i64", Tensor::Scalar<int64_t>(-7)},
      {"i32", Tensor::FromVector<int32_t>({4, 5})}};
  WriteSafetensors(env.get(), "a.safetensors", tensors);
  const SafetensorsIndex index = ReadSafetensorsIndex(env.get(), "a.safetensors");
  EXPECT_EQ((8 + index.header_length) % 8, 0u);
  std::vector<std::string> order;
  for (const SafetensorsEntry& e : index.tensors) {
    order.push_back(e.name);
    const uint64_t element = e.dtype == "F64" || e.dtype == "I64"   ? 8
                             : e.dtype == "F32" || e.dtype == "I32" ? 4
                                                                    : 1;
    EXPECT_EQ(e.begin % element, 0u) << e.name << " at data byte " << e.begin;
  }
  EXPECT_EQ(order, (std::vector<std::string>{"f64", "i64", "f32", "i32", "u8", "b"}));
  auto reader = SafetensorsReader::Open(env.get(), "a.safetensors");
  for (const auto& [name, t] : tensors) {
    const Tensor read = reader->Get(name);
    EXPECT_TRUE(read.Equals(t)) << name;
    // BOOL bytes are always copied (normalized to 0/1); every other dtype is a view.
    if (t.dtype() != kBool) {
      EXPECT_FALSE(read.buffer()->owned()) << name << " was copied";
    }
  }
}

// The bytes of a small file, pinned: header length, padded JSON in data order, data.
TEST(SafetensorsTest, GoldenBytes) {
  auto env = NewMemEnv();
  WriteSafetensors(
      env.get(), "g.safetensors",
      {{"a", Tensor::FromVector<uint8_t>({1, 2, 3})}, {"b", Tensor::Scalar<int64_t>(258)}},
      {{"k", "v"}});
  const std::string json =
      R"({"__metadata__":{"k":"v"},"b":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  std::string expected(8, '\0');
  expected[0] = static_cast<char>(padded.size());
  expected += padded;
  expected += std::string("\x02\x01\0\0\0\0\0\0", 8);
  expected += std::string("\x01\x02\x03", 3);
  EXPECT_EQ(ReadFileToString(env.get(), "g.safetensors"), expected);
}

// A shape nested 10,000 levels deep (a 20 kB file) used to overflow the stack in the
// message's recursive dump(); the depth is now bounded before the JSON is parsed.
TEST(SafetensorsTest, DeeplyNestedHeaderIsDataLossNotStackOverflow) {
  auto env = NewMemEnv();
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  const std::string json = R"({"w":{"dtype":"U8","shape":[)" + deep + R"(],"data_offsets":[0,0]}})";
  WriteFileAtomically(env.get(), "deep.safetensors", MakeFile(json, ""));
  const std::string msg = ErrorOf([&] { SafetensorsReader::Open(env.get(), "deep.safetensors"); },
                                  ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("deeper than 16"), std::string::npos) << msg;
  // Brackets inside strings do not count; a shape dimension that is an array is named by
  // its type, not printed.
  const std::string in_string = R"({"__metadata__":{"x":")" + std::string(100, '[') +
                                R"("},"w":{"dtype":"U8","shape":[[[1]]],"data_offsets":[0,0]}})";
  WriteFileAtomically(env.get(), "s.safetensors", MakeFile(in_string, ""));
  const std::string msg2 =
      ErrorOf([&] { SafetensorsReader::Open(env.get(), "s.safetensors"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg2.find("invalid dimension array"), std::string::npos) << msg2;
}

}  // namespace
}  // namespace loom
