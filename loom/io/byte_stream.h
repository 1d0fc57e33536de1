#ifndef LOOM_IO_BYTE_STREAM_H_
#define LOOM_IO_BYTE_STREAM_H_

// Byte streams under the record reader and writer: a file, optionally seen through
// zlib / gzip (de)compression. Positions (Tell, Seek) count bytes of the decoded stream,
// so a record reader reports and restores the same offsets with or without compression.
// Streams are not thread-safe; each is owned by one reader or writer. Errors throw
// loom::Error naming `path`: DataLoss for corrupt compressed data, FailedPrecondition for
// a backward Seek on a stream that cannot rewind.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "loom/base/env.h"

namespace loom {

enum class Compression { kNone = 0, kZlib = 1, kGzip = 2 };

// "", "NONE", "ZLIB", "GZIP" (TF's compression_type strings, case-insensitive).
// Throws InvalidArgument for anything else.
Compression ParseCompression(std::string_view name);
// "NONE", "ZLIB", "GZIP".
std::string_view CompressionName(Compression c);

class InputStream {
 public:
  virtual ~InputStream() = default;
  // Reads up to n bytes into out; returns fewer only at the (current) end of the stream.
  virtual size_t Read(size_t n, char* out) = 0;
  // Bytes of the stream consumed so far.
  virtual uint64_t Tell() const = 0;
  // Moves to `position`: forward by skipping, backward by rewinding where possible.
  // Seeking past the end leaves Tell() at the end.
  virtual void Seek(uint64_t position) = 0;
  // Bytes left before the end, when cheaply known (uncompressed random-access files).
  virtual std::optional<uint64_t> Remaining() const { return std::nullopt; }
  // False when the stream ended before its format's end marker (a gzip / zlib stream
  // cut short). Plain files are always complete.
  virtual bool Complete() const { return true; }
  // Position of the underlying file, for error messages about compressed data.
  virtual uint64_t RawPosition() const { return Tell(); }
};

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual void Append(std::string_view data) = 0;
  // Makes everything appended so far readable by another reader of the file (for
  // compressed streams: a zlib sync flush), then flushes the file.
  virtual void Flush() = 0;
  // Flush, then fsync.
  virtual void Sync() = 0;
  // Finishes the compressed stream (trailer) and closes the file. Idempotent.
  virtual void Close() = 0;
  // Bytes appended so far (uncompressed).
  virtual uint64_t Tell() const = 0;
  // Takes back everything appended after `position` (a Tell() value), so that the
  // stream continues from there: how a record writer removes a record that failed
  // halfway. REQUIRES: what precedes `position` was flushed. Compressed streams cannot
  // (Unimplemented): their compressor's state cannot be rewound.
  virtual void Truncate(uint64_t position) = 0;
};

// Streams over files. The stream owns the file; `path` is used in messages only.
std::unique_ptr<InputStream> NewRandomAccessInputStream(std::unique_ptr<RandomAccessFile> file,
                                                        std::string path);
// Cannot seek backward.
std::unique_ptr<InputStream> NewSequentialInputStream(std::unique_ptr<SequentialFile> file,
                                                      std::string path);
// Decompresses `raw`. For kGzip, reads concatenated gzip members (gzip(1) output with a
// name and mtime in the header, `cat a.gz b.gz`) as one stream. kNone returns raw.
// buffer_size is the compressed read buffer.
std::unique_ptr<InputStream> NewDecompressingInputStream(std::unique_ptr<InputStream> raw,
                                                         Compression compression, std::string path,
                                                         size_t buffer_size = 256 << 10);

// initial_size: the bytes `file` already holds (an appendable file), so that Truncate
// cuts the file at the right place.
std::unique_ptr<OutputStream> NewFileOutputStream(std::unique_ptr<WritableFile> file,
                                                  std::string path, uint64_t initial_size = 0);
// Compresses into `raw`. level: zlib's 0..9 or -1 for its default.
std::unique_ptr<OutputStream> NewCompressingOutputStream(std::unique_ptr<OutputStream> raw,
                                                         Compression compression, int level,
                                                         std::string path,
                                                         size_t buffer_size = 256 << 10);

}  // namespace loom

#endif  // LOOM_IO_BYTE_STREAM_H_
