#ifndef LOOM_TRAIN_FILE_WRITER_H_
#define LOOM_TRAIN_FILE_WRITER_H_

// FileWriter: TF1's tf.summary.FileWriter, over io's EventFileWriter (event_file.h). It
// owns one event file "events.out.tfevents.<unix secs>.<host>.<pid>.<n>" in `logdir`,
// whose first record is file_version "brain.Event:2", and adds:
//   - summaries at a step (a Summary proto, or the serialized string a summary op outputs);
//   - the graph, once per writer and as structure only: ToGraphDef without constants
//     above GraphExportOptions::inline_constant_bytes, so the file's size never depends
//     on the data (TF's "GraphDef cannot be larger than 2GB" cannot happen);
//   - session-log events (START, STOP, CHECKPOINT with its path).
// Events are flushed every `max_queue` events, at the first write `flush_secs` after the
// last flush, and at Flush / Close / destruction.
// Several hooks writing to one directory should share one FileWriter: TensorBoard reads
// one file per directory at a time. SharedFileWriter (below) is how: hooks given an
// output_dir, the Estimator and MonitoredTrainingSession all take their writer from it.
// Thread-safety: all methods may be called from several threads (a mutex serializes them).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "loom/base/env.h"
#include "loom/graph/graph.h"
#include "loom/io/event_file.h"

namespace loom::train {

struct FileWriterOptions {
  // Flush after this many events. Default: 10 (TF's max_queue).
  int max_queue = 10;
  // Flush at the first write this many seconds after the last flush. Default: 120.
  double flush_secs = 120;
  // Appended to the file name. Default: "".
  std::string filename_suffix;
  // Default: Env::Default().
  Env* env = nullptr;
};

class FileWriter {
 public:
  // Creates logdir (and parents) and the event file. Throws what the Env throws.
  explicit FileWriter(const std::string& logdir, FileWriterOptions options = {});
  // Flushes and closes, logging errors.
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void AddSummary(const proto::Summary& summary, int64_t step);
  // `serialized` is a summary op's output (a serialized Summary). Throws DataLoss when it
  // does not parse.
  void AddSummary(const std::string& serialized, int64_t step);
  // Writes the graph's structure at most once per writer; later calls do nothing.
  void AddGraph(const Graph& graph, int64_t step = 0);
  void AddSessionLog(const proto::SessionLog& log, int64_t step);
  // Writes `event` with wall_time set to now when it is 0.
  void AddEvent(proto::Event event);

  void Flush();
  // Flushes and closes; later Add* calls throw FailedPrecondition. Idempotent.
  void Close();

  const std::string& logdir() const { return logdir_; }
  bool closed() const;
  // The event file's path.
  std::string path() const;

 private:
  void WriteLocked(proto::Event& event);

  std::string logdir_;
  FileWriterOptions options_;
  mutable std::mutex mu_;
  std::unique_ptr<EventFileWriter> writer_;  // guarded by mu_
  bool graph_written_ = false;               // guarded by mu_
  bool closed_ = false;                      // guarded by mu_
};

// TF's SummaryWriterCache: the FileWriter for `logdir` that someone already holds (same
// Env, same directory after dropping trailing and doubled slashes), or a new one with
// default options. The cache keeps only weak references: once every holder has released
// its writer, the file is closed and the next call opens a new one, so nothing outlives a
// training run. (A process-wide table, the one exception to "no global state": it stands
// for the OS's own per-directory state, and shares nothing that a caller could configure.)
// A writer that was Close()d is replaced. Thread-safe.
std::shared_ptr<FileWriter> SharedFileWriter(const std::string& logdir, Env* env = nullptr);

}  // namespace loom::train

#endif  // LOOM_TRAIN_FILE_WRITER_H_
