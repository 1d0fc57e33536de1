#include "loom/train/file_writer.h"

#include <map>
#include <utility>

#include "loom/base/logging.h"
#include "loom/graph/graph_def.h"
#include "loom/io/event_file_proto.h"

namespace loom::train {

FileWriter::FileWriter(const std::string& logdir, FileWriterOptions options)
    : logdir_(logdir), options_(std::move(options)) {
  if (options_.env == nullptr) options_.env = Env::Default();
  writer_ = std::make_unique<EventFileWriter>(
      options_.env, logdir,
      EventFileWriterOptions{.flush_every_events = options_.max_queue,
                             .flush_secs = options_.flush_secs,
                             .filename_suffix = options_.filename_suffix});
}

FileWriter::~FileWriter() {
  try {
    Close();
  } catch (const std::exception& e) {
    LOOM_LOG(ERROR) << "closing event file in '" << logdir_ << "': " << e.what();
  }
}

std::string FileWriter::path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_->path();
}

void FileWriter::WriteLocked(proto::Event& event) {
  if (closed_) throw FailedPrecondition("FileWriter for '", logdir_, "' is closed");
  if (event.wall_time() == 0) event.set_wall_time(options_.env->NowMicros() * 1e-6);
  writer_->WriteEvent(event);
}

void FileWriter::AddEvent(proto::Event event) {
  std::lock_guard<std::mutex> lock(mu_);
  WriteLocked(event);
}

void FileWriter::AddSummary(const proto::Summary& summary, int64_t step) {
  proto::Event event;
  event.set_step(step);
  *event.mutable_summary() = summary;
  AddEvent(std::move(event));
}

void FileWriter::AddSummary(const std::string& serialized, int64_t step) {
  proto::Event event;
  event.set_step(step);
  if (!event.mutable_summary()->ParseFromString(serialized)) {
    throw DataLoss("FileWriter::AddSummary: ", serialized.size(),
                   " bytes are not a serialized Summary (pass a summary op's output)");
  }
  AddEvent(std::move(event));
}

void FileWriter::AddGraph(const Graph& graph, int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  if (graph_written_) return;
  // Structure only: large constants keep dtype and shape, their values are dropped.
  proto::Event event;
  event.set_step(step);
  event.set_graph_def(SerializeGraph(graph, {}, /*external=*/nullptr));
  WriteLocked(event);
  graph_written_ = true;
}

void FileWriter::AddSessionLog(const proto::SessionLog& log, int64_t step) {
  proto::Event event;
  event.set_step(step);
  *event.mutable_session_log() = log;
  AddEvent(std::move(event));
}

void FileWriter::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) writer_->Flush();
}

bool FileWriter::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

std::shared_ptr<FileWriter> SharedFileWriter(const std::string& logdir, Env* env) {
  if (env == nullptr) env = Env::Default();
  std::string key;
  for (char c : logdir) {
    if (c == '/' && !key.empty() && key.back() == '/') continue;
    key += c;
  }
  while (key.size() > 1 && key.back() == '/') key.pop_back();
  static std::mutex mu;
  static std::map<std::pair<Env*, std::string>, std::weak_ptr<FileWriter>> writers;
  std::lock_guard<std::mutex> lock(mu);
  // Drop entries whose writers are gone, so the table never grows past the live ones.
  for (auto it = writers.begin(); it != writers.end();) {
    it = it->second.expired() ? writers.erase(it) : std::next(it);
  }
  std::weak_ptr<FileWriter>& slot = writers[{env, key}];
  if (std::shared_ptr<FileWriter> writer = slot.lock(); writer && !writer->closed()) {
    return writer;
  }
  auto writer = std::make_shared<FileWriter>(logdir, FileWriterOptions{.env = env});
  slot = writer;
  return writer;
}

void FileWriter::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  closed_ = true;
  writer_->Close();
}

}  // namespace loom::train
