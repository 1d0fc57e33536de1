#include <cstring>

#include "loom/base/check.h"
#include "loom/base/error.h"
#include "loom/base/logging.h"
#include "loom/io/event_file_proto.h"

namespace loom {

EventFileWriter::EventFileWriter(Env* env, const std::string& log_dir,
                                 const EventFileWriterOptions& options)
    : env_(env), options_(options), log_dir_(log_dir) {
  env_->CreateDirs(log_dir);
  OpenNewFile(/*replaced=*/"");
}

void EventFileWriter::OpenNewFile(const std::string& replaced) {
  const uint64_t now = env_->NowMicros();
  const std::string prefix = StrCat("events.out.tfevents.", now / 1000000, ".", env_->HostName(),
                                    ".", env_->ProcessId(), ".");
  for (int counter = 0;; ++counter) {
    path_ = JoinPath(log_dir_, StrCat(prefix, counter, options_.filename_suffix));
    if (path_ != replaced && !env_->FileExists(path_)) break;
  }
  writer_ = RecordWriter::Open(env_, path_, RecordWriterOptions{});
  proto::Event version;
  version.set_wall_time(static_cast<double>(now) / 1e6);
  version.set_file_version(std::string(kEventFileVersion));
  writer_->WriteRecord(version.SerializeAsString());
  writer_->Sync();
  last_flush_micros_ = now;
}

void EventFileWriter::ReplaceIfDeleted() {
  if (env_->FileExists(path_)) return;
  const std::string old_path = path_;
  if (!env_->IsDirectory(log_dir_)) {
    throw FailedPrecondition("event file '", old_path, "': its directory '", log_dir_,
                             "' was deleted while summaries were being written to it; the ",
                             "summaries (and any checkpoints) written there so far are gone. "
                             "Recreate the directory or write to another one");
  }
  // Deleted under the writer (the user cleaned the directory, a rotation): the events
  // written since the last flush are still here; they go to a new file.
  try {
    writer_->Close();  // into the unlinked file
  } catch (const Error&) {
  }
  OpenNewFile(old_path);
  for (const std::string& record : pending_) writer_->WriteRecord(record);
  LOOM_LOG(WARNING) << "event file '" << old_path << "' was deleted while being written; "
                    << "continuing in '" << path_ << "' (the " << pending_.size()
                    << " event(s) not yet flushed are carried over)";
}
EventFileWriter::~EventFileWriter() {
  if (closed_) return;
  try {
    Close();
  } catch (const std::exception& e) {
    LOOM_LOG(ERROR) << "closing event file '" << path_ << "' in destructor: " << e.what();
  }
}

double EventFileWriter::NowSeconds() const { return static_cast<double>(env_->NowMicros()) / 1e6; }

void EventFileWriter::WriteEvent(const proto::Event& event) {
  LOOM_CHECK(!closed_) << "WriteEvent after Close on '" << path_ << "'";
  std::string record = event.SerializeAsString();
  writer_->WriteRecord(record);
  pending_.push_back(std::move(record));
  const uint64_t now = env_->NowMicros();
  if (static_cast<int>(pending_.size()) >= options_.flush_every_events ||
      static_cast<double>(now - last_flush_micros_) >= options_.flush_secs * 1e6) {
    Flush();
  }
}

void EventFileWriter::WriteSummary(int64_t step, const proto::Summary& summary) {
  proto::Event event;
  event.set_wall_time(NowSeconds());
  event.set_step(step);
  *event.mutable_summary() = summary;
  WriteEvent(event);
}

void EventFileWriter::WriteScalar(const std::string& tag, int64_t step, float value) {
  WriteSummary(step, ScalarSummary(tag, value));
}

void EventFileWriter::Flush() {
  LOOM_CHECK(!closed_) << "Flush after Close on '" << path_ << "'";
  try {
    ReplaceIfDeleted();
    // Durable, as TF's EventsWriter::Flush: a crash must not take summaries written long
    // before it.
    writer_->Sync();
  } catch (...) {
    pending_.clear();  // the record writer took them back (record_writer.h)
    throw;
  }
  pending_.clear();
  last_flush_micros_ = env_->NowMicros();
}

void EventFileWriter::Close() {
  if (closed_) return;
  closed_ = true;
  try {
    ReplaceIfDeleted();
    writer_->Sync();
  } catch (...) {
    try {
      writer_->Close();
    } catch (const Error&) {
      // The first error is the one to report.
    }
    throw;
  }
  pending_.clear();
  writer_->Close();
}

std::unique_ptr<EventFileReader> EventFileReader::Open(Env* env, const std::string& path,
                                                       const RecordReaderOptions& options) {
  return std::make_unique<EventFileReader>(RecordReader::Open(env, path, options));
}

EventFileReader::EventFileReader(std::unique_ptr<RecordReader> records)
    : records_(std::move(records)) {}

std::optional<proto::Event> EventFileReader::Next() {
  const uint64_t start = records_->offset();
  if (!records_->ReadRecord(&scratch_)) return std::nullopt;
  proto::Event event;
  if (!event.ParseFromString(scratch_)) {
    throw DataLoss("record at offset ", start, " in '", records_->path(), "' (", scratch_.size(),
                   " bytes) is not an Event proto; is this a TensorBoard event file?");
  }
  return event;
}

proto::Summary ScalarSummary(const std::string& tag, float value) {
  proto::Summary summary;
  proto::Summary::Value* v = summary.add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return summary;
}

std::optional<double> ScalarValue(const proto::Summary::Value& value) {
  if (value.value_case() == proto::Summary::Value::kSimpleValue) return value.simple_value();
  if (value.value_case() != proto::Summary::Value::kTensor) return std::nullopt;
  const proto::TensorProto& t = value.tensor();
  for (const auto& dim : t.tensor_shape().dim()) {
    if (dim.size() != 1) return std::nullopt;
  }
  auto from_content = [&](auto tag) -> std::optional<double> {
    using T = decltype(tag);
    if (t.tensor_content().size() != sizeof(T)) return std::nullopt;
    T v;
    std::memcpy(&v, t.tensor_content().data(), sizeof(T));  // little-endian hosts only
    return static_cast<double>(v);
  };
  switch (t.dtype()) {
    case proto::DT_FLOAT:
      if (t.float_val_size() > 0) return t.float_val(0);
      return from_content(float{});
    case proto::DT_DOUBLE:
      if (t.double_val_size() > 0) return t.double_val(0);
      return from_content(double{});
    case proto::DT_INT32:
      if (t.int_val_size() > 0) return t.int_val(0);
      return from_content(int32_t{});
    case proto::DT_INT64:
      if (t.int64_val_size() > 0) return static_cast<double>(t.int64_val(0));
      return from_content(int64_t{});
    default:
      return std::nullopt;
  }
}

}  // namespace loom
