#include "loom/io/idx.h"

#include <zlib.h>

#include <cstring>

#include "loom/base/error.h"
#include "loom/io/array_layout.h"

namespace loom {
namespace {

using io_internal::StoredType;

// deflate cannot compress better than about 1032:1.
constexpr uint64_t kMaxDeflateRatio = 1032;

StoredType TypeFromCode(const std::string& path, unsigned char code) {
  switch (code) {
    case 0x08:
      return {'u', 1, true, false};
    case 0x09:
      return {'i', 1, true, false};
    case 0x0B:
      return {'i', 2, true, false};
    case 0x0C:
      return {'i', 4, true, false};
    case 0x0D:
      return {'f', 4, true, false};
    case 0x0E:
      return {'f', 8, true, false};
  }
  throw DataLoss("IDX file '", path, "': unknown element type byte 0x", std::hex,
                 static_cast<int>(code), "; expected 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E");
}

unsigned char TypeCode(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return 0x08;
    case DType::kInt32:
      return 0x0C;
    case DType::kFloat32:
      return 0x0D;
    case DType::kFloat64:
      return 0x0E;
    default:
      return 0;
  }
}

uint32_t LoadU32BE(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Streams a gzip file's decompressed bytes. Handles concatenated gzip members.
class GzipStream {
 public:
  GzipStream(const std::string& path, const char* data, uint64_t size) : path_(path) {
    std::memset(&z_, 0, sizeof(z_));
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw Internal("inflateInit2 failed");
    next_ = reinterpret_cast<const unsigned char*>(data);
    remaining_ = size;
  }
  ~GzipStream() { inflateEnd(&z_); }

  // Fills out[0, n); returns the bytes produced (< n only at the end of the stream).
  uint64_t Read(char* out, uint64_t n) {
    uint64_t produced = 0;
    while (produced < n && !(finished_ && remaining_ == 0)) {
      if (finished_) {  // another gzip member follows
        inflateReset(&z_);
        finished_ = false;
      }
      const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(remaining_, 1u << 30));
      const uInt out_chunk = static_cast<uInt>(std::min<uint64_t>(n - produced, 1u << 30));
      z_.next_in = const_cast<unsigned char*>(next_);
      z_.avail_in = in_chunk;
      z_.next_out = reinterpret_cast<unsigned char*>(out + produced);
      z_.avail_out = out_chunk;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      const uInt used = in_chunk - z_.avail_in;
      next_ += used;
      remaining_ -= used;
      produced += out_chunk - z_.avail_out;
      if (rc == Z_STREAM_END) {
        finished_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw DataLoss("IDX file '", path_, "': gzip data is corrupt (",
                       z_.msg ? z_.msg : "inflate failed", ")");
      } else if (used == 0 && out_chunk == z_.avail_out) {
        if (remaining_ == 0) break;  // truncated: no more input
        throw DataLoss("IDX file '", path_, "': gzip stream makes no progress");
      }
    }
    return produced;
  }
  bool AtEnd() {
    char probe;
    return Read(&probe, 1) == 0;
  }

 private:
  const std::string& path_;
  z_stream z_;
  const unsigned char* next_;
  uint64_t remaining_;
  bool finished_ = false;
};

}  // namespace

Tensor ReadIdx(Env* env, const std::string& path) {
  auto region = env->MapFile(path);
  const char* file = region->data();
  const uint64_t file_size = region->size();
  const bool gzipped = file_size >= 2 && static_cast<unsigned char>(file[0]) == 0x1F &&
                       static_cast<unsigned char>(file[1]) == 0x8B;
  std::unique_ptr<GzipStream> gz;
  if (gzipped) gz = std::make_unique<GzipStream>(path, file, file_size);
  uint64_t plain_pos = 0;
  auto read = [&](char* out, uint64_t n) -> uint64_t {
    if (gz) return gz->Read(out, n);
    const uint64_t count = std::min(n, file_size - plain_pos);
    std::memcpy(out, file + plain_pos, count);
    plain_pos += count;
    return count;
  };

  unsigned char magic[4];
  if (read(reinterpret_cast<char*>(magic), 4) != 4) {
    throw DataLoss("IDX file '", path, "' is shorter than its 4-byte magic number");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    throw DataLoss("IDX file '", path, "' does not start with two zero bytes; it is not IDX",
                   gzipped ? "" : " (nor gzip)");
  }
  const StoredType type = TypeFromCode(path, magic[2]);
  const int rank = magic[3];
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    unsigned char d[4];
    if (read(reinterpret_cast<char*>(d), 4) != 4) {
      throw DataLoss("IDX file '", path, "' ends inside its ", rank, " dimensions");
    }
    dims[i] = LoadU32BE(d);
  }
  const Shape shape(std::move(dims));
  const uint64_t header_size = 4 + 4 * static_cast<uint64_t>(rank);
  const uint64_t capacity =
      gzipped ? file_size * kMaxDeflateRatio : file_size - std::min(file_size, header_size);
  const int64_t n = io_internal::CheckedNumElements(shape, UINT64_MAX / type.size,
                                                    StrCat("IDX file '", path, "'"));
  const uint64_t data_bytes = static_cast<uint64_t>(n) * type.size;
  if (data_bytes > capacity) {
    throw DataLoss("IDX file '", path, "': dimensions ", shape.ToString(), " need ", data_bytes,
                   " bytes of data but the ", file_size, "-byte ",
                   gzipped ? "compressed file cannot hold that many" : "file holds only ",
                   gzipped ? "" : StrCat(capacity), "; it is truncated or corrupt");
  }
  const DType dtype = io_internal::WidenedDType(type);
  if (!gzipped) {
    if (data_bytes != capacity) {
      throw DataLoss("IDX file '", path, "': dimensions ", shape.ToString(), " need ", data_bytes,
                     " bytes of data but the file has ", capacity,
                     " after the header; it has trailing bytes or is corrupt");
    }
    auto mapping = io_internal::BufferOverMapping(std::move(region));
    return io_internal::MakeTensorFromBytes(file + header_size, type, dtype, shape, false, mapping);
  }
  // Decompress straight into the result when no conversion is needed.
  if (type.size == 1 && dtype == DType::kUInt8) {
    Tensor t(dtype, shape);
    const uint64_t got = read(static_cast<char*>(t.raw_data()), data_bytes);
    if (got != data_bytes) {
      throw DataLoss("IDX file '", path, "': dimensions ", shape.ToString(), " need ", data_bytes,
                     " bytes of data but the gzip stream holds ", got, "; it is truncated");
    }
    if (!gz->AtEnd()) throw DataLoss("IDX file '", path, "' has trailing data after its elements");
    return t;
  }
  auto raw = Buffer::Allocate(DType::kUInt8, static_cast<int64_t>(data_bytes));
  const uint64_t got = read(static_cast<char*>(raw->data()), data_bytes);
  if (got != data_bytes) {
    throw DataLoss("IDX file '", path, "': dimensions ", shape.ToString(), " need ", data_bytes,
                   " bytes of data but the gzip stream holds ", got, "; it is truncated");
  }
  if (!gz->AtEnd()) throw DataLoss("IDX file '", path, "' has trailing data after its elements");
  return io_internal::MakeTensorFromBytes(static_cast<const char*>(raw->data()), type, dtype, shape,
                                          false, raw);
}

void WriteIdx(Env* env, const std::string& path, const Tensor& tensor) {
  const unsigned char code = TypeCode(tensor.dtype());
  if (code == 0 || tensor.rank() > 255) {
    throw InvalidArgument("cannot write a ", DTypeName(tensor.dtype()), tensor.shape(),
                          " tensor as IDX; use uint8, int32, float32 or float64, rank <= 255");
  }
  std::string out = {'\0', '\0', static_cast<char>(code), static_cast<char>(tensor.rank())};
  for (int i = 0; i < tensor.rank(); ++i) {
    const uint32_t d = static_cast<uint32_t>(tensor.dim(i));
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((d >> shift) & 0xFF);
  }
  const size_t size = DTypeSize(tensor.dtype());
  const char* data = static_cast<const char*>(tensor.raw_data());
  out.reserve(out.size() + tensor.TotalBytes());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    for (size_t b = 0; b < size; ++b) out += data[i * size + size - 1 - b];  // to big-endian
  }
  auto file = env->NewWritableFile(path);
  file->Append(out);
  file->Close();
}

}  // namespace loom
