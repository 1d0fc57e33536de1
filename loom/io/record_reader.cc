#include "loom/io/record_reader.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"
#include "loom/base/logging.h"

namespace loom {
namespace {

constexpr size_t kHeaderSize = 12;  // uint64 length + uint32 masked crc of it
constexpr size_t kFooterSize = 4;   // uint32 masked crc of the data
// Record buffers grow by at most this much beyond the bytes already received.
constexpr uint64_t kMinGrowth = 64 << 10;

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

bool HeaderValid(const char* header) {
  return crc32c::Unmask(DecodeFixed32(header + 8)) == crc32c::Value(header, 8);
}

// The first position after bytes[0] where a valid record header starts, if any: the
// sign of a torn record (a writer that stopped mid-record, then another write appended
// whole records after the fragment) rather than of bytes damaged in place.
std::optional<size_t> NextHeaderWithin(std::string_view bytes) {
  for (size_t i = 1; i + kHeaderSize <= bytes.size(); ++i) {
    if (HeaderValid(bytes.data() + i)) return i;
  }
  return std::nullopt;
}

// Reads the stream below in blocks of buffer_size, so that the three small reads of a
// record (header, data, footer) cost no system call each. Positions are those of the
// stream below. The end of the stream is never cached: a Read at the end asks the stream
// below again, which is how a reader picks up records appended to a file being written.
// A Seek inside the buffered block is served from it, except a backward Seek on a stream
// that cannot rewind (OpenSequential), which goes to that stream and fails there as before.
class BufferedInputStream final : public InputStream {
 public:
  BufferedInputStream(std::unique_ptr<InputStream> in, size_t buffer_size, bool can_rewind)
      : in_(std::move(in)),
        buffer_(std::max<size_t>(buffer_size, 1024)),
        can_rewind_(can_rewind),
        start_(in_->Tell()) {}

  size_t Read(size_t n, char* out) override {
    size_t got = Take(n, out);
    while (got < n) {
      if (n - got >= buffer_.size()) {  // large reads bypass the buffer
        start_ = in_->Tell();
        pos_ = end_ = 0;
        const size_t k = in_->Read(n - got, out + got);
        got += k;
        start_ += k;
        break;
      }
      start_ = in_->Tell();
      pos_ = 0;
      end_ = in_->Read(buffer_.size(), buffer_.data());
      if (end_ == 0) break;
      got += Take(n - got, out + got);
    }
    return got;
  }
  uint64_t Tell() const override { return start_ + pos_; }
  void Seek(uint64_t position) override {
    if (position >= start_ && position <= start_ + end_ && (can_rewind_ || position >= Tell())) {
      pos_ = position - start_;
      return;
    }
    in_->Seek(position);
    start_ = in_->Tell();
    pos_ = end_ = 0;
  }
  std::optional<uint64_t> Remaining() const override {
    std::optional<uint64_t> below = in_->Remaining();
    if (!below) return std::nullopt;
    return *below + (end_ - pos_);
  }
  bool Complete() const override { return in_->Complete(); }
  uint64_t RawPosition() const override { return in_->RawPosition(); }

 private:
  size_t Take(size_t n, char* out) {
    const size_t k = std::min(n, end_ - pos_);
    std::memcpy(out, buffer_.data() + pos_, k);
    pos_ += k;
    return k;
  }

  std::unique_ptr<InputStream> in_;
  std::vector<char> buffer_;
  bool can_rewind_;
  uint64_t start_;  // stream position of buffer_[0]
  size_t pos_ = 0;  // next unread byte of buffer_
  size_t end_ = 0;  // bytes of buffer_ that hold data
};

}  // namespace

std::unique_ptr<RecordReader> RecordReader::Open(Env* env, const std::string& path,
                                                 const RecordReaderOptions& options) {
  return std::make_unique<RecordReader>(
      NewRandomAccessInputStream(env->NewRandomAccessFile(path), path), path, options);
}

std::unique_ptr<RecordReader> RecordReader::OpenSequential(Env* env, const std::string& path,
                                                           const RecordReaderOptions& options) {
  return std::unique_ptr<RecordReader>(
      new RecordReader(NewSequentialInputStream(env->NewSequentialFile(path), path), path, options,
                       /*can_rewind=*/false));
}

RecordReader::RecordReader(std::unique_ptr<InputStream> file, std::string path,
                           const RecordReaderOptions& options)
    : RecordReader(std::move(file), std::move(path), options, /*can_rewind=*/true) {}

RecordReader::RecordReader(std::unique_ptr<InputStream> file, std::string path,
                           const RecordReaderOptions& options, bool can_rewind)
    : path_(std::move(path)), options_(options) {
  stream_ = std::make_unique<BufferedInputStream>(
      NewDecompressingInputStream(std::move(file), options_.compression, path_,
                                  options_.buffer_size),
      options_.buffer_size, can_rewind);
}

void RecordReader::Seek(uint64_t offset) {
  stream_->Seek(offset);
  offset_ = stream_->Tell();
}

size_t RecordReader::ReadInto(uint64_t n, std::string* out) {
  size_t base = out->size();
  uint64_t got = 0;
  while (got < n) {
    uint64_t chunk = std::min<uint64_t>(n - got, std::max<uint64_t>(got, kMinGrowth));
    out->resize(base + got + chunk);
    size_t k = stream_->Read(chunk, out->data() + base + got);
    got += k;
    if (k < chunk) break;
  }
  out->resize(base + got);
  return got;
}

bool RecordReader::Truncated(uint64_t start, const std::string& what) {
  if (options_.truncated_record_is_eof) {
    offset_ = start;  // the next ReadRecord seeks back here and retries
    return false;
  }
  throw DataLoss("truncated record at offset ", start,
                 options_.compression == Compression::kNone ? "" : " (uncompressed)", " in '",
                 path_, "': ", what,
                 "; the writer stopped mid-record (it was killed, or the disk filled up) and "
                 "the records before it are intact (set truncated_record_is_eof to read up to "
                 "it, or to read a file that is still being written)");
}

bool RecordReader::Resync(uint64_t start, char header[12]) {
  LOOM_LOG(WARNING) << "corrupted record header at offset " << start << " in '" << path_
                    << "'; scanning for the next valid record";
  ++corrupt_records_;
  while (true) {
    std::memmove(header, header + 1, kHeaderSize - 1);
    if (stream_->Read(1, header + kHeaderSize - 1) != 1) {
      offset_ = stream_->Tell();
      return false;
    }
    if (HeaderValid(header)) return true;
  }
}

bool RecordReader::ReadRecord(std::string* record) {
  if (stream_->Tell() != offset_) stream_->Seek(offset_);
  while (true) {
    uint64_t start = offset_;
    char header[kHeaderSize];
    size_t n = stream_->Read(kHeaderSize, header);
    if (n == 0) {
      if (!stream_->Complete()) {
        return Truncated(start, StrCat("the ", CompressionName(options_.compression),
                                       " stream ends without its end marker"));
      }
      return false;
    }
    if (n < kHeaderSize) {
      return Truncated(start, StrCat("only ", n, " of the 12 header bytes are present"));
    }
    if (!HeaderValid(header)) {
      if (!options_.skip_corrupt_records) {
        throw DataLoss("corrupted record at offset ", start,
                       options_.compression == Compression::kNone ? "" : " (uncompressed)", " in '",
                       path_,
                       "': length crc mismatch; the file is damaged or is not a TFRecord file "
                       "(check the compression type: ",
                       CompressionName(options_.compression),
                       "). Set skip_corrupt_records to skip damaged records");
      }
      if (!Resync(start, header)) return false;
      start = stream_->Tell() - kHeaderSize;
    }
    uint64_t length = DecodeFixed64(header);
    std::optional<uint64_t> remaining = stream_->Remaining();
    if (remaining && (*remaining < kFooterSize || length > *remaining - kFooterSize)) {
      return Truncated(start, StrCat("the header says ", length, " data bytes but only ",
                                     *remaining, " bytes follow it"));
    }
    record->clear();
    if (ReadInto(length, record) < length) {
      return Truncated(start, StrCat("the header says ", length, " data bytes but only ",
                                     record->size(), " are present"));
    }
    char footer[kFooterSize];
    if (stream_->Read(kFooterSize, footer) < kFooterSize) {
      return Truncated(start, "the data crc is missing");
    }
    offset_ = stream_->Tell();
    if (crc32c::Unmask(DecodeFixed32(footer)) != crc32c::Value(*record)) {
      if (!options_.skip_corrupt_records) {
        std::string span(header, kHeaderSize);
        span += *record;
        span.append(footer, kFooterSize);
        if (std::optional<size_t> next = NextHeaderWithin(span)) {
          throw DataLoss("torn record at offset ", start,
                         options_.compression == Compression::kNone ? "" : " (uncompressed)",
                         " in '", path_,
                         "': the writer stopped mid-record (a full disk or a "
                         "crash) and later writes appended records after the fragment, the "
                         "next one at offset ",
                         start + *next, ". Set skip_corrupt_records to skip damaged records");
        }
        throw DataLoss("corrupted record at offset ", start,
                       options_.compression == Compression::kNone ? "" : " (uncompressed)", " in '",
                       path_, "': data crc mismatch (record of ", length,
                       " bytes); the file is damaged. Set skip_corrupt_records to skip "
                       "damaged records");
      }
      LOOM_LOG(WARNING) << "skipping record at offset " << start << " in '" << path_
                        << "': data crc mismatch";
      ++corrupt_records_;
      continue;
    }
    ++records_read_;
    return true;
  }
}

}  // namespace loom
