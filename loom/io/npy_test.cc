#include "loom/io/npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "loom/base/error.h"

namespace loom {
namespace {

const std::string kNpyTestdata = LOOM_SHARED_TESTDATA;

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == kBool) {
    for (bool b : t.flat<bool>()) out.push_back(b);
    return out;
  }
  SwitchNumeric(t.dtype(), "test", [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.flat<T>()) out.push_back(static_cast<double>(v));
    return 0;
  });
  return out;
}

TEST(NpyTest, ReadsEverySharedFileAsExpected) {
  const std::string expected_path = kNpyTestdata + "/expected.json";
  std::ifstream in(expected_path);
  ASSERT_TRUE(in) << "test data absent: " << expected_path;
  const nlohmann::json expected = nlohmann::json::parse(in);
  int files = 0;
  for (const auto& [key, info] : expected.items()) {
    if (!key.starts_with("npy/")) continue;
    ++files;
    SCOPED_TRACE(key);
    const std::string path = kNpyTestdata + "/" + key;
    const NpyHeader header = ReadNpyHeader(Env::Default(), path);
    EXPECT_EQ(header.descr, info["dtype"].get<std::string>());
    EXPECT_EQ(header.fortran_order, info["fortran_order"].get<bool>());
    const Tensor t = ReadNpy(Env::Default(), path);
    EXPECT_EQ(t.shape(), Shape(info["shape"].get<std::vector<int64_t>>()));
    // expected.json lists a Fortran-ordered file's first values in file (column-major)
    // order; Loom returns C order, so compare against the column-major walk.
    std::vector<double> values = AsDoubles(t);
    if (header.fortran_order && t.rank() == 2) {
      std::vector<double> column_major;
      for (int64_t j = 0; j < t.dim(1); ++j)
        for (int64_t i = 0; i < t.dim(0); ++i) column_major.push_back(values[i * t.dim(1) + j]);
      values = column_major;
    }
    const auto& first = info["first_values"];
    ASSERT_GE(values.size(), first.size());
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ(values[i],
                first[i].is_boolean() ? double(first[i].get<bool>()) : first[i].get<double>())
          << "element " << i;
    }
    double sum = 0;
    for (double v : values) sum += v;
    const double want = info["sum"].get<double>();
    EXPECT_NEAR(sum, want, 1e-9 * std::max(1.0, std::abs(want)));
  }
  EXPECT_EQ(files, 15);
}

TEST(NpyTest, SharedFilesDtypesAndLayouts) {
  const std::string dir = kNpyTestdata + "/npy/generated_by_debian_numpy_1.24.2/";
  ASSERT_TRUE(Env::Default()->IsDirectory(dir)) << "test data absent: " << dir;
  Env* env = Env::Default();
  const Tensor c = ReadNpy(env, dir + "f32_c_2x3.npy");
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_FALSE(c.buffer()->owned());  // zero-copy view of the mapping
  const Tensor f = ReadNpy(env, dir + "f64_fortran_3x2.npy");
  EXPECT_TRUE(f.buffer()->owned());
  EXPECT_TRUE(f.Equals(Tensor::FromVector<double>({0, 1, 2, 3, 4, 5}, Shape{3, 2})))
      << f.DebugString();
  const Tensor be = ReadNpy(env, dir + "i32_bigendian_4.npy");
  EXPECT_TRUE(be.Equals(Tensor::FromVector<int32_t>({0, 1, 2, 3})));
  EXPECT_EQ(ReadNpy(env, dir + "f16_4.npy").dtype(), kFloat32);
  EXPECT_EQ(ReadNpy(env, dir + "bool_5.npy").dtype(), kBool);
  EXPECT_EQ(ReadNpy(env, dir + "i64_scalar_0d.npy").scalar<int64_t>(), 42);
  EXPECT_EQ(ReadNpyHeader(env, dir + "f32_v2_header.npy").major_version, 2);
  EXPECT_EQ(ReadNpyHeader(env, dir + "f32_v3_header.npy").major_version, 3);
  NpyReadOptions strict;
  strict.convert_unsupported_dtypes = false;
  EXPECT_THROW(ReadNpy(env, dir + "f16_4.npy", strict), Error);
}

TEST(NpyTest, RoundTripEveryDtype) {
  auto env = NewMemEnv();
  const std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2, 3, 4, 5, 6}, Shape{2, 3}),
      Tensor::FromVector<double>({1e300, -0.0}),
      Tensor::FromVector<int32_t>({-1, 2, 3}, Shape{3, 1}),
      Tensor::FromVector<int64_t>({int64_t{1} << 40}, Shape{}),
      Tensor::FromVector<uint8_t>({0, 255}),
      Tensor::FromVector<bool>({true, false, true}),
      Tensor(kFloat32, Shape{0, 3}),
  };
  for (const Tensor& t : tensors) {
    SCOPED_TRACE(t.DebugString());
    WriteNpy(env.get(), "a.npy", t);
    const std::string raw = ReadFileToString(env.get(), "a.npy");
    const NpyHeader header = ReadNpyHeader(env.get(), "a.npy");
    EXPECT_EQ(header.major_version, 1);
    EXPECT_EQ(header.data_offset % 64, 0u);
    EXPECT_EQ(raw[header.data_offset - 1], '\n');
    EXPECT_TRUE(ReadNpy(env.get(), "a.npy").Equals(t));
  }
  EXPECT_EQ(EncodeNpyHeader(kFloat32, Shape{3})
                .find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"),
            10u);
  EXPECT_NE(EncodeNpyHeader(kInt64, Shape{}).find("'shape': ()"), std::string::npos);
  EXPECT_NE(EncodeNpyHeader(kUInt8, Shape{2, 3}).find("'shape': (2, 3)"), std::string::npos);
  EXPECT_THROW(WriteNpy(env.get(), "s.npy", Tensor::ScalarString("x")), Error);
}

// numpy loads at most 32 dimensions: WriteNpy writes rank 32 and refuses rank 33 and 40
// (it used to write a file numpy cannot load).
TEST(NpyTest, WriteRejectsRanksNumpyCannotLoad) {
  auto env = NewMemEnv();
  const Tensor rank32 = Tensor::FromVector<uint8_t>({7}, Shape(std::vector<int64_t>(32, 1)));
  WriteNpy(env.get(), "r32.npy", rank32);
  const Tensor t = ReadNpy(env.get(), "r32.npy");
  EXPECT_EQ(t.rank(), 32);
  EXPECT_EQ(t.flat<uint8_t>()[0], 7);
  for (int rank : {33, 40}) {
    const Tensor big = Tensor::FromVector<uint8_t>({7}, Shape(std::vector<int64_t>(rank, 1)));
    try {
      WriteNpy(env.get(), "big.npy", big);
      ADD_FAILURE() << "rank " << rank << " was written";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("at most 32"), std::string::npos) << e.message();
    }
    EXPECT_FALSE(env->FileExists("big.npy"));
  }
}

// A v1 file from a header dict and data bytes.
std::string MakeNpy(const std::string& dict, const std::string& data) {
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + data;
}

TEST(NpyTest, BadFilesGiveClearErrors) {
  auto env = NewMemEnv();
  auto expect = [&](const std::string& contents, ErrorCode code, const std::string& needle) {
    WriteFileAtomically(env.get(), "bad.npy", contents);
    try {
      ReadNpy(env.get(), "bad.npy");
      ADD_FAILURE() << "expected an error for " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(e.message().find("bad.npy"), std::string::npos) << e.what();
      EXPECT_NE(e.message().find(needle), std::string::npos) << e.what();
    }
  };
  expect("not numpy at all", ErrorCode::kDataLoss, "magic");
  expect(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", "12345678"),
         ErrorCode::kDataLoss, "truncated");
  expect(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n", "123456789"),
         ErrorCode::kDataLoss, "trailing");
  expect(MakeNpy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n", "12345678"),
         ErrorCode::kUnimplemented, "Python objects");
  expect(MakeNpy("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }\n", "123456789012"),
         ErrorCode::kUnimplemented, "strings");
  expect(MakeNpy("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }\n", "12345678"),
         ErrorCode::kUnimplemented, "<u8");
  expect(MakeNpy("{'descr': '<f4', 'fortran_order': False}", ""), ErrorCode::kDataLoss, "'shape'");
  expect(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,", ""), ErrorCode::kDataLoss,
         "malformed header");
  expect(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, "
                 "99999999999, 99999999999), }",
                 "1234"),
         ErrorCode::kDataLoss, "99999999999");
  std::string v9 = MakeNpy("{}", "");
  v9[6] = 9;
  expect(v9, ErrorCode::kUnimplemented, "version 9");
}

TEST(NpyTest, LegacyLongShapeAndStructuredDtype) {
  auto env = NewMemEnv();
  WriteFileAtomically(env.get(), "l.npy",
                      MakeNpy("{'descr': '<i2', 'fortran_order': True, 'shape': (2L, 2L), }",
                              std::string("\x01\x00\x02\x00\x03\x00\x04\x00", 8)));
  const Tensor t = ReadNpy(env.get(), "l.npy");
  EXPECT_TRUE(t.Equals(Tensor::FromVector<int32_t>({1, 3, 2, 4}, Shape{2, 2}))) << t.DebugString();
  WriteFileAtomically(
      env.get(), "s.npy",
      MakeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "1234"));
  EXPECT_THROW(ReadNpy(env.get(), "s.npy"), Error);
}

}  // namespace
}  // namespace loom
