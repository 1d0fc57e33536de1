#ifndef LOOM_IO_RECORD_WRITER_H_
#define LOOM_IO_RECORD_WRITER_H_

// RecordWriter appends TFRecord frames to a file (docs/formats/tfrecord.md):
//
//   uint64 length (little-endian)
//   uint32 masked crc32c of the 8 length bytes
//   byte   data[length]
//   uint32 masked crc32c of data
//
// optionally through zlib or gzip compression of the whole stream (what TF's
// TFRecordWriter writes with compression_type "ZLIB" / "GZIP"). The writer owns its file.
// Not thread-safe. Errors from the Env propagate as loom::Error naming the path.
//
// A failed write never leaves a torn record behind (a full disk used to leave half a
// record that later readers rejected, records after it included): when an Append, Flush
// or Sync throws, the writer cuts the file back to where it stood at its last successful
// Flush (a record boundary) and rethrows the error, same code, saying so. The records
// written since that flush are dropped; the writer stays usable and later records
// continue from the boundary. A compressed stream cannot be cut back (its compressor
// cannot be rewound): after a failure that writer refuses further records
// (FailedPrecondition) and the file ends in a truncated stream, which readers report as
// such.
//
//   auto writer = RecordWriter::Open(env, "/tmp/train.tfrecord", {});
//   writer->WriteRecord(example.SerializeAsString());
//   writer->Close();
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/io/byte_stream.h"

namespace loom {

struct RecordWriterOptions {
  // Default: kNone.
  Compression compression = Compression::kNone;
  // zlib level 0 (store) .. 9 (smallest), or -1 for zlib's default (6). Default: -1.
  int compression_level = -1;
  // Size of the compressor's output buffer in bytes. Default: 256 KiB.
  size_t compression_buffer_size = 256 << 10;
};

// The 12-byte header of a frame holding `length` bytes, and the 4-byte footer of `data`.
std::string EncodeRecordHeader(uint64_t length);
std::string EncodeRecordFooter(std::string_view data);

class RecordWriter {
 public:
  // Creates (or truncates) path. Throws what Env::NewWritableFile throws.
  static std::unique_ptr<RecordWriter> Open(Env* env, const std::string& path,
                                            const RecordWriterOptions& options);
  // Appends to an existing file (no compression: a compressed stream cannot be extended).
  static std::unique_ptr<RecordWriter> OpenForAppend(Env* env, const std::string& path);
  // Writes frames into `file`, which the writer now owns. `path` is for messages;
  // initial_size is the size `file` already has (an appendable file).
  RecordWriter(std::unique_ptr<WritableFile> file, std::string path,
               const RecordWriterOptions& options, uint64_t initial_size = 0);
  // Closes the file if Close() was not called, ignoring errors.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // REQUIRES: not closed.
  void WriteRecord(std::string_view data);
  // Makes every record written so far readable by another process (sync-flushes the
  // compressor, flushes the file).
  void Flush();
  // Flush, then fsync.
  void Sync();
  // Finishes the compressed stream and closes the file; reports errors. Idempotent.
  void Close();

  uint64_t records_written() const { return records_written_; }
  // Uncompressed bytes written by this writer: for a new file, the offset where the next
  // record will start.
  uint64_t offset() const { return stream_->Tell(); }
  const std::string& path() const { return path_; }

 private:
  // After a failed write: cuts the file back to the last flush and returns `e` with that
  // said (or marks the writer failed when it cannot).
  Error RollBack(const Error& e);
  void CheckUsable() const;

  std::string path_;
  bool compressed_;
  std::unique_ptr<OutputStream> stream_;
  uint64_t records_written_ = 0;
  // Where the stream stood after the last successful Flush / Sync.
  uint64_t flushed_offset_ = 0;
  uint64_t flushed_records_ = 0;
  bool failed_ = false;  // a compressed stream broke: no more records
  bool closed_ = false;
};

}  // namespace loom

#endif  // LOOM_IO_RECORD_WRITER_H_
