// TFRecord framing: golden bytes, round trips with every compression, corruption,
// truncation, offsets and seeking.
#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>
#include <vector>

#include "loom/base/crc32c.h"
#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/base/fault_injection_env.h"
#include "loom/io/record_reader.h"
#include "loom/io/record_writer.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

std::string Bytes(std::initializer_list<unsigned> bytes) {
  std::string s;
  for (unsigned b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

void WriteFile(Env* env, const std::string& path, std::string_view data) {
  auto f = env->NewWritableFile(path);
  f->Append(data);
  f->Close();
}

std::vector<std::string> ReadAll(Env* env, const std::string& path,
                                 const RecordReaderOptions& options = {}) {
  auto reader = RecordReader::Open(env, path, options);
  std::vector<std::string> out;
  std::string record;
  while (reader->ReadRecord(&record)) out.push_back(record);
  return out;
}

// Records of assorted sizes, including empty and larger than every internal buffer.
std::vector<std::string> SampleRecords() {
  std::mt19937 rng(7);
  std::vector<std::string> records = {"", "a", "123456789", std::string(100, 'x')};
  std::string big(1 << 20, '\0');
  for (char& c : big) c = static_cast<char>(rng() % 7);  // compressible
  records.push_back(big);
  std::string noise(300000, '\0');
  for (char& c : noise) c = static_cast<char>(rng());  // incompressible
  records.push_back(noise);
  for (int i = 0; i < 50; ++i) records.push_back("record " + std::to_string(i));
  return records;
}

void WriteRecords(Env* env, const std::string& path, const std::vector<std::string>& records,
                  Compression compression) {
  auto writer = RecordWriter::Open(env, path, {.compression = compression});
  for (const auto& r : records) writer->WriteRecord(r);
  writer->Close();
}

// The exact bytes of one frame, computed by hand from the format (docs/formats/tfrecord.md)
// and the CRC-32C check value crc32c("123456789") = 0xE3069283:
//   masked(0xE3069283) = ror15(0xE3069283) + 0xa282ead8 = 0xC78AB0E5,
//   crc32c(09 00 00 00 00 00 00 00) = 0x872FCB77, masked = 0x3971F937.
TEST(RecordWriterTest, GoldenBytesOfOneFrame) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/golden", {"123456789"}, Compression::kNone);
  const std::string expected =
      Bytes({0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,       // length 9, little-endian
             0x37, 0xf9, 0x71, 0x39,                               // masked crc of length
             '1',  '2',  '3',  '4',  '5',  '6',  '7',  '8',  '9',  // data
             0xe5, 0xb0, 0x8a, 0xc7});                             // masked crc of data
  EXPECT_EQ(ReadFileToString(env.get(), "/golden"), expected);
  EXPECT_EQ(crc32c::Mask(0xE3069283u), 0xC78AB0E5u);
}

TEST(RecordWriterTest, GoldenBytesOfEmptyFrame) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/empty", {""}, Compression::kNone);
  // crc32c of 8 zero bytes masked is 0x07980329; crc32c("") = 0, masked = 0xa282ead8.
  EXPECT_EQ(ReadFileToString(env.get(), "/empty"),
            Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0x29, 0x03, 0x98, 0x07, 0xd8, 0xea, 0x82, 0xa2}));
}

class RoundTripTest : public ::testing::TestWithParam<Compression> {};

TEST_P(RoundTripTest, ReadsBackEveryRecordWithOffsets) {
  auto env = NewMemEnv();
  const auto records = SampleRecords();
  WriteRecords(env.get(), "/f", records, GetParam());
  auto reader = RecordReader::Open(env.get(), "/f", {.compression = GetParam()});
  std::vector<uint64_t> offsets;
  std::string record;
  uint64_t expected_offset = 0;
  for (const auto& r : records) {
    EXPECT_EQ(reader->offset(), expected_offset);
    offsets.push_back(reader->offset());
    ASSERT_TRUE(reader->ReadRecord(&record));
    ASSERT_EQ(record, r);
    expected_offset += 16 + r.size();
  }
  EXPECT_FALSE(reader->ReadRecord(&record));
  EXPECT_FALSE(reader->ReadRecord(&record));  // stays at the end
  EXPECT_EQ(reader->records_read(), records.size());

  // Seek back (a compressed stream rewinds and skips), then forward again.
  reader->Seek(offsets[6]);
  ASSERT_TRUE(reader->ReadRecord(&record));
  EXPECT_EQ(record, records[6]);
  reader->Seek(offsets[2]);
  ASSERT_TRUE(reader->ReadRecord(&record));
  EXPECT_EQ(record, records[2]);
  reader->Seek(offsets.back());
  ASSERT_TRUE(reader->ReadRecord(&record));
  EXPECT_EQ(record, records.back());
  EXPECT_FALSE(reader->ReadRecord(&record));
}

TEST_P(RoundTripTest, SequentialReaderSeeksForwardOnly) {
  auto env = NewMemEnv();
  const auto records = SampleRecords();
  WriteRecords(env.get(), "/f", records, GetParam());
  auto reader = RecordReader::OpenSequential(env.get(), "/f", {.compression = GetParam()});
  std::string record;
  ASSERT_TRUE(reader->ReadRecord(&record));
  ASSERT_TRUE(reader->ReadRecord(&record));
  uint64_t third = reader->offset();
  ASSERT_TRUE(reader->ReadRecord(&record));
  EXPECT_EQ(record, records[2]);
  std::string msg = ErrorOf([&] { reader->Seek(0); }, ErrorCode::kFailedPrecondition);
  EXPECT_NE(msg.find("sequential"), std::string::npos) << msg;
  auto again = RecordReader::OpenSequential(env.get(), "/f", {.compression = GetParam()});
  again->Seek(third);
  ASSERT_TRUE(again->ReadRecord(&record));
  EXPECT_EQ(record, records[2]);
}

TEST_P(RoundTripTest, FlushMakesRecordsReadableBeforeClose) {
  auto env = NewMemEnv();
  auto writer = RecordWriter::Open(env.get(), "/f", {.compression = GetParam()});
  writer->WriteRecord("first");
  writer->WriteRecord("second");
  writer->Flush();
  // The stream has no end marker yet: a tailing reader sees both records, then stops.
  auto records =
      ReadAll(env.get(), "/f", {.compression = GetParam(), .truncated_record_is_eof = true});
  EXPECT_EQ(records, (std::vector<std::string>{"first", "second"}));
  writer->WriteRecord("third");
  writer->Close();
  EXPECT_EQ(ReadAll(env.get(), "/f", {.compression = GetParam()}).size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(AllCompressions, RoundTripTest,
                         ::testing::Values(Compression::kNone, Compression::kZlib,
                                           Compression::kGzip),
                         [](const auto& info) { return std::string(CompressionName(info.param)); });

TEST(RecordWriterTest, CompressedFilesAreSmallerAndCarryTheirHeaders) {
  auto env = NewMemEnv();
  std::vector<std::string> records(100, std::string(1000, 'z'));
  WriteRecords(env.get(), "/plain", records, Compression::kNone);
  WriteRecords(env.get(), "/gz", records, Compression::kGzip);
  WriteRecords(env.get(), "/zl", records, Compression::kZlib);
  std::string gz = ReadFileToString(env.get(), "/gz");
  std::string zl = ReadFileToString(env.get(), "/zl");
  EXPECT_LT(gz.size(), env->GetFileSize("/plain") / 10);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_EQ(static_cast<unsigned char>(zl[0]) & 0x0f, 8);  // zlib CM = deflate
  EXPECT_EQ(((static_cast<unsigned char>(zl[0]) << 8) | static_cast<unsigned char>(zl[1])) % 31,
            0);  // zlib header check bits
}

// A gzip stream with a file name and mtime in its header, the way gzip(1) writes one.
std::string GzipWithNameHeader(std::string_view payload, const char* name) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 9, Z_DEFLATED, MAX_WBITS + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  gz_header header{};
  header.time = 1646034739;
  header.os = 3;
  header.name = reinterpret_cast<Bytef*>(const_cast<char*>(name));
  EXPECT_EQ(deflateSetHeader(&s, &header), Z_OK);
  std::string out(deflateBound(&s, payload.size()) + 64, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(payload.data()));
  s.avail_in = payload.size();
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = out.size();
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

TEST(RecordReaderTest, ReadsGzipWithNameHeaderAndMultipleMembers) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/part1", {"a", "bb"}, Compression::kNone);
  WriteRecords(env.get(), "/part2", {"ccc"}, Compression::kNone);
  std::string member1 = GzipWithNameHeader(ReadFileToString(env.get(), "/part1"), "data.tfrecord");
  std::string member2 = GzipWithNameHeader(ReadFileToString(env.get(), "/part2"), "more");
  EXPECT_EQ(static_cast<unsigned char>(member1[3]) & 0x08, 0x08);  // FNAME flag set
  WriteFile(env.get(), "/cat.gz", member1 + member2);
  EXPECT_EQ(ReadAll(env.get(), "/cat.gz", {.compression = Compression::kGzip}),
            (std::vector<std::string>{"a", "bb", "ccc"}));
  // A record split across the two members still reads.
  std::string whole = ReadFileToString(env.get(), "/part1");
  WriteFile(
      env.get(), "/split.gz",
      GzipWithNameHeader(whole.substr(0, 20), "x") + GzipWithNameHeader(whole.substr(20), "y"));
  EXPECT_EQ(ReadAll(env.get(), "/split.gz", {.compression = Compression::kGzip}),
            (std::vector<std::string>{"a", "bb"}));
}

std::string WriteSample(Env* env, const std::vector<std::string>& records) {
  WriteRecords(env, "/f", records, Compression::kNone);
  return ReadFileToString(env, "/f");
}

TEST(RecordReaderTest, DataCrcMismatchNamesFileAndOffset) {
  auto env = NewMemEnv();
  std::string bytes = WriteSample(env.get(), {"alpha", "beta", "gamma"});
  // Record 1 starts at 16 + 5 = 21; its data starts 12 bytes later.
  bytes[21 + 12] ^= 0x01;
  WriteFile(env.get(), "/f", bytes);
  auto reader = RecordReader::Open(env.get(), "/f", {});
  std::string record;
  ASSERT_TRUE(reader->ReadRecord(&record));
  std::string msg = ErrorOf([&] { reader->ReadRecord(&record); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("corrupted record at offset 21 in '/f'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("data crc mismatch"), std::string::npos) << msg;

  auto skipping = RecordReader::Open(env.get(), "/f", {.skip_corrupt_records = true});
  std::vector<std::string> got;
  while (skipping->ReadRecord(&record)) got.push_back(record);
  EXPECT_EQ(got, (std::vector<std::string>{"alpha", "gamma"}));
  EXPECT_EQ(skipping->corrupt_records(), 1u);
}

TEST(RecordReaderTest, LengthCrcMismatchThrowsOrResyncs) {
  auto env = NewMemEnv();
  std::string bytes = WriteSample(env.get(), {"alpha", "beta", "gamma", "delta"});
  bytes[21 + 2] ^= 0x40;  // length of record 1
  WriteFile(env.get(), "/f", bytes);
  std::string msg = ErrorOf([&] { ReadAll(env.get(), "/f"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("corrupted record at offset 21 in '/f': length crc mismatch"),
            std::string::npos)
      << msg;
  auto reader = RecordReader::Open(env.get(), "/f", {.skip_corrupt_records = true});
  std::vector<std::string> got;
  std::string record;
  while (reader->ReadRecord(&record)) got.push_back(record);
  EXPECT_EQ(got, (std::vector<std::string>{"alpha", "gamma", "delta"}));
  EXPECT_EQ(reader->corrupt_records(), 1u);
}

TEST(RecordReaderTest, TruncatedFileIsDataLossOrEndOfFile) {
  auto env = NewMemEnv();
  std::string bytes = WriteSample(env.get(), {"alpha", "beta"});
  for (size_t cut : {size_t{21 + 5}, size_t{21 + 12 + 2}, size_t{bytes.size() - 1}}) {
    WriteFile(env.get(), "/f", bytes.substr(0, cut));
    std::string msg = ErrorOf([&] { ReadAll(env.get(), "/f"); }, ErrorCode::kDataLoss);
    EXPECT_NE(msg.find("truncated record at offset 21 in '/f'"), std::string::npos) << msg;

    auto reader = RecordReader::Open(env.get(), "/f", {.truncated_record_is_eof = true});
    std::string record;
    ASSERT_TRUE(reader->ReadRecord(&record));
    EXPECT_FALSE(reader->ReadRecord(&record));
    EXPECT_EQ(reader->offset(), 21u);
    // The writer finishes the record; the same reader picks it up.
    auto rest = env->NewAppendableFile("/f");
    rest->Append(bytes.substr(cut));
    rest->Close();
    ASSERT_TRUE(reader->ReadRecord(&record));
    EXPECT_EQ(record, "beta");
    EXPECT_FALSE(reader->ReadRecord(&record));
  }
}

TEST(RecordReaderTest, TruncatedCompressedStreamIsDataLoss) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/gz", {std::string(5000, 'q'), "tail"}, Compression::kGzip);
  std::string gz = ReadFileToString(env.get(), "/gz");
  WriteFile(env.get(), "/gz", gz.substr(0, gz.size() - 6));  // drop part of the trailer
  std::string msg = ErrorOf([&] { ReadAll(env.get(), "/gz", {.compression = Compression::kGzip}); },
                            ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("'/gz'"), std::string::npos) << msg;
}

// A header with a valid CRC that claims an absurd length must not allocate it.
TEST(RecordReaderTest, HugeLengthDoesNotAllocate) {
  auto env = NewMemEnv();
  std::string frame = EncodeRecordHeader(uint64_t{1} << 60) + "only a few bytes";
  WriteFile(env.get(), "/f", frame);
  std::string msg = ErrorOf([&] { ReadAll(env.get(), "/f"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("truncated record at offset 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1152921504606846976"), std::string::npos) << msg;

  // Compressed: the reader cannot know the remaining size and grows its buffer only as
  // bytes arrive.
  auto writer = RecordWriter::Open(env.get(), "/gz", {.compression = Compression::kGzip});
  writer->Close();
  auto gz = env->NewWritableFile("/gz");
  auto stream = NewCompressingOutputStream(NewFileOutputStream(std::move(gz), "/gz"),
                                           Compression::kGzip, -1, "/gz");
  stream->Append(frame);
  stream->Close();
  msg = ErrorOf([&] { ReadAll(env.get(), "/gz", {.compression = Compression::kGzip}); },
                ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("truncated record at offset 0 (uncompressed)"), std::string::npos) << msg;
}

TEST(RecordReaderTest, WrongCompressionTypeIsDataLoss) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/gz", {"hello"}, Compression::kGzip);
  WriteRecords(env.get(), "/plain", {"hello"}, Compression::kNone);
  std::string msg = ErrorOf([&] { ReadAll(env.get(), "/gz"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("length crc mismatch"), std::string::npos) << msg;
  msg = ErrorOf([&] { ReadAll(env.get(), "/plain", {.compression = Compression::kGzip}); },
                ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("corrupt GZIP data in '/plain'"), std::string::npos) << msg;
}

TEST(RecordReaderTest, EmptyFilesHaveNoRecords) {
  auto env = NewMemEnv();
  WriteFile(env.get(), "/empty", "");
  EXPECT_TRUE(ReadAll(env.get(), "/empty").empty());
  WriteRecords(env.get(), "/gz", {}, Compression::kGzip);
  EXPECT_TRUE(ReadAll(env.get(), "/gz", {.compression = Compression::kGzip}).empty());
}

TEST(RecordWriterTest, AppendContinuesAFile) {
  auto env = NewMemEnv();
  WriteRecords(env.get(), "/f", {"one"}, Compression::kNone);
  auto writer = RecordWriter::OpenForAppend(env.get(), "/f");
  writer->WriteRecord("two");
  writer->Close();
  EXPECT_EQ(ReadAll(env.get(), "/f"), (std::vector<std::string>{"one", "two"}));
}

TEST(RecordWriterTest, FailedAppendPropagates) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  auto writer = RecordWriter::Open(&env, "/f", {});
  writer->WriteRecord("ok");
  env.FailNthAppend(1);
  EXPECT_THROW(writer->WriteRecord("lost"), Error);
}

// A full disk mid-record: the writer cuts the file back to its last flushed record, so
// the file never holds a torn record, and records written once space is back follow
// cleanly. Without the rollback the reader hits the torn fragment and rejects the rest.
TEST(RecordWriterTest, DiskFullMidRecordLeavesNoTornRecord) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  auto writer = RecordWriter::Open(&env, "/f", {});
  writer->WriteRecord("first");
  writer->WriteRecord("second");
  writer->Flush();
  const uint64_t boundary = env.GetFileSize("/f");
  writer->WriteRecord("unflushed");  // reached the file, but after the last flush
  env.SetFreeSpace(20);              // the next record's header fits, its data does not
  try {
    writer->WriteRecord(std::string(100, 'x'));
    FAIL() << "expected disk full";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
    EXPECT_NE(e.message().find("cut back to its last complete record (offset " +
                               std::to_string(boundary) + ")"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.message().find("dropping the 2 record(s)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(env.GetFileSize("/f"), boundary);
  EXPECT_EQ(writer->records_written(), 2u);
  env.ClearFaults();
  writer->WriteRecord("after");
  writer->Close();
  EXPECT_EQ(ReadAll(&env, "/f"), (std::vector<std::string>{"first", "second", "after"}));
}

// The same when the failure comes from Flush (a buffering file) or Close, and for a file
// opened for append (the cut is at the old size plus the flushed records).
TEST(RecordWriterTest, FailedFlushAndCloseCutBackToo) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  WriteRecords(&env, "/f", {"old"}, Compression::kNone);
  auto writer = RecordWriter::OpenForAppend(&env, "/f");
  writer->WriteRecord("kept");
  writer->Flush();
  env.FailNthAppend(2, /*short_write=*/true);  // the data of the next record is torn
  EXPECT_THROW(writer->WriteRecord("torn away"), Error);
  writer->WriteRecord("more");
  env.SetFreeSpace(3);
  EXPECT_THROW(writer->WriteRecord("no room"), Error);
  env.ClearFaults();
  writer->Close();
  EXPECT_EQ(ReadAll(&env, "/f"), (std::vector<std::string>{"old", "kept"}));
}

TEST(RecordReaderTest, TornRecordFollowedByRecordsIsReportedAsTorn) {
  auto env = NewMemEnv();
  const std::string first = EncodeRecordHeader(5) + "alpha" + EncodeRecordFooter("alpha");
  const std::string torn = EncodeRecordHeader(40) + "only part of it";
  const std::string after =
      EncodeRecordHeader(5) + "gamma" + EncodeRecordFooter("gamma") + std::string(40, 'z');
  WriteFile(env.get(), "/f", first + torn + after);
  std::string msg = ErrorOf([&] { ReadAll(env.get(), "/f"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("torn record at offset 21 in '/f': the writer stopped mid-record"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("the next one at offset " + std::to_string(first.size() + torn.size())),
            std::string::npos)
      << msg;
  // A torn tail says so too.
  WriteFile(env.get(), "/f", first + torn);
  msg = ErrorOf([&] { ReadAll(env.get(), "/f"); }, ErrorCode::kDataLoss);
  EXPECT_NE(msg.find("truncated record at offset 21 in '/f'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the writer stopped mid-record"), std::string::npos) << msg;
}

TEST(CompressionTest, ParsesTfNames) {
  EXPECT_EQ(ParseCompression(""), Compression::kNone);
  EXPECT_EQ(ParseCompression("NONE"), Compression::kNone);
  EXPECT_EQ(ParseCompression("gzip"), Compression::kGzip);
  EXPECT_EQ(ParseCompression("ZLIB"), Compression::kZlib);
  std::string msg = ErrorOf([] { ParseCompression("lz4"); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("lz4"), std::string::npos);
}

}  // namespace
}  // namespace loom
