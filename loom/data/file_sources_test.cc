// Tests of the file sources (file_sources.h): each source's values, its fast path or
// streaming state, and every bad input named in the input-pipeline issue. Files are
// written with the io writers, into the memory Env unless the test needs a real mmap.
#include "loom/data/file_sources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "loom/base/fault_injection_env.h"
#include "loom/data/dataset_impl.h"
#include "loom/data/test_util.h"
#include "loom/io/byte_stream.h"
#include "loom/io/example_builder.h"
#include "loom/io/idx.h"
#include "loom/io/npy.h"
#include "loom/io/record_writer.h"
#include "loom/testing/temp_dir.h"

namespace loom::data {
namespace {

using testing::CodeOf;
using testing::ExpectRestoreAtEveryPoint;
using testing::Strings;
using testing::WriteBytes;
using testing::WriteRecords;

// "f<file>r<record>" for `files` files of `per_file` records.
std::vector<std::string> WriteRecordFiles(Env* env, const std::string& prefix, int files,
                                          int per_file, Compression compression) {
  std::vector<std::string> paths;
  paths.reserve(files);
  for (int f = 0; f < files; ++f) {
    std::vector<std::string> records;
    records.reserve(per_file);
    for (int r = 0; r < per_file; ++r)
      records.push_back(StrCat("f", f, "r", r, std::string(r * 7, 'x')));
    paths.push_back(StrCat(prefix, f, ".tfrecord"));
    WriteRecords(env, paths.back(), records, compression);
  }
  return paths;
}

// ---------------------------------------------------------------- npy

// Records every mapping it hands out, to check that elements view them.
class MapRecordingEnv : public FaultInjectionEnv {
 public:
  MapRecordingEnv() : FaultInjectionEnv(Env::Default()) {}
  std::shared_ptr<MappedRegion> MapFile(const std::string& path) override {
    auto region = FaultInjectionEnv::MapFile(path);
    std::lock_guard<std::mutex> lock(mu_);
    regions_.push_back(region);
    return region;
  }
  bool Inside(const void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& r : regions_) {
      const char* c = static_cast<const char*>(p);
      if (c >= r->data() && c + bytes <= r->data() + r->size()) return true;
    }
    return false;
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<MappedRegion>> regions_;
};

// A .npy file by hand: any descr, order and shape text, raw data.
std::string NpyBytes(const std::string& descr, bool fortran, const std::string& shape,
                     std::string_view data) {
  std::string dict =
      StrCat("{'descr': '", descr, "', 'fortran_order': ", fortran ? "True" : "False",
             ", 'shape': ", shape, ", }");
  while ((10 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + std::string(data);
}

TEST(FromNpyTest, RowsAreZeroCopyViewsOfTheMappingAndUseTheFastPath) {
  loom::testing::TempDir dir("file_sources");
  MapRecordingEnv env;
  std::vector<float> x(10 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  WriteNpy(&env, dir.Join("x.npy"), Tensor::FromVector(x, {10, 4}));
  WriteNpy(&env, dir.Join("y.npy"), testing::Iota(10));

  Dataset d = FromNpy({{"x", dir.Join("x.npy")}, {"label", dir.Join("y.npy")}}, {.env = &env});
  EXPECT_EQ(SpecString(d.spec()),
            SpecString({{"x", {kFloat32, Shape{4}}}, {"label", {kInt64, Shape{}}}}));
  EXPECT_TRUE(d.impl()->indexed());
  auto it = d.MakeIterator();
  for (int64_t i = 0; i < 10; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e);
    const Tensor& row = e->at("x");
    EXPECT_FALSE(row.buffer()->owned()) << "row " << i << " was copied";
    EXPECT_TRUE(env.Inside(row.raw_data(), row.TotalBytes()))
        << "row " << i << " is not in the mapping";
    EXPECT_TRUE(env.Inside(e->at("label").raw_data(), 8));
    EXPECT_EQ(row.flat<float>()[0], 4.0f * i);
    EXPECT_EQ(e->at("label").scalar<int64_t>(), i);
  }
  EXPECT_FALSE(it->GetNext());

  // Shuffle -> Batch gathers rows by index (the fast path), and saves indices only.
  Dataset batched = d.Shuffle(10, {.seed = 7}).Batch(4);
  ASSERT_TRUE(batched.impl()->gather_plan().has_value());
  std::multiset<int64_t> labels;
  auto bit = batched.MakeIterator();
  while (auto b = bit->GetNext()) {
    for (int64_t r = 0; r < b->at("label").dim(0); ++r) {
      const int64_t l = b->at("label").flat<int64_t>()[r];
      labels.insert(l);
      EXPECT_EQ(b->at("x").flat<float>()[r * 4 + 3], 4.0f * l + 3);
    }
  }
  EXPECT_EQ(labels, (std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(FromNpyTest, BigEndianAndFortranOrderAreConverted) {
  auto env = NewMemEnv();
  const char be[] = {0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 1, 0};
  WriteBytes(env.get(), "be.npy", NpyBytes(">i4", false, "(3,)", std::string_view(be, 12)));
  std::vector<int32_t> values;
  auto be_it = FromNpy("be.npy", {.env = env.get()}).MakeIterator();
  while (auto e = be_it->GetNext()) values.push_back(e->at("x").scalar<int32_t>());
  EXPECT_EQ(values, (std::vector<int32_t>{1, 2, 256}));

  // Fortran order [3, 2]: stored column by column.
  const double col_major[] = {0, 2, 4, 1, 3, 5};
  WriteBytes(env.get(), "f.npy",
             NpyBytes("<f8", true, "(3, 2)",
                      std::string_view(reinterpret_cast<const char*>(col_major), 48)));
  auto it = FromNpy("f.npy", {.env = env.get()}).MakeIterator();
  for (int r = 0; r < 3; ++r) {
    auto e = it->GetNext();
    ASSERT_TRUE(e);
    EXPECT_EQ(e->at("x").flat<double>()[0], 2.0 * r);
    EXPECT_EQ(e->at("x").flat<double>()[1], 2.0 * r + 1);
  }
}

TEST(FromNpyTest, BadFilesGiveClearErrors) {
  auto env = NewMemEnv();
  std::string msg;
  EXPECT_EQ(CodeOf([&] { FromNpy("missing.npy", {.env = env.get()}); }, &msg),
            ErrorCode::kNotFound);
  EXPECT_NE(msg.find("missing.npy"), std::string::npos) << msg;

  WriteBytes(env.get(), "obj.npy", NpyBytes("|O", false, "(2,)", std::string(16, '\0')));
  EXPECT_EQ(CodeOf([&] { FromNpy("obj.npy", {.env = env.get()}); }, &msg),
            ErrorCode::kUnimplemented);
  EXPECT_NE(msg.find("obj.npy"), std::string::npos) << msg;

  WriteBytes(env.get(), "scalar.npy", NpyBytes("<i8", false, "()", std::string(8, '\0')));
  EXPECT_EQ(CodeOf([&] { FromNpy("scalar.npy", {.env = env.get()}); }, &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("0-d"), std::string::npos) << msg;

  // Truncated data, and a shape whose byte count is far beyond the file: DataLoss, and
  // nothing is allocated for the claimed size.
  WriteBytes(env.get(), "short.npy", NpyBytes("<f4", false, "(100,)", std::string(40, '\0')));
  EXPECT_EQ(CodeOf([&] { FromNpy("short.npy", {.env = env.get()}); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("short.npy"), std::string::npos) << msg;
  WriteBytes(env.get(), "huge.npy",
             NpyBytes(">f8", true, "(1099511627776, 1024)", std::string(64, '\0')));
  EXPECT_EQ(CodeOf([&] { FromNpy("huge.npy", {.env = env.get()}); }, &msg), ErrorCode::kDataLoss);

  WriteNpy(env.get(), "a.npy", testing::Iota(3));
  WriteNpy(env.get(), "b.npy", testing::Iota(4));
  EXPECT_EQ(CodeOf(
                [&] {
                  FromNpy({{"a", "a.npy"}, {"b", "b.npy"}}, {.env = env.get()});
                },
                &msg),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("a.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("b.npy"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- IDX

TEST(FromIdxTest, PlainAndGzippedFilesGiveTheSameIndexedRows) {
  auto env = NewMemEnv();
  std::vector<uint8_t> pixels(5 * 2 * 3), labels(5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 3);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(9 - i);
  WriteIdx(env.get(), "images", Tensor::FromVector(pixels, {5, 2, 3}));
  WriteIdx(env.get(), "labels", Tensor::FromVector(labels, {5}));
  WriteBytes(env.get(), "images.gz", ReadFileToString(env.get(), "images"), Compression::kGzip);
  WriteBytes(env.get(), "labels.gz", ReadFileToString(env.get(), "labels"), Compression::kGzip);

  for (const std::string suffix : {"", ".gz"}) {
    SCOPED_TRACE(suffix);
    Dataset d = FromIdx("images" + suffix, "labels" + suffix, {.env = env.get()});
    EXPECT_EQ(SpecString(d.spec()),
              SpecString({{"x", {kUInt8, Shape{2, 3}}}, {"label", {kUInt8, Shape{}}}}));
    EXPECT_TRUE(d.impl()->indexed());
    auto it = d.Batch(2).MakeIterator();
    int64_t row = 0;
    while (auto b = it->GetNext()) {
      for (int64_t r = 0; r < b->at("label").dim(0); ++r, ++row) {
        EXPECT_EQ(b->at("label").flat<uint8_t>()[r], 9 - row);
        EXPECT_EQ(b->at("x").flat<uint8_t>()[r * 6 + 5], static_cast<uint8_t>((row * 6 + 5) * 3));
      }
    }
    EXPECT_EQ(row, 5);
  }
  EXPECT_EQ(SpecString(FromIdx("labels.gz", {.env = env.get(), .features_key = "y"}).spec()),
            "{y: uint8[]}");
}

TEST(FromIdxTest, BadFilesGiveClearErrors) {
  auto env = NewMemEnv();
  std::string msg;
  EXPECT_EQ(CodeOf([&] { FromIdx("nope", {.env = env.get()}); }, &msg), ErrorCode::kNotFound);
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
  // uint8, rank 2, dims 2^31 x 2^31 (4 EiB) in a 12-byte file, plain and gzipped.
  const std::string header("\0\0\x08\x02\x80\0\0\0\x80\0\0\0", 12);
  WriteBytes(env.get(), "liar", header);
  WriteBytes(env.get(), "liar.gz", header + std::string(100, '\0'), Compression::kGzip);
  EXPECT_EQ(CodeOf([&] { FromIdx("liar", {.env = env.get()}); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("liar"), std::string::npos) << msg;
  EXPECT_EQ(CodeOf([&] { FromIdx("liar.gz", {.env = env.get()}); }), ErrorCode::kDataLoss);
}

// ---------------------------------------------------------------- TFRecord

TEST(TFRecordDatasetTest, ReadsFilesInOrderWithEveryCompression) {
  auto env = NewMemEnv();
  const std::vector<std::pair<Compression, std::string>> kinds = {
      {Compression::kNone, ""}, {Compression::kGzip, "GZIP"}, {Compression::kZlib, "ZLIB"}};
  for (const auto& [compression, name] : kinds) {
    SCOPED_TRACE(name);
    const std::string prefix = StrCat("/d", static_cast<int>(compression), "/part-");
    auto files = WriteRecordFiles(env.get(), prefix, 3, 4, compression);
    Dataset d = TFRecordDataset(files, {.compression = name, .env = env.get()});
    EXPECT_EQ(SpecString(d.spec()), "{record: string[]}");
    std::vector<std::string> got = Strings(d, kRecordKey);
    ASSERT_EQ(got.size(), 12u);
    EXPECT_EQ(got[0], "f0r0");
    EXPECT_EQ(got[5].substr(0, 4), "f1r1");
    // A glob gives the same files, sorted.
    EXPECT_EQ(
        Strings(TFRecordDataset({prefix + "*.tfrecord"}, {.compression = name, .env = env.get()}),
                kRecordKey),
        got);
  }
}

TEST(TFRecordDatasetTest, MissingFilesAndEmptyGlobsAreNotFound) {
  auto env = NewMemEnv();
  std::string msg;
  EXPECT_EQ(CodeOf([&] { TFRecordDataset({"/data/missing.tfrecord"}, {.env = env.get()}); }, &msg),
            ErrorCode::kNotFound);
  EXPECT_NE(msg.find("/data/missing.tfrecord"), std::string::npos) << msg;
  EXPECT_EQ(CodeOf([&] { TFRecordDataset({"/data/*.tfrecord"}, {.env = env.get()}); }, &msg),
            ErrorCode::kNotFound);
  EXPECT_NE(msg.find("/data/*.tfrecord"), std::string::npos) << msg;
  // A directory where a file is expected says so (it used to be "not found").
  env->CreateDirs("/data/dir.tfrecord");
  EXPECT_EQ(CodeOf([&] { TFRecordDataset({"/data/dir.tfrecord"}, {.env = env.get()}); }, &msg),
            ErrorCode::kNotFound);
  EXPECT_NE(msg.find("'/data/dir.tfrecord' is a directory, not a file"), std::string::npos) << msg;
  WriteRecords(env.get(), "/a.tfrecord", {"x"});
  EXPECT_EQ(
      CodeOf([&] { TFRecordDataset({"/a.tfrecord"}, {.compression = "LZ4", .env = env.get()}); }),
      ErrorCode::kInvalidArgument);
}

TEST(TFRecordDatasetTest, CorruptRecordIsDataLossWithOffsetOrSkippedAndCounted) {
  auto env = NewMemEnv();
  const std::vector<std::string> records = {"alpha", "bravo", "charlie", "delta"};
  WriteRecords(env.get(), "/c.tfrecord", records);
  std::string bytes = ReadFileToString(env.get(), "/c.tfrecord");
  // Record i starts at sum over j < i of 12 + len + 4; flip a byte of record 2's data.
  const uint64_t offset2 = (12 + 5 + 4) * 2;
  bytes[offset2 + 12 + 1] ^= 0x20;
  WriteBytes(env.get(), "/c.tfrecord", bytes);

  std::string msg;
  auto it = TFRecordDataset({"/c.tfrecord"}, {.env = env.get()}).MakeIterator();
  EXPECT_EQ(Strings(*it, kRecordKey, 2), (std::vector<std::string>{"alpha", "bravo"}));
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("/c.tfrecord"), std::string::npos) << msg;
  EXPECT_NE(msg.find(StrCat("offset ", offset2)), std::string::npos) << msg;

  auto stats = std::make_shared<TFRecordStats>();
  Dataset skipping = TFRecordDataset(
      {"/c.tfrecord"}, {.skip_corrupt_records = true, .env = env.get(), .stats = stats});
  EXPECT_EQ(Strings(skipping, kRecordKey), (std::vector<std::string>{"alpha", "bravo", "delta"}));
  EXPECT_EQ(stats->corrupt_records_skipped.load(), 1u);
  EXPECT_EQ(stats->records_read.load(), 3u);
}

TEST(TFRecordDatasetTest, TruncatedFilesAndLyingLengthsAreDataLoss) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/t.tfrecord", {"one", "two", "three"});
  std::string bytes = ReadFileToString(env.get(), "/t.tfrecord");
  WriteBytes(env.get(), "/t.tfrecord", bytes.substr(0, bytes.size() - 6));
  std::string msg;
  auto it = TFRecordDataset({"/t.tfrecord"}, {.env = env.get()}).MakeIterator();
  EXPECT_EQ(Strings(*it, kRecordKey, 2).size(), 2u);
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &msg), ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("/t.tfrecord"), std::string::npos) << msg;

  // A valid header claiming 1 PiB, gzipped too (the reader cannot know the size): no
  // allocation of the claimed length, DataLoss at the real end.
  const std::string liar = EncodeRecordHeader(uint64_t{1} << 50) + "tiny";
  WriteBytes(env.get(), "/liar.tfrecord", liar);
  WriteBytes(env.get(), "/liar.tfrecord.gz", liar, Compression::kGzip);
  EXPECT_EQ(
      CodeOf([&] { Strings(TFRecordDataset({"/liar.tfrecord"}, {.env = env.get()}), kRecordKey); }),
      ErrorCode::kDataLoss);
  EXPECT_EQ(CodeOf([&] {
              Strings(
                  TFRecordDataset({"/liar.tfrecord.gz"}, {.compression = "GZIP", .env = env.get()}),
                  kRecordKey);
            }),
            ErrorCode::kDataLoss);
}

TEST(TFRecordDatasetTest, SaveRestoreMidStreamResumesExactly) {
  auto env = NewMemEnv();
  const std::vector<std::pair<Compression, std::string>> kinds = {{Compression::kNone, ""},
                                                                  {Compression::kGzip, "GZIP"}};
  for (const auto& [compression, name] : kinds) {
    SCOPED_TRACE(name);
    auto files = WriteRecordFiles(env.get(), StrCat("/sr", name, "-"), 3, 5, compression);
    ExpectRestoreAtEveryPoint(
        TFRecordDataset(files, {.compression = name, .buffer_size = 64, .env = env.get()}),
        kRecordKey);
  }
}

TEST(TFRecordDatasetTest, InterleaveOverFileNames) {
  auto env = NewMemEnv();
  auto files = WriteRecordFiles(env.get(), "/il-", 4, 3, Compression::kNone);
  Env* e = env.get();
  Dataset names = FromTensorSlices(Tensor::FromVector(files));
  Dataset d = names.Interleave(
      [e](const Element& el) {
        return TFRecordDataset({el.at("x").scalar<std::string>()}, {.env = e});
      },
      {{kRecordKey, {kString, Shape{}}}}, {.cycle_length = 2, .block_length = 1});
  std::vector<std::string> got = Strings(d, kRecordKey);
  ASSERT_EQ(got.size(), 12u);
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + 2),
            (std::vector<std::string>{"f0r0", "f1r0"}));
  std::multiset<std::string> all(got.begin(), got.end());
  auto seq = Strings(TFRecordDataset(files, {.env = e}), kRecordKey);
  EXPECT_EQ(all, std::multiset<std::string>(seq.begin(), seq.end()));

  // Range over indices -> file names, the tf.data idiom with a parallel interleave.
  Dataset by_index = Range(4).Interleave(
      [e, files](const Element& el) {
        return TFRecordDataset({files[el.at("x").scalar<int64_t>()]}, {.env = e});
      },
      {{kRecordKey, {kString, Shape{}}}}, {.cycle_length = 4, .num_parallel_calls = 2});
  auto par = Strings(by_index, kRecordKey);
  EXPECT_EQ(std::multiset<std::string>(par.begin(), par.end()), all);
}

}  // namespace
}  // namespace loom::data
