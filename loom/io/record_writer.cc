#include "loom/io/record_writer.h"

#include <cstring>

#include "loom/base/check.h"
#include "loom/base/crc32c.h"
#include "loom/base/logging.h"

namespace loom {
namespace {

void PutFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::string EncodeRecordHeader(uint64_t length) {
  std::string header(12, '\0');
  PutFixed64(header.data(), length);
  PutFixed32(header.data() + 8, crc32c::Mask(crc32c::Value(header.data(), 8)));
  return header;
}

std::string EncodeRecordFooter(std::string_view data) {
  std::string footer(4, '\0');
  PutFixed32(footer.data(), crc32c::Mask(crc32c::Value(data)));
  return footer;
}

std::unique_ptr<RecordWriter> RecordWriter::Open(Env* env, const std::string& path,
                                                 const RecordWriterOptions& options) {
  return std::make_unique<RecordWriter>(env->NewWritableFile(path), path, options);
}

std::unique_ptr<RecordWriter> RecordWriter::OpenForAppend(Env* env, const std::string& path) {
  auto file = env->NewAppendableFile(path);
  const uint64_t size = env->GetFileSize(path);
  return std::make_unique<RecordWriter>(std::move(file), path, RecordWriterOptions{}, size);
}

RecordWriter::RecordWriter(std::unique_ptr<WritableFile> file, std::string path,
                           const RecordWriterOptions& options, uint64_t initial_size)
    : path_(std::move(path)), compressed_(options.compression != Compression::kNone) {
  stream_ = NewCompressingOutputStream(NewFileOutputStream(std::move(file), path_, initial_size),
                                       options.compression, options.compression_level, path_,
                                       options.compression_buffer_size);
}

RecordWriter::~RecordWriter() {
  if (closed_) return;
  try {
    Close();
  } catch (const std::exception& e) {
    LOOM_LOG(ERROR) << "closing record file '" << path_ << "' in destructor: " << e.what();
  }
}

void RecordWriter::CheckUsable() const {
  LOOM_CHECK(!closed_) << "record file '" << path_ << "' used after Close";
  if (failed_) {
    throw FailedPrecondition("record file '", path_, "': an earlier write failed and the ",
                             "compressed stream cannot continue; open a new file");
  }
}

Error RecordWriter::RollBack(const Error& e) {
  if (compressed_) {
    failed_ = true;
    return Error(e.code(), StrCat(e.message(), "; the compressed record file '", path_,
                                  "' ends mid-stream and accepts no more records"));
  }
  const uint64_t dropped = records_written_ - flushed_records_;
  try {
    stream_->Truncate(flushed_offset_);
  } catch (const Error& t) {
    return Error(e.code(), StrCat(e.message(), "; cutting '", path_,
                                  "' back to its last complete record failed too (", t.message(),
                                  "): its end may hold a torn record"));
  }
  records_written_ = flushed_records_;
  return Error(e.code(), StrCat(e.message(), "; '", path_, "' was cut back to its last ",
                                "complete record (offset ", flushed_offset_, "), dropping the ",
                                dropped, " record(s) written since its last flush"));
}

void RecordWriter::WriteRecord(std::string_view data) {
  CheckUsable();
  try {
    stream_->Append(EncodeRecordHeader(data.size()));
    stream_->Append(data);
    stream_->Append(EncodeRecordFooter(data));
  } catch (const Error& e) {
    ++records_written_;  // counted among the dropped
    throw RollBack(e);
  }
  ++records_written_;
}

void RecordWriter::Flush() {
  CheckUsable();
  try {
    stream_->Flush();
  } catch (const Error& e) {
    throw RollBack(e);
  }
  flushed_offset_ = stream_->Tell();
  flushed_records_ = records_written_;
}

void RecordWriter::Sync() {
  CheckUsable();
  try {
    stream_->Sync();
  } catch (const Error& e) {
    throw RollBack(e);
  }
  flushed_offset_ = stream_->Tell();
  flushed_records_ = records_written_;
}

void RecordWriter::Close() {
  if (closed_) return;
  if (!failed_ && !compressed_) {
    // Flush first, while a failure can still be taken back; Close then writes nothing.
    try {
      Flush();
    } catch (...) {
      closed_ = true;
      try {
        stream_->Close();
      } catch (const Error&) {
        // The flush error is the one to report.
      }
      throw;
    }
  }
  closed_ = true;
  stream_->Close();
}

}  // namespace loom
