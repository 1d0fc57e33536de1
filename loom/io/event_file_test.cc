#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/base/fault_injection_env.h"
#include "loom/io/event_file_proto.h"

namespace loom {
namespace {

// Forwards everything to the base Env but reads a clock the test sets.
class ManualClockEnv : public FaultInjectionEnv {
 public:
  explicit ManualClockEnv(Env* base) : FaultInjectionEnv(base) {}
  uint64_t NowMicros() override { return now_micros; }
  uint64_t now_micros = 1700000000'250000;
};

std::vector<proto::Event> ReadEvents(Env* env, const std::string& path) {
  auto reader = EventFileReader::Open(env, path);
  std::vector<proto::Event> events;
  while (auto e = reader->Next()) events.push_back(*e);
  return events;
}

TEST(EventFileWriterTest, NamesFileAndWritesVersionFirst) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  EventFileWriter writer(&env, "/logs/run1", {});
  EXPECT_EQ(writer.path(), "/logs/run1/events.out.tfevents.1700000000.memenv.1.0");
  writer.Close();
  std::vector<proto::Event> events = ReadEvents(&env, writer.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_DOUBLE_EQ(events[0].wall_time(), 1700000000.25);
  EXPECT_EQ(events[0].step(), 0);
}

TEST(EventFileWriterTest, SecondWriterInTheSameSecondGetsTheNextCounter) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  EventFileWriter a(&env, "/logs", {});
  EventFileWriter b(&env, "/logs", {.filename_suffix = ".v2"});
  EventFileWriter c(&env, "/logs", {});
  EXPECT_TRUE(a.path().ends_with(".1.0"));
  EXPECT_TRUE(b.path().ends_with(".1.0.v2"));
  EXPECT_TRUE(c.path().ends_with(".1.1"));
}

TEST(EventFileWriterTest, ScalarsRoundTrip) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  std::string path;
  {
    EventFileWriter writer(&env, "/logs", {});
    path = writer.path();
    for (int step = 0; step < 25; ++step) {
      env.now_micros += 1000000;
      writer.WriteScalar("loss", step, 1.0f / (step + 1));
      writer.WriteScalar("accuracy", step, step * 0.01f);
    }
    EXPECT_EQ(writer.events_written(), 51u);
  }  // the destructor closes
  std::vector<proto::Event> events = ReadEvents(&env, path);
  ASSERT_EQ(events.size(), 51u);
  for (int step = 0; step < 25; ++step) {
    const proto::Event& loss = events[1 + 2 * step];
    EXPECT_EQ(loss.step(), step);
    EXPECT_DOUBLE_EQ(loss.wall_time(), 1700000000.25 + step + 1);
    ASSERT_EQ(loss.summary().value_size(), 1);
    EXPECT_EQ(loss.summary().value(0).tag(), "loss");
    EXPECT_EQ(loss.summary().value(0).simple_value(), 1.0f / (step + 1));
    EXPECT_EQ(ScalarValue(events[2 + 2 * step].summary().value(0)), double{step * 0.01f});
  }
}

// Flushing is observable with the POSIX Env, which buffers appends.
class EventFileFlushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = JoinPath(::testing::TempDir(),
                    "loom_event_flush_" + std::to_string(Env::Default()->ProcessId()) + "_" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    if (Env::Default()->FileExists(dir_)) Env::Default()->DeleteRecursively(dir_);
  }
  void TearDown() override { Env::Default()->DeleteRecursively(dir_); }
  std::string dir_;
};

TEST_F(EventFileFlushTest, FlushesEveryNEventsAndAfterFlushSecs) {
  ManualClockEnv env(Env::Default());
  EventFileWriter writer(&env, dir_, {.flush_every_events = 3, .flush_secs = 60});
  const uint64_t after_version = env.GetFileSize(writer.path());
  EXPECT_GT(after_version, 0u);  // the version event is flushed at once
  writer.WriteScalar("a", 1, 1);
  writer.WriteScalar("a", 2, 2);
  EXPECT_EQ(env.GetFileSize(writer.path()), after_version);
  writer.WriteScalar("a", 3, 3);
  const uint64_t after_three = env.GetFileSize(writer.path());
  EXPECT_GT(after_three, after_version);
  writer.WriteScalar("a", 4, 4);
  EXPECT_EQ(env.GetFileSize(writer.path()), after_three);
  env.now_micros += 61'000'000;
  writer.WriteScalar("a", 5, 5);
  EXPECT_GT(env.GetFileSize(writer.path()), after_three);
  writer.Close();
  EXPECT_EQ(ReadEvents(&env, writer.path()).size(), 6u);
}

// ENOSPC while the event file flushes (a checkpoint filled the disk): the write fails
// cleanly, the file is cut back to its last complete event, and once space is back (the
// failed checkpoint's temporary file deleted) later events follow and every reader reads
// the file to its end.
TEST(EventFileWriterTest, DiskFullLeavesAReadableFile) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  EventFileWriter writer(&env, "/logs", {.flush_every_events = 2});
  const uint64_t before = env.GetFileSize(writer.path());
  writer.WriteScalar("loss", 1, 1.0f);  // the memory Env does not buffer: in the file now
  const uint64_t event_size = env.GetFileSize(writer.path()) - before;
  writer.WriteScalar("loss", 2, 0.5f);   // flushed
  env.SetFreeSpace(event_size * 3 / 2);  // one more event fits, two do not
  writer.WriteScalar("loss", 3, 0.25f);
  EXPECT_THROW(
      {
        try {
          writer.WriteScalar("loss", 4, 0.125f);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
          throw;
        }
      },
      Error);
  env.ClearFaults();
  writer.WriteScalar("loss", 5, 0.0625f);
  writer.Close();
  std::vector<int64_t> steps;
  for (const auto& e : ReadEvents(&env, writer.path())) steps.push_back(e.step());
  // The version event, steps 1 and 2, then 5: 3 and 4 failed with the flush.
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 5}));
}

TEST(EventFileReaderTest, RecordThatIsNotAnEventIsDataLoss) {
  auto env = NewMemEnv();
  {
    auto writer = RecordWriter::Open(env.get(), "/bad", {});
    writer->WriteRecord(std::string("\x0b\x0b\x0b", 3));  // a group tag: invalid proto
  }
  auto reader = EventFileReader::Open(env.get(), "/bad");
  try {
    reader->Next();
    FAIL() << "expected DataLoss";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(e.message().find("record at offset 0 in '/bad'"), std::string::npos) << e.message();
  }
}

TEST(SummaryHelpersTest, ScalarSummaryGoldenBytes) {
  // Summary.value (field 1, 11 bytes){ tag (field 1) "loss"; simple_value (field 2,
  // fixed32) 0.25f = 0x3e800000 little-endian }.
  const std::string expected = {
      0x0a, 0x0b, 0x0a, 0x04, 'l', 'o', 's', 's', 0x15, 0x00, 0x00, static_cast<char>(0x80), 0x3e};
  EXPECT_EQ(ScalarSummary("loss", 0.25f).SerializeAsString(), expected);
}

TEST(SummaryHelpersTest, ScalarValueReadsSimpleValuesAndScalarTensors) {
  proto::Summary s = ScalarSummary("x", 2.5f);
  EXPECT_EQ(ScalarValue(s.value(0)), 2.5);
  proto::Summary::Value v;
  v.mutable_tensor()->set_dtype(proto::DT_FLOAT);
  v.mutable_tensor()->add_float_val(0.75f);
  EXPECT_EQ(ScalarValue(v), 0.75);
  float f = -3.0f;
  v.mutable_tensor()->clear_float_val();
  v.mutable_tensor()->set_tensor_content(std::string(reinterpret_cast<char*>(&f), 4));
  EXPECT_EQ(ScalarValue(v), -3.0);
  v.mutable_tensor()->set_dtype(proto::DT_DOUBLE);
  v.mutable_tensor()->clear_tensor_content();
  v.mutable_tensor()->add_double_val(1e300);
  EXPECT_EQ(ScalarValue(v), 1e300);
  v.mutable_histo()->set_num(3);
  EXPECT_EQ(ScalarValue(v), std::nullopt);
}

// A crash (power loss) after a flush keeps every event flushed before it: Flush fsyncs.
TEST(EventFileWriterTest, FlushedEventsSurviveACrash) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  EventFileWriter writer(&env, "/logs", {.flush_every_events = 100});
  writer.WriteScalar("loss", 1, 1.0f);
  writer.WriteScalar("loss", 2, 0.5f);
  writer.Flush();
  writer.WriteScalar("loss", 3, 0.25f);  // not flushed: may be lost
  env.DropUnsyncedData();
  std::vector<int64_t> steps;
  for (const auto& e : ReadEvents(&env, writer.path())) steps.push_back(e.step());
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2}));
}

// The file deleted under the writer (the user cleaned the directory, TensorBoard's log
// rotation): the events not yet flushed go to a new file, and so do all later ones.
TEST(EventFileWriterTest, DeletedFileIsReplacedAndUnflushedEventsCarriedOver) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  EventFileWriter writer(&env, "/logs", {.flush_every_events = 3});
  const std::string first = writer.path();
  writer.WriteScalar("loss", 1, 1.0f);
  writer.Flush();
  env.DeleteFile(first);
  writer.WriteScalar("loss", 2, 0.5f);
  writer.WriteScalar("loss", 3, 0.25f);
  writer.WriteScalar("loss", 4, 0.125f);  // the third: flushes, finds the file gone
  writer.WriteScalar("loss", 5, 0.0625f);
  writer.Close();
  EXPECT_NE(writer.path(), first);
  EXPECT_FALSE(env.FileExists(first));
  const std::vector<proto::Event> events = ReadEvents(&env, writer.path());
  std::vector<int64_t> steps;
  for (const auto& e : events) steps.push_back(e.step());
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(env.GetChildren("/logs"), std::vector<std::string>{Basename(writer.path())});
}

TEST(EventFileWriterTest, DeletedDirectoryIsFailedPreconditionNamingIt) {
  auto mem = NewMemEnv();
  ManualClockEnv env(mem.get());
  EventFileWriter writer(&env, "/logs/run1", {});
  writer.WriteScalar("loss", 1, 1.0f);
  env.DeleteRecursively("/logs");
  try {
    writer.Flush();
    FAIL() << "a write into a deleted directory went nowhere, silently";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    EXPECT_NE(e.message().find("'/logs/run1' was deleted"), std::string::npos) << e.what();
  }
  EXPECT_THROW(writer.Close(), Error);
}

// Every failure of a flush or a close reaches the caller: none is swallowed.
TEST(EventFileWriterTest, SyncAndCloseErrorsReachTheCaller) {
  for (FaultOp op : {FaultOp::kSync, FaultOp::kClose}) {
    SCOPED_TRACE(std::string(FaultOpName(op)));
    auto mem = NewMemEnv();
    ManualClockEnv env(mem.get());
    EventFileWriter writer(&env, "/logs", {.flush_every_events = 100});
    writer.WriteScalar("loss", 1, 1.0f);
    env.FailNth(op, 1);
    try {
      writer.Flush();
      writer.Close();
      FAIL() << "the injected failure was swallowed";
    } catch (const Error& e) {
      EXPECT_NE(e.message().find("injected"), std::string::npos) << e.what();
      EXPECT_NE(e.message().find(writer.path()), std::string::npos) << e.what();
    }
    env.ClearFaults();
    // The file still parses to its end (a failed flush cut the file back to a record).
    EXPECT_NO_THROW(ReadEvents(&env, writer.path()));
  }
}

}  // namespace
}  // namespace loom
