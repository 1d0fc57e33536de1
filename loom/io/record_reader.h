#ifndef LOOM_IO_RECORD_READER_H_
#define LOOM_IO_RECORD_READER_H_

// RecordReader reads TFRecord frames (see record_writer.h, docs/formats/tfrecord.md) from
// a file, uncompressed or through zlib / gzip, checking both CRCs of every record.
//
// Positions: offset() is where the next record starts, in bytes of the uncompressed
// stream; Seek(offset) returns there, which is how an iterator saves and restores its
// place in a file. On a compressed file a backward Seek re-reads from the start.
//
// Errors (loom::Error, all naming the path and the record's offset):
//   DataLoss  "corrupted record at offset N in 'path': length crc mismatch ..." and
//             likewise for the data crc; a record cut short ("truncated record ...");
//             corrupt compressed data.
//   FailedPrecondition  a backward Seek on a reader opened with OpenSequential (this
//             includes retrying a truncated record with truncated_record_is_eof).
// A length field is never trusted for allocation: the record buffer grows only as bytes
// actually arrive, and on a random-access file a length beyond the end of the file is
// reported as truncation before anything is allocated.
//
// The reader owns its file. Not thread-safe; use one reader per thread.
//
//   auto reader = RecordReader::Open(env, path, {.compression = Compression::kGzip});
//   std::string record;
//   while (reader->ReadRecord(&record)) Use(record);
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "loom/base/env.h"
#include "loom/io/byte_stream.h"

namespace loom {

struct RecordReaderOptions {
  // Default: kNone.
  Compression compression = Compression::kNone;
  // Skip records that fail a CRC check, counting them in corrupt_records(), instead of
  // throwing DataLoss. A bad data CRC skips that one record; a bad length CRC scans
  // forward byte by byte for the next valid header. Default: false.
  bool skip_corrupt_records = false;
  // Treat a record cut short at the end of the file as the end of the file, the way TF
  // reads a file that is still being written. offset() then stays at the start of that
  // record, so a later ReadRecord retries it once the writer has appended the rest.
  // Default: false (a truncated record throws DataLoss).
  bool truncated_record_is_eof = false;
  // Bytes read from the file at a time (compressed bytes for a compressed file; the
  // decompressed stream is read in blocks of the same size). Default: 256 KiB.
  size_t buffer_size = 256 << 10;
};

class RecordReader {
 public:
  // Opens path for random access (Seek works in both directions).
  static std::unique_ptr<RecordReader> Open(Env* env, const std::string& path,
                                            const RecordReaderOptions& options);
  // Opens path for sequential reading (Seek only forward).
  static std::unique_ptr<RecordReader> OpenSequential(Env* env, const std::string& path,
                                                      const RecordReaderOptions& options);
  // Reads frames from `file` (raw file bytes; the reader adds decompression per options).
  // `file` is read in blocks of options.buffer_size; a backward Seek within the block
  // last read is served from memory, so `file` should be able to rewind.
  RecordReader(std::unique_ptr<InputStream> file, std::string path,
               const RecordReaderOptions& options);
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // Reads the next record into *record. Returns false at the end of the file.
  bool ReadRecord(std::string* record);

  // Offset of the next record in the uncompressed stream.
  uint64_t offset() const { return offset_; }
  // REQUIRES: offset is a record boundary previously returned by offset() (another
  // value makes the next ReadRecord fail its length CRC).
  void Seek(uint64_t offset);

  uint64_t records_read() const { return records_read_; }
  // Records skipped because of a CRC mismatch (only with skip_corrupt_records).
  uint64_t corrupt_records() const { return corrupt_records_; }
  const std::string& path() const { return path_; }

 private:
  // can_rewind: false for a sequential file, whose backward Seek must fail as documented
  // even where the buffer still holds the bytes.
  RecordReader(std::unique_ptr<InputStream> file, std::string path,
               const RecordReaderOptions& options, bool can_rewind);
  // Reads up to n bytes appended to *out, growing it only as data arrives.
  size_t ReadInto(uint64_t n, std::string* out);
  // Handles a record cut short at `start`: false (end of file) or DataLoss.
  bool Truncated(uint64_t start, const std::string& what);
  // After a bad length CRC at `start`, slides a 12-byte window forward to the next valid
  // header. Returns false at the end of the file.
  bool Resync(uint64_t start, char header[12]);

  std::string path_;
  RecordReaderOptions options_;
  std::unique_ptr<InputStream> stream_;
  uint64_t offset_ = 0;
  uint64_t records_read_ = 0;
  uint64_t corrupt_records_ = 0;
};

}  // namespace loom

#endif  // LOOM_IO_RECORD_READER_H_
