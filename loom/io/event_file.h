#ifndef LOOM_IO_EVENT_FILE_H_
#define LOOM_IO_EVENT_FILE_H_

// TensorBoard event files (docs/formats/events.md): a TFRecord file of serialized Event
// protos whose first record is Event{wall_time, file_version: "brain.Event:2"}.
//
// EventFileWriter creates <log_dir>/events.out.tfevents.<unix seconds>.<host>.<pid>.<n>
// (n is the smallest counter that names no existing file, so two writers in one process
// and second never collide; two processes differ by pid) and owns it. Events are buffered
// and flushed every `flush_every_events` events, when `flush_secs` have passed at the next
// write, and at Flush / Close; there is no background thread. A flush is durable (fsync,
// as TF's EventsWriter), so a crash loses at most the events since the last flush. When the
// file was deleted under the writer (a user cleaning the directory, a rotation), the next
// flush logs a warning and continues in a new file, carrying over the events not yet
// flushed; when the whole directory was deleted it throws FailedPrecondition naming it.
// Flush and Close report every error (Close still closes). Not thread-safe: the summary
// writer that shares one serializes calls.
//
// EventFileReader iterates the Events of one file; it throws DataLoss naming the file and
// offset for a corrupt record or a record that is not an Event.
//
//   EventFileWriter writer(env, "/tmp/run1", {});
//   writer.WriteScalar("loss", /*step=*/10, 0.25f);
//   writer.Close();
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/io/record_reader.h"
#include "loom/io/record_writer.h"

// The messages are only declared here, so including this header needs no protobuf
// headers; code that builds or reads them includes event_file_proto.h.
namespace loom::proto {
class Event;
class SessionLog;
class Summary;
class Summary_Value;
}  // namespace loom::proto

namespace loom {

inline constexpr std::string_view kEventFileVersion = "brain.Event:2";

struct EventFileWriterOptions {
  // Flush after this many events. Default: 10 (TF's max_queue).
  int flush_every_events = 10;
  // Flush at the first write this many seconds after the last flush. Default: 120 (TF's
  // flush_secs).
  double flush_secs = 120;
  // Appended to the file name, e.g. ".v2". Default: "".
  std::string filename_suffix = "";
};

class EventFileWriter {
 public:
  // Creates log_dir (and parents) if needed, then the event file, and writes the
  // file_version event. Throws what the Env throws.
  EventFileWriter(Env* env, const std::string& log_dir, const EventFileWriterOptions& options);
  // Closes if Close() was not called, logging errors.
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // REQUIRES: not closed. The event is written as given (set wall_time yourself, or use
  // the helpers below, which stamp Env::NowMicros()).
  void WriteEvent(const proto::Event& event);
  void WriteSummary(int64_t step, const proto::Summary& summary);
  void WriteScalar(const std::string& tag, int64_t step, float value);

  void Flush();
  // Flushes and closes the file; reports errors. Idempotent.
  void Close();

  // The event file's path (a new one after the file was deleted and replaced).
  const std::string& path() const { return path_; }
  // Events written to the current file, including its file_version event.
  uint64_t events_written() const { return writer_->records_written(); }

 private:
  double NowSeconds() const;
  // Creates a new event file (never named `replaced`) and writes the file_version event.
  void OpenNewFile(const std::string& replaced);
  // Replaces a deleted event file, carrying pending_ over (see the header comment).
  void ReplaceIfDeleted();

  Env* env_;
  EventFileWriterOptions options_;
  std::string log_dir_;
  std::string path_;
  std::unique_ptr<RecordWriter> writer_;
  std::vector<std::string> pending_;  // serialized events written since the last flush
  uint64_t last_flush_micros_ = 0;
  bool closed_ = false;
};

class EventFileReader {
 public:
  // Event files are uncompressed; options can ask to skip corrupt records or to stop at a
  // truncated final record (a file still being written).
  static std::unique_ptr<EventFileReader> Open(Env* env, const std::string& path,
                                               const RecordReaderOptions& options = {});
  explicit EventFileReader(std::unique_ptr<RecordReader> records);

  // The next Event, or nullopt at the end of the file.
  std::optional<proto::Event> Next();

  // Offset of the next record, and a way back to it (see RecordReader).
  uint64_t offset() const { return records_->offset(); }
  void Seek(uint64_t offset) { records_->Seek(offset); }
  uint64_t events_read() const { return records_->records_read(); }
  const std::string& path() const { return records_->path(); }

 private:
  std::unique_ptr<RecordReader> records_;
  std::string scratch_;
};

// Summary helpers.
// A Summary with one simple_value (what TF1's tf.summary.scalar writes).
proto::Summary ScalarSummary(const std::string& tag, float value);
// The scalar a Summary.Value holds: simple_value, or a one-element float / double / int
// tensor (what TF2 and the scalars plugin write). nullopt for other kinds.
std::optional<double> ScalarValue(const proto::Summary_Value& value);

}  // namespace loom

#endif  // LOOM_IO_EVENT_FILE_H_
