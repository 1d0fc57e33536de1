#include "loom/io/byte_stream.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "loom/base/check.h"
#include "loom/base/error.h"

namespace loom {

Compression ParseCompression(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.empty() || upper == "NONE") return Compression::kNone;
  if (upper == "ZLIB") return Compression::kZlib;
  if (upper == "GZIP") return Compression::kGzip;
  throw InvalidArgument("unknown compression type '", name,
                        "'; use \"\" or \"NONE\", \"ZLIB\" or \"GZIP\"");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "NONE";
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kGzip:
      return "GZIP";
  }
  return "?";
}

namespace {

// zlib window bits: 15 for a zlib header, +16 for a gzip header.
int WindowBits(Compression c) { return c == Compression::kGzip ? MAX_WBITS + 16 : MAX_WBITS; }

class RandomAccessInputStream final : public InputStream {
 public:
  RandomAccessInputStream(std::unique_ptr<RandomAccessFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}

  size_t Read(size_t n, char* out) override {
    size_t got = 0;
    while (got < n) {
      size_t k = file_->Read(pos_ + got, n - got, out + got);
      if (k == 0) break;
      got += k;
    }
    pos_ += got;
    return got;
  }
  uint64_t Tell() const override { return pos_; }
  void Seek(uint64_t position) override { pos_ = std::min(position, file_->Size()); }
  std::optional<uint64_t> Remaining() const override {
    uint64_t size = file_->Size();
    return size > pos_ ? size - pos_ : 0;
  }

 private:
  std::unique_ptr<RandomAccessFile> file_;
  std::string path_;
  uint64_t pos_ = 0;
};

class SequentialInputStream final : public InputStream {
 public:
  SequentialInputStream(std::unique_ptr<SequentialFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}

  size_t Read(size_t n, char* out) override {
    size_t got = 0;
    while (got < n) {
      size_t k = file_->Read(n - got, out + got);
      if (k == 0) break;
      got += k;
    }
    pos_ += got;
    return got;
  }
  uint64_t Tell() const override { return pos_; }
  void Seek(uint64_t position) override {
    if (position < pos_) {
      throw FailedPrecondition("cannot seek back to offset ", position, " in '", path_,
                               "' (now at ", pos_,
                               "): it was opened as a sequential file; open it for random "
                               "access to restore earlier positions");
    }
    // Read rather than Skip so that Tell() stays exact at the end of the file.
    std::vector<char> scratch(std::min<uint64_t>(position - pos_, 64 << 10));
    while (pos_ < position) {
      if (Read(std::min<uint64_t>(position - pos_, scratch.size()), scratch.data()) == 0) break;
    }
  }

 private:
  std::unique_ptr<SequentialFile> file_;
  std::string path_;
  uint64_t pos_ = 0;
};

class DecompressingInputStream final : public InputStream {
 public:
  DecompressingInputStream(std::unique_ptr<InputStream> raw, Compression compression,
                           std::string path, size_t buffer_size)
      : raw_(std::move(raw)),
        compression_(compression),
        path_(std::move(path)),
        in_buf_(std::max<size_t>(buffer_size, 1024)) {
    int rc = inflateInit2(&strm_, WindowBits(compression_));
    if (rc != Z_OK) throw Internal("inflateInit2 failed for '", path_, "' (zlib code ", rc, ")");
  }
  ~DecompressingInputStream() override { inflateEnd(&strm_); }

  size_t Read(size_t n, char* out) override {
    size_t got = 0;
    raw_eof_ = false;  // a file being written may have grown since the last call
    while (got < n) {
      if (strm_.avail_in == 0 && !raw_eof_) {
        size_t k = raw_->Read(in_buf_.size(), in_buf_.data());
        strm_.next_in = reinterpret_cast<Bytef*>(in_buf_.data());
        strm_.avail_in = static_cast<uInt>(k);
        if (k == 0) raw_eof_ = true;
      }
      if (strm_.avail_in == 0) break;  // end of the file, complete or not
      if (!in_member_) {
        // A new gzip member (or zlib stream) starts after the previous one ended.
        if (member_count_ > 0) inflateReset(&strm_);
        in_member_ = true;
        ++member_count_;
      }
      strm_.next_out = reinterpret_cast<Bytef*>(out + got);
      strm_.avail_out = static_cast<uInt>(std::min<size_t>(n - got, 1u << 30));
      size_t before = strm_.avail_out;
      int rc = inflate(&strm_, Z_NO_FLUSH);
      got += before - strm_.avail_out;
      if (rc == Z_STREAM_END) {
        in_member_ = false;
      } else if (rc == Z_BUF_ERROR) {
        // No progress possible: needs more input, which the next loop iteration reads.
        continue;
      } else if (rc != Z_OK) {
        throw DataLoss("corrupt ", CompressionName(compression_), " data in '", path_,
                       "' near compressed byte ", RawPosition(), ": ",
                       strm_.msg ? strm_.msg : "zlib error", " (zlib code ", rc,
                       "); the file is damaged or was written with another compression type");
      }
    }
    pos_ += got;
    return got;
  }

  uint64_t Tell() const override { return pos_; }

  void Seek(uint64_t position) override {
    if (position < pos_) {
      raw_->Seek(0);  // throws for a sequential file
      inflateReset(&strm_);
      strm_.avail_in = 0;
      pos_ = 0;
      in_member_ = false;
      member_count_ = 0;
      raw_eof_ = false;
    }
    std::vector<char> scratch(std::min<uint64_t>(position - pos_, 64 << 10));
    while (pos_ < position) {
      if (Read(std::min<uint64_t>(position - pos_, scratch.size()), scratch.data()) == 0) break;
    }
  }

  bool Complete() const override { return !in_member_; }
  uint64_t RawPosition() const override { return raw_->Tell() - strm_.avail_in; }

 private:
  std::unique_ptr<InputStream> raw_;
  Compression compression_;
  std::string path_;
  std::vector<char> in_buf_;
  z_stream strm_{};
  uint64_t pos_ = 0;
  bool raw_eof_ = false;
  bool in_member_ = false;  // inside a member whose end marker has not been seen
  int64_t member_count_ = 0;
};

class FileOutputStream final : public OutputStream {
 public:
  FileOutputStream(std::unique_ptr<WritableFile> file, std::string path, uint64_t initial_size)
      : file_(std::move(file)), path_(std::move(path)), initial_size_(initial_size) {}

  void Append(std::string_view data) override {
    LOOM_CHECK(!closed_) << "Append after Close on '" << path_ << "'";
    file_->Append(data);
    pos_ += data.size();
  }
  void Flush() override { file_->Flush(); }
  void Sync() override { file_->Sync(); }
  void Close() override {
    if (closed_) return;
    closed_ = true;
    file_->Close();
  }
  uint64_t Tell() const override { return pos_; }
  void Truncate(uint64_t position) override {
    LOOM_CHECK(!closed_) << "Truncate after Close on '" << path_ << "'";
    LOOM_CHECK_LE(position, pos_);
    file_->Truncate(initial_size_ + position);
    pos_ = position;
  }

 private:
  std::unique_ptr<WritableFile> file_;
  std::string path_;
  uint64_t initial_size_;
  uint64_t pos_ = 0;
  bool closed_ = false;
};

class CompressingOutputStream final : public OutputStream {
 public:
  CompressingOutputStream(std::unique_ptr<OutputStream> raw, Compression compression, int level,
                          std::string path, size_t buffer_size)
      : raw_(std::move(raw)),
        compression_(compression),
        path_(std::move(path)),
        out_buf_(std::max<size_t>(buffer_size, 1024)) {
    int rc =
        deflateInit2(&strm_, level, Z_DEFLATED, WindowBits(compression_), 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) {
      throw InvalidArgument("cannot start ", CompressionName(compression_), " compression for '",
                            path_, "' at level ", level, " (zlib code ", rc,
                            "); use a level from -1 to 9");
    }
  }
  ~CompressingOutputStream() override { deflateEnd(&strm_); }

  void Append(std::string_view data) override {
    LOOM_CHECK(!closed_) << "Append after Close on '" << path_ << "'";
    strm_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    strm_.avail_in = static_cast<uInt>(data.size());
    LOOM_CHECK_EQ(static_cast<size_t>(strm_.avail_in), data.size());
    Deflate(Z_NO_FLUSH);
    pos_ += data.size();
  }
  void Flush() override {
    LOOM_CHECK(!closed_);
    Deflate(Z_SYNC_FLUSH);
    raw_->Flush();
  }
  void Sync() override {
    Flush();
    raw_->Sync();
  }
  void Close() override {
    if (closed_) return;
    closed_ = true;
    Deflate(Z_FINISH);
    raw_->Close();
  }
  uint64_t Tell() const override { return pos_; }
  void Truncate(uint64_t) override {
    throw Unimplemented("cannot take back bytes of the ", CompressionName(compression_),
                        " stream of '", path_, "': a compressor cannot be rewound");
  }

 private:
  // Runs deflate until the input is consumed and, for a flush, all output is written.
  void Deflate(int flush) {
    while (true) {
      strm_.next_out = reinterpret_cast<Bytef*>(out_buf_.data());
      strm_.avail_out = static_cast<uInt>(out_buf_.size());
      int rc = deflate(&strm_, flush);
      if (rc == Z_STREAM_ERROR) {
        throw Internal("zlib deflate failed while writing '", path_, "'");
      }
      size_t produced = out_buf_.size() - strm_.avail_out;
      if (produced > 0) raw_->Append(std::string_view(out_buf_.data(), produced));
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) return;
      } else if (strm_.avail_in == 0 && strm_.avail_out != 0) {
        return;
      }
    }
  }

  std::unique_ptr<OutputStream> raw_;
  Compression compression_;
  std::string path_;
  std::vector<char> out_buf_;
  z_stream strm_{};
  uint64_t pos_ = 0;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<InputStream> NewRandomAccessInputStream(std::unique_ptr<RandomAccessFile> file,
                                                        std::string path) {
  return std::make_unique<RandomAccessInputStream>(std::move(file), std::move(path));
}

std::unique_ptr<InputStream> NewSequentialInputStream(std::unique_ptr<SequentialFile> file,
                                                      std::string path) {
  return std::make_unique<SequentialInputStream>(std::move(file), std::move(path));
}

std::unique_ptr<InputStream> NewDecompressingInputStream(std::unique_ptr<InputStream> raw,
                                                         Compression compression, std::string path,
                                                         size_t buffer_size) {
  if (compression == Compression::kNone) return raw;
  return std::make_unique<DecompressingInputStream>(std::move(raw), compression, std::move(path),
                                                    buffer_size);
}

std::unique_ptr<OutputStream> NewFileOutputStream(std::unique_ptr<WritableFile> file,
                                                  std::string path, uint64_t initial_size) {
  return std::make_unique<FileOutputStream>(std::move(file), std::move(path), initial_size);
}

std::unique_ptr<OutputStream> NewCompressingOutputStream(std::unique_ptr<OutputStream> raw,
                                                         Compression compression, int level,
                                                         std::string path, size_t buffer_size) {
  if (compression == Compression::kNone) return raw;
  return std::make_unique<CompressingOutputStream>(std::move(raw), compression, level,
                                                   std::move(path), buffer_size);
}

}  // namespace loom
