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
  return std::make_unique<RecordWriter>(env->NewAppendableFile(path), path,
                                        RecordWriterOptions{});
}

RecordWriter::RecordWriter(std::unique_ptr<WritableFile> file, std::string path,
                           const RecordWriterOptions& options)
    : path_(std::move(path)) {
  stream_ = NewCompressingOutputStream(NewFileOutputStream(std::move(file), path_),
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

void RecordWriter::WriteRecord(std::string_view data) {
  LOOM_CHECK(!closed_) << "WriteRecord after Close on '" << path_ << "'";
  stream_->Append(EncodeRecordHeader(data.size()));
  stream_->Append(data);
  stream_->Append(EncodeRecordFooter(data));
  ++records_written_;
}

void RecordWriter::Flush() {
  LOOM_CHECK(!closed_) << "Flush after Close on '" << path_ << "'";
  stream_->Flush();
}

void RecordWriter::Sync() {
  LOOM_CHECK(!closed_) << "Sync after Close on '" << path_ << "'";
  stream_->Sync();
}

void RecordWriter::Close() {
  if (closed_) return;
  closed_ = true;
  stream_->Close();
}

}  // namespace loom
