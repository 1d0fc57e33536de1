#include "loom/io/idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "loom/base/error.h"

namespace loom {
namespace {

std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = data.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Header(unsigned char type, std::vector<uint32_t> dims) {
  std::string out = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((d >> s) & 0xFF);
  return out;
}

std::string DataLossMessage(Env* env, const std::string& path) {
  try {
    ReadIdx(env, path);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    EXPECT_NE(e.message().find(path), std::string::npos) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected DataLoss";
  return "";
}

TEST(IdxTest, ReadsPlainAndGzippedUint8) {
  auto env = NewMemEnv();
  std::string file = Header(0x08, {2, 2, 3});
  for (int i = 0; i < 12; ++i) file += static_cast<char>(i * 20);
  WriteFileAtomically(env.get(), "images-idx3-ubyte", file);
  WriteFileAtomically(env.get(), "images-idx3-ubyte.gz", Gzip(file));
  for (const std::string path : {"images-idx3-ubyte", "images-idx3-ubyte.gz"}) {
    SCOPED_TRACE(path);
    const Tensor t = ReadIdx(env.get(), path);
    EXPECT_EQ(t.dtype(), kUInt8);
    EXPECT_EQ(t.shape(), (Shape{2, 2, 3}));
    EXPECT_EQ(t.flat<uint8_t>()[11], 220);
  }
}

TEST(IdxTest, RoundTripsWiderTypesBigEndian) {
  auto env = NewMemEnv();
  const Tensor i = Tensor::FromVector<int32_t>({-1, 70000, 3}, Shape{3, 1});
  const Tensor f = Tensor::FromVector<float>({1.5f, -2.25f});
  const Tensor d = Tensor::FromVector<double>({1e-300});
  for (const Tensor& t : {i, f, d}) {
    WriteIdx(env.get(), "t.idx", t);
    EXPECT_TRUE(ReadIdx(env.get(), "t.idx").Equals(t)) << t.DebugString();
    WriteFileAtomically(env.get(), "t.idx.gz", Gzip(ReadFileToString(env.get(), "t.idx")));
    EXPECT_TRUE(ReadIdx(env.get(), "t.idx.gz").Equals(t)) << t.DebugString();
  }
  // int16 / int8 widen to int32.
  std::string i16 = Header(0x0B, {2}) + std::string("\xFF\xFE\x00\x05", 4);
  WriteFileAtomically(env.get(), "i16", i16);
  EXPECT_TRUE(ReadIdx(env.get(), "i16").Equals(Tensor::FromVector<int32_t>({-2, 5})));
  WriteFileAtomically(env.get(), "i8", Header(0x09, {1}) + "\xF0");
  EXPECT_TRUE(ReadIdx(env.get(), "i8").Equals(Tensor::FromVector<int32_t>({-16})));
}

TEST(IdxTest, CorruptFilesAreDataLoss) {
  auto env = NewMemEnv();
  auto check = [&](const std::string& contents, const std::string& needle) {
    WriteFileAtomically(env.get(), "bad", contents);
    EXPECT_NE(DataLossMessage(env.get(), "bad").find(needle), std::string::npos) << needle;
    WriteFileAtomically(env.get(), "bad.gz", Gzip(contents));
    DataLossMessage(env.get(), "bad.gz");
  };
  check("", "magic");
  check("\x01\x02\x08\x01", "two zero bytes");
  check(Header(0x07, {1}) + "x", "element type");
  check(Header(0x08, {3, 3}).substr(0, 6), "dimensions");
  check(Header(0x08, {3, 3}) + "12345678", "truncated");
  check(Header(0x08, {2}) + "123", "trailing");
  // A huge length field is refused before any allocation.
  check(Header(0x08, {60000, 60000, 60000}) + "abc", "60000");
  WriteFileAtomically(env.get(), "garbage.gz", std::string("\x1f\x8b", 2) + "garbage data here");
  DataLossMessage(env.get(), "garbage.gz");
}

TEST(IdxTest, FashionMnistIfInstalled) {
  const std::string path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  if (!Env::Default()->FileExists(path)) GTEST_SKIP() << path << " is absent";
  const Tensor images = ReadIdx(Env::Default(), path);
  EXPECT_EQ(images.dtype(), kUInt8);
  EXPECT_EQ(images.shape(), (Shape{60000, 28, 28}));
  const Tensor labels =
      ReadIdx(Env::Default(), "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.shape(), (Shape{60000}));
  for (uint8_t l : labels.flat<uint8_t>()) ASSERT_LT(l, 10);
}

}  // namespace
}  // namespace loom
