// TF V2 checkpoints: the two real bundles in the shared test data (written by TF 1.14 and
// TF 2.9) against expected_tf.json; bundles written here with LevelDB's own TableBuilder
// for what the real files lack (several shards, every dtype, strings, partitioned
// variables, many blocks and restarts); damage of every kind.
#include "loom/io/tf_checkpoint.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"
#include "loom/io/proto/tensor_bundle.pb.h"
#include "loom/io/sstable.h"
#include "loom/io/tf_checkpoint_test_util.h"

namespace loom {
namespace {

using nlohmann::json;

// ---- SHA-256 (FIPS 180-4), to compare tensor bytes with expected_tf.json ----------------
std::string Sha256Hex(const void* data, size_t n) {
  static constexpr uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::string msg(static_cast<const char*>(data), n);
  msg += '\x80';
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 7; i >= 0; --i) msg += static_cast<char>((uint64_t{n} * 8) >> (8 * i));
  auto rotr = [](uint32_t x, int r) { return (x >> r) | (x << (32 - r)); };
  for (size_t off = 0; off < msg.size(); off += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const uint8_t*>(msg.data() + off + 4 * i);
      w[i] = uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
    }
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t t1 =
          hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    const uint32_t add[8] = {a, b, c, d, e, f, g, hh};
    for (int i = 0; i < 8; ++i) h[i] += add[i];
  }
  std::string hex;
  char buf[9];
  for (uint32_t v : h) {
    std::snprintf(buf, sizeof(buf), "%08x", v);
    hex += buf;
  }
  return hex;
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// ---- the real checkpoints ----------------------------------------------------------------

std::string TfRoot() { return JoinPath(LOOM_SHARED_TESTDATA, "tf"); }

json ExpectedTf() {
  const std::string path = JoinPath(TfRoot(), "expected_tf.json");
  // Fails, not skips: these files are part of the suite.
  if (!Env::Default()->FileExists(path)) {
    ADD_FAILURE() << "missing " << path << " (the TF test files; see testdata/SOURCES.md)";
    return json::object();
  }
  return json::parse(ReadFileToString(Env::Default(), path));
}

double SumAsDouble(const Tensor& t) {
  // Neumaier summation: close to math.fsum for these sizes.
  double sum = 0, carry = 0;
  auto add = [&](double x) {
    const double s = sum + x;
    carry += std::abs(sum) >= std::abs(x) ? (sum - s) + x : (x - s) + sum;
    sum = s;
  };
  SwitchNumeric(t.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    for (T v : t.flat<T>()) add(static_cast<double>(v));
  });
  return sum + carry;
}

std::string TfDTypeName(int tf_dtype) {
  switch (tf_dtype) {
    case 1:
      return "DT_FLOAT";
    case 2:
      return "DT_DOUBLE";
    case 3:
      return "DT_INT32";
    case 9:
      return "DT_INT64";
    default:
      return "DT_" + std::to_string(tf_dtype);
  }
}

TEST(TfCheckpointRealFilesTest, EveryTensorMatchesExpectedTf) {
  const json expected = ExpectedTf();
  ASSERT_TRUE(expected.contains("checkpoints"));
  ASSERT_EQ(expected["checkpoints"].size(), 2u);
  for (const auto& [prefix, want] : expected["checkpoints"].items()) {
    SCOPED_TRACE(prefix);
    auto reader = TfCheckpointReader::Open(Env::Default(), JoinPath(TfRoot(), prefix));
    EXPECT_EQ(reader->header().num_shards, want["num_shards"].get<int>());
    EXPECT_FALSE(reader->header().big_endian);
    EXPECT_EQ(reader->header().producer, want["bundle_version"]["producer"].get<int>());
    EXPECT_EQ(reader->header().min_consumer, want["bundle_version"]["min_consumer"].get<int>());
    ASSERT_EQ(reader->entries().size(), want["num_tensors"].get<size_t>());

    // The table's blocks and their compression (half_plus_two's data block is Snappy).
    const Sstable table =
        ReadSstable(Env::Default(), TfCheckpointIndexPath(JoinPath(TfRoot(), prefix)));
    ASSERT_EQ(table.blocks.size(), want["index_blocks"].size());
    for (size_t i = 0; i < table.blocks.size(); ++i) {
      EXPECT_EQ(table.blocks[i].role, want["index_blocks"][i]["block"].get<std::string>());
      EXPECT_EQ(table.blocks[i].snappy ? "snappy" : "none",
                want["index_blocks"][i]["compression"].get<std::string>());
    }

    for (const auto& [name, t] : want["tensors"].items()) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(reader->Contains(name));
      const TfCheckpointEntry& e = reader->Entry(name);
      EXPECT_EQ(TfDTypeName(e.tf_dtype), t["dtype"].get<std::string>());
      EXPECT_EQ(e.shape, Shape(t["shape"].get<std::vector<int64_t>>()));
      EXPECT_EQ(e.shard_id, t["shard"].get<int>());
      EXPECT_EQ(e.offset, t["offset"].get<uint64_t>());
      EXPECT_EQ(e.size, t["size"].get<uint64_t>());
      const Tensor value = reader->Get(name);
      EXPECT_EQ(value.dtype(), e.dtype);
      EXPECT_EQ(value.shape(), e.shape);
      EXPECT_EQ(Sha256Hex(value.raw_data(), value.TotalBytes()),
                t["bytes_sha256"].get<std::string>());
      const double want_sum = t["sum"].get<double>();
      EXPECT_NEAR(SumAsDouble(value), want_sum, 1e-9 * std::max(1.0, std::abs(want_sum)));
    }
  }
}

TEST(TfCheckpointRealFilesTest, ReadTfCheckpointAcceptsPrefixIndexAndDataPaths) {
  const std::string prefix = JoinPath(TfRoot(), "tfx_estimator_ckpt/model.ckpt-999");
  for (const std::string& path : {prefix, prefix + ".index", prefix + ".data-00000-of-00001"}) {
    EXPECT_TRUE(IsTfCheckpoint(Env::Default(), path)) << path;
    std::map<std::string, Tensor> all = ReadTfCheckpoint(Env::Default(), path);
    ASSERT_EQ(all.size(), 60u);
    EXPECT_EQ(all.at("global_step").dtype(), kInt64);
    EXPECT_EQ(all.at("global_step").scalar<int64_t>(), 999);
    EXPECT_EQ(all.at("dnn/hiddenlayer_0/kernel").shape(), Shape({3, 100}));
  }
  EXPECT_FALSE(IsTfCheckpoint(Env::Default(), JoinPath(TfRoot(), "tfx_estimator_ckpt")));
  EXPECT_EQ(TfCheckpointPrefix("a/model.ckpt-5.data-00001-of-00002"), "a/model.ckpt-5");
  EXPECT_EQ(TfCheckpointPrefix("a/model.ckpt-5"), "a/model.ckpt-5");
  EXPECT_EQ(TfCheckpointDataPath("p", 1, 12), "p.data-00001-of-00012");
}

TEST(TfCheckpointRealFilesTest, HalfPlusTwoValues) {
  auto reader = TfCheckpointReader::Open(
      Env::Default(), JoinPath(TfRoot(), "half_plus_two/00000123/variables/variables"));
  EXPECT_EQ(reader->names(), (std::vector<std::string>{"a", "a2", "b", "c", "c2"}));
  EXPECT_EQ(reader->Get("a").scalar<float>(), 0.5f);
  EXPECT_EQ(reader->Get("b").scalar<float>(), 2.0f);
  EXPECT_EQ(reader->Get("c2").scalar<float>(), 3.0f);
  try {
    reader->Get("w");
    FAIL() << "expected NotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(e.message().find("'w'"), std::string::npos) << e.message();
  }
}

// ---- damage ------------------------------------------------------------------------------

// Copies a real bundle into a memory Env under "ck/", as "ck/model.index" and data.
std::unique_ptr<Env> CopyToMemEnv(const std::string& prefix, int num_shards = 1) {
  auto env = NewMemEnv();
  env->CreateDirs("ck");
  auto copy = [&](const std::string& from, const std::string& to) {
    auto f = env->NewWritableFile(to);
    f->Append(ReadFileToString(Env::Default(), from));
    f->Close();
  };
  copy(TfCheckpointIndexPath(prefix), "ck/model.index");
  for (int s = 0; s < num_shards; ++s) {
    copy(TfCheckpointDataPath(prefix, s, num_shards),
         TfCheckpointDataPath("ck/model", s, num_shards));
  }
  return env;
}

// Runs fn, expects a loom::Error with `code` whose message contains every one of `parts`.
template <typename Fn>
void ExpectError(ErrorCode code, const std::vector<std::string>& parts, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << "expected " << ErrorCodeName(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(e.message().find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
    }
  }
}

TEST(TfCheckpointDamageTest, EveryFlippedIndexByteIsDataLossNamingTheIndex) {
  const std::string prefix = JoinPath(TfRoot(), "half_plus_two/00000123/variables/variables");
  auto env = CopyToMemEnv(prefix);
  const std::string index = ReadFileToString(env.get(), "ck/model.index");
  ASSERT_EQ(index.size(), 172u);
  for (size_t i = 0; i < index.size(); ++i) {
    SCOPED_TRACE("byte " + std::to_string(i));
    std::string bad = index;
    bad[i] ^= 0x20;
    tf_testing::Overwrite(env.get(), "ck/model.index", bad);
    ExpectError(ErrorCode::kDataLoss, {"ck/model.index"},
                [&] { TfCheckpointReader::Open(env.get(), "ck/model"); });
  }
}

// Random damage of every kind (flips, truncation, insertion, zeroed runs) to the 60-tensor
// index: always DataLoss, never a crash or a read out of bounds (the ASan build checks
// the latter), never a silently different table.
TEST(TfCheckpointDamageTest, RandomIndexDamageIsAlwaysDataLoss) {
  const std::string path =
      TfCheckpointIndexPath(JoinPath(TfRoot(), "tfx_estimator_ckpt/model.ckpt-999"));
  const std::string index = ReadFileToString(Env::Default(), path);
  std::mt19937 rng(12);
  auto uniform = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bad = index;
    switch (trial % 4) {
      case 0:
        for (size_t k = 0, n = 1 + uniform(4); k < n; ++k)
          bad[uniform(bad.size())] ^= 1 + uniform(255);
        break;
      case 1:
        bad.resize(uniform(bad.size()));
        break;
      case 2:
        bad.insert(uniform(bad.size()),
                   std::string(1 + uniform(8), static_cast<char>(uniform(256))));
        break;
      case 3: {
        const size_t at = uniform(bad.size());
        const size_t n = std::min(bad.size() - at, 1 + uniform(16));
        if (bad.compare(at, n, std::string(n, '\0')) == 0) continue;  // already zeros
        bad.replace(at, n, std::string(n, '\0'));
        break;
      }
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    try {
      ParseSstable(bad, "damaged.index");
      ADD_FAILURE() << "damage not detected";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      EXPECT_NE(e.message().find("damaged.index"), std::string::npos) << e.what();
    }
  }
}

TEST(TfCheckpointDamageTest, TruncatedIndexIsDataLoss) {
  const std::string prefix = JoinPath(TfRoot(), "tfx_estimator_ckpt/model.ckpt-999");
  auto env = CopyToMemEnv(prefix);
  const std::string index = ReadFileToString(env.get(), "ck/model.index");
  for (size_t keep : {size_t{0}, size_t{20}, index.size() / 2, index.size() - 1}) {
    SCOPED_TRACE(keep);
    tf_testing::Overwrite(env.get(), "ck/model.index", index.substr(0, keep));
    ExpectError(ErrorCode::kDataLoss, {"ck/model.index"},
                [&] { TfCheckpointReader::Open(env.get(), "ck/model"); });
  }
}

TEST(TfCheckpointDamageTest, FlippedDataByteIsDataLossNamingFileAndTensor) {
  const std::string prefix = JoinPath(TfRoot(), "half_plus_two/00000123/variables/variables");
  auto env = CopyToMemEnv(prefix);
  const std::string data_path = "ck/model.data-00000-of-00001";
  const std::string data = ReadFileToString(env.get(), data_path);
  const std::vector<std::string> owner = {"a", "a", "a", "a", "a2", "a2", "a2", "a2", "b",  "b",
                                          "b", "b", "c", "c", "c",  "c",  "c2", "c2", "c2", "c2"};
  ASSERT_EQ(data.size(), owner.size());
  for (size_t i = 0; i < data.size(); ++i) {
    SCOPED_TRACE("byte " + std::to_string(i));
    std::string bad = data;
    bad[i] ^= 0x01;
    tf_testing::Overwrite(env.get(), data_path, bad);
    auto reader = TfCheckpointReader::Open(env.get(), "ck/model");
    for (const std::string& name : reader->names()) {
      if (name == owner[i]) {
        ExpectError(ErrorCode::kDataLoss, {data_path, "'" + name + "'", "checksum"},
                    [&] { reader->Get(name); });
      } else {
        EXPECT_NO_THROW(reader->Get(name)) << name;
      }
    }
  }
}

TEST(TfCheckpointDamageTest, TruncatedOrMissingDataFile) {
  const std::string prefix = JoinPath(TfRoot(), "tfx_estimator_ckpt/model.ckpt-999");
  auto env = CopyToMemEnv(prefix);
  const std::string data_path = "ck/model.data-00000-of-00001";
  const std::string data = ReadFileToString(env.get(), data_path);
  tf_testing::Overwrite(env.get(), data_path, data.substr(0, 50000));
  auto reader = TfCheckpointReader::Open(env.get(), "ck/model");
  EXPECT_NO_THROW(reader->Get("dnn/hiddenlayer_0/bias"));  // bytes [0, 400)
  ExpectError(ErrorCode::kDataLoss, {data_path, "'global_step'", "truncated"},
              [&] { reader->Get("global_step"); });
  env->DeleteFile(data_path);
  ExpectError(ErrorCode::kNotFound, {data_path},
              [&] { TfCheckpointReader::Open(env.get(), "ck/model"); });
  ExpectError(ErrorCode::kNotFound, {"ck/other.index"},
              [&] { TfCheckpointReader::Open(env.get(), "ck/other"); });
}

// ---- bundles written here ------------------------------------------------------------------

// OrderedCode's documented examples (tensorflow/core/lib/strings/ordered_code.cc) and a
// slice key worked out by hand.
TEST(TfSliceKeyTest, MatchesOrderedCodeExamples) {
  // name "ab\0": escape 0 -> 00 ff; rank 2 -> 01 02; extents (0, 5) and (-0x800, 0x424242).
  const std::string key = TfSliceKey(std::string("ab\0", 3), {{0, 5}, {-0x800, 0x424242}});
  const std::string want(
      "\x00"
      "ab\x00\xff\x00\x01"
      "\x01\x02"
      "\x80\x85"
      "\x38\x00"
      "\xf0\x42\x42\x42",
      17);
  EXPECT_EQ(key, want);
  // A whole dimension is start 0, length -1: 0x80 and 0x7f.
  EXPECT_EQ(TfSliceKey("v", {{0, -1}}), std::string("\x00v\x00\x01\x01\x01\x80\x7f", 8));
}

class TfCheckpointWrittenTest : public ::testing::Test {
 protected:
  std::unique_ptr<Env> env_ = NewMemEnv();
};

TEST_F(TfCheckpointWrittenTest, EveryDtypeAcrossThreeShardsWithSnappyBlocks) {
  tf_testing::TestBundleWriter w(3);
  const std::string long_name = std::string(200, 'w') + "/kernel";  // Snappy compresses this
  w.Add("f32", Tensor::FromVector<float>({1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f}, Shape{2, 3}), 0);
  w.Add("f64", Tensor::FromVector<double>({1e300, -0.5}), 1);
  w.Add("i32", Tensor::FromVector<int32_t>({-7, 2147483647}), 2);
  w.Add("i64", Tensor::Scalar<int64_t>(int64_t{1} << 40), 0);
  w.Add("u8", Tensor::FromVector<uint8_t>({0, 255, 7}), 1);
  w.Add("bool", Tensor::FromVector<bool>({true, false, true}), 2);
  const std::string big(300, 'x');
  w.Add("str",
        Tensor::FromVector<std::string>({"", "vocab", std::string("\0\xff", 2), big}, Shape{2, 2}),
        1);
  w.Add("str_empty", Tensor(kString, Shape{0}), 0);
  w.Add("f32_empty", Tensor(kFloat32, Shape{0, 4}), 2);
  w.Add(long_name, Tensor::Scalar<float>(42.f), 2);
  w.Write(env_.get(), "ck/all", /*snappy=*/true);

  const Sstable table = ReadSstable(env_.get(), "ck/all.index");
  EXPECT_GT(table.blocks.size(), 4u);  // several data blocks
  EXPECT_TRUE(std::any_of(table.blocks.begin(), table.blocks.end(),
                          [](const SstableBlock& b) { return b.snappy; }));

  auto reader = TfCheckpointReader::Open(env_.get(), "ck/all");
  EXPECT_EQ(reader->header().num_shards, 3);
  ASSERT_EQ(reader->entries().size(), 10u);
  EXPECT_TRUE(reader->Get("f32").Equals(
      Tensor::FromVector<float>({1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f}, Shape{2, 3})));
  EXPECT_TRUE(reader->Get("f64").Equals(Tensor::FromVector<double>({1e300, -0.5})));
  EXPECT_TRUE(reader->Get("i32").Equals(Tensor::FromVector<int32_t>({-7, 2147483647})));
  EXPECT_EQ(reader->Get("i64").scalar<int64_t>(), int64_t{1} << 40);
  EXPECT_TRUE(reader->Get("u8").Equals(Tensor::FromVector<uint8_t>({0, 255, 7})));
  EXPECT_TRUE(reader->Get("bool").Equals(Tensor::FromVector<bool>({true, false, true})));
  const Tensor s = reader->Get("str");
  ASSERT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_EQ(s.flat<std::string>()[0], "");
  EXPECT_EQ(s.flat<std::string>()[1], "vocab");
  EXPECT_EQ(s.flat<std::string>()[2], std::string("\0\xff", 2));
  EXPECT_EQ(s.flat<std::string>()[3], big);
  EXPECT_EQ(reader->Get("str_empty").shape(), Shape({0}));
  EXPECT_EQ(reader->Get("f32_empty").shape(), Shape({0, 4}));
  EXPECT_EQ(reader->Get(long_name).scalar<float>(), 42.f);
  EXPECT_EQ(reader->Entry("i32").shard_id, 2);
}

TEST_F(TfCheckpointWrittenTest, DamagedStringTensorIsDataLoss) {
  tf_testing::TestBundleWriter w(1);
  w.Add("s", Tensor::FromVector<std::string>({"abc", "de"}), 0);
  w.Write(env_.get(), "ck/s", false);
  const std::string path = "ck/s.data-00000-of-00001";
  const std::string data = ReadFileToString(env_.get(), path);
  ASSERT_EQ(data.size(), 2u + 4u + 5u);  // two 1-byte varints, length crc, bytes
  for (size_t i = 0; i < data.size(); ++i) {
    SCOPED_TRACE(i);
    std::string bad = data;
    bad[i] ^= 0x04;
    tf_testing::Overwrite(env_.get(), path, bad);
    auto reader = TfCheckpointReader::Open(env_.get(), "ck/s");
    ExpectError(ErrorCode::kDataLoss, {path, "'s'"}, [&] { reader->Get("s"); });
  }
}

TEST_F(TfCheckpointWrittenTest, PartitionedVariablesAreReassembled) {
  // A [5, 3] float variable split on axis 0 into [0, 3) and [3, 5) in two shards, as TF's
  // fixed_size_partitioner writes "emb/part_0" and "emb/part_1"; and a [2, 4] int64 one
  // split on axis 1, its dim 0 a whole-dimension extent.
  std::vector<float> full(15);
  for (int i = 0; i < 15; ++i) full[i] = 0.5f * i;
  tf_testing::TestBundleWriter w(2);
  w.AddPartitioned("emb", Shape{5, 3},
                   {{{{0, 3}, {0, 3}},
                     Tensor::FromVector<float>({full.begin(), full.begin() + 9}, Shape{3, 3}),
                     1},
                    {{{3, 2}, {0, 3}},
                     Tensor::FromVector<float>({full.begin() + 9, full.end()}, Shape{2, 3}),
                     0}});
  w.AddPartitioned(
      "cols", Shape{2, 4},
      {{{{0, -1}, {2, 2}}, Tensor::FromVector<int64_t>({3, 4, 7, 8}, Shape{2, 2}), 0},
       {{{0, -1}, {0, 2}}, Tensor::FromVector<int64_t>({1, 2, 5, 6}, Shape{2, 2}), 1}});
  w.Add("plain", Tensor::Scalar<float>(1.f), 0);
  w.Write(env_.get(), "ck/p", false);

  auto reader = TfCheckpointReader::Open(env_.get(), "ck/p");
  // Slice entries are not listed: only the full tensors.
  EXPECT_EQ(reader->names(), (std::vector<std::string>{"cols", "emb", "plain"}));
  EXPECT_EQ(reader->Entry("emb").slices.size(), 2u);
  EXPECT_TRUE(reader->Get("emb").Equals(Tensor::FromVector<float>(full, Shape{5, 3})));
  EXPECT_TRUE(reader->Get("cols").Equals(
      Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{2, 4})));
  // The graph's "emb/part_1" and "cols/part_0": parts in offset order, whatever the order
  // of the index entries or shards ("cols"' part 0 is its second slice).
  EXPECT_TRUE(reader->GetPart("emb", 0).Equals(
      Tensor::FromVector<float>({full.begin(), full.begin() + 9}, Shape{3, 3})));
  EXPECT_TRUE(reader->GetPart("emb", 1).Equals(
      Tensor::FromVector<float>({full.begin() + 9, full.end()}, Shape{2, 3})));
  EXPECT_TRUE(
      reader->GetPart("cols", 0).Equals(Tensor::FromVector<int64_t>({1, 2, 5, 6}, Shape{2, 2})));
  ExpectError(ErrorCode::kNotFound, {"'emb'", "has 2 parts", "'emb/part_2'"},
              [&] { reader->GetPart("emb", 2); });
  ExpectError(ErrorCode::kNotFound, {"'plain'", "not partitioned"},
              [&] { reader->GetPart("plain", 0); });
}

TEST_F(TfCheckpointWrittenTest, BadPartitionsAreDataLoss) {
  auto write = [&](const std::vector<std::tuple<TfSlice, Tensor, int>>& parts) {
    tf_testing::TestBundleWriter w(1);
    w.AddPartitioned("v", Shape{4}, parts);
    w.Write(env_.get(), "ck/bad", false);
    return TfCheckpointReader::Open(env_.get(), "ck/bad");
  };
  // Half of the variable is missing.
  auto r1 = write({{{{0, 2}}, Tensor::FromVector<float>({1, 2}), 0}});
  ExpectError(ErrorCode::kDataLoss, {"'v'", "cover 2 of its 4"}, [&] { r1->Get("v"); });
  // Overlapping slices.
  auto r2 = write({{{{0, 3}}, Tensor::FromVector<float>({1, 2, 3}), 0},
                   {{{2, 2}}, Tensor::FromVector<float>({3, 4}), 0}});
  ExpectError(ErrorCode::kDataLoss, {"'v'", "overlaps"}, [&] { r2->Get("v"); });
  // A slice past the end.
  auto r3 = write({{{{2, 4}}, Tensor::FromVector<float>({1, 2, 3, 4}), 0}});
  ExpectError(ErrorCode::kDataLoss, {"'v'", "outside dimension 0"}, [&] { r3->Get("v"); });
}

TEST_F(TfCheckpointWrittenTest, UnsupportedDtypeListsButDoesNotRead) {
  tf_testing::TestBundleWriter w(1);
  w.Add("h", Tensor::FromVector<int32_t>({1}), 0);
  w.entry("h").set_dtype(proto::DT_HALF);
  w.Write(env_.get(), "ck/h", false);
  auto reader = TfCheckpointReader::Open(env_.get(), "ck/h");
  EXPECT_EQ(reader->Entry("h").tf_dtype, 19);
  EXPECT_EQ(reader->Entry("h").dtype, DType::kInvalid);
  ExpectError(ErrorCode::kUnimplemented, {"'h'", "19"}, [&] { reader->Get("h"); });
}

TEST_F(TfCheckpointWrittenTest, WrongSizeIsDataLoss) {
  tf_testing::TestBundleWriter w(1);
  w.Add("x", Tensor::FromVector<float>({1, 2}), 0);
  w.entry("x").mutable_shape()->mutable_dim(0)->set_size(3);
  w.Write(env_.get(), "ck/x", false);
  auto reader = TfCheckpointReader::Open(env_.get(), "ck/x");
  ExpectError(ErrorCode::kDataLoss, {"'x'", "needs 12"}, [&] { reader->Get("x"); });
}

}  // namespace
}  // namespace loom
