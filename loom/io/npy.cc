#include "loom/io/npy.h"

#include <cctype>
#include <cstring>
#include <map>
#include <variant>
#include <vector>

#include "loom/base/error.h"
#include "loom/io/array_layout.h"

namespace loom {
namespace {

using io_internal::StoredType;

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// numpy (1.x) loads arrays of at most 32 dimensions (NPY_MAXDIMS).
constexpr int kMaxNpyRank = 32;

// A value in the header dict: a string, a bool, or a tuple of integers.
using HeaderValue = std::variant<std::string, bool, std::vector<int64_t>>;

// Parses the Python dict literal numpy writes. Only the forms numpy produces are accepted.
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string_view text) : path_(path), text_(text) {}

  std::map<std::string, HeaderValue> ParseDict() {
    std::map<std::string, HeaderValue> dict;
    Expect('{');
    for (;;) {
      SkipSpace();
      if (Peek() == '}') break;
      std::string key = ParseString();
      Expect(':');
      dict[key] = ParseValue(key);
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() != '}') throw Bad("expected ',' or '}'");
    }
    ++pos_;
    return dict;
  }

 private:
  Error Bad(std::string_view what) const {
    return DataLoss("npy file '", path_, "': malformed header at character ", pos_, " (", what,
                    "): ", text_);
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  void Expect(char c) {
    if (Peek() != c) throw Bad(StrCat("expected '", c, "'"));
    ++pos_;
  }
  std::string ParseString() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') throw Bad("expected a quoted string");
    const size_t end = text_.find(quote, ++pos_);
    if (end == std::string_view::npos) throw Bad("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  HeaderValue ParseValue(const std::string& key) {
    const char c = Peek();
    if (c == '\'' || c == '"') return ParseString();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    if (c == '(') return ParseTuple();
    if (c == '[' && key == "descr") {
      throw Unimplemented("npy file '", path_,
                          "' holds a structured dtype; Loom reads only plain numeric arrays");
    }
    throw Bad(StrCat("unexpected value for '", key, "'"));
  }
  std::vector<int64_t> ParseTuple() {
    Expect('(');
    std::vector<int64_t> dims;
    for (;;) {
      if (Peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) throw Bad("expected a dimension");
      int64_t d = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (d > (int64_t{1} << 56)) throw Bad("dimension too large");
        d = d * 10 + (text_[pos_++] - '0');
      }
      if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;  // Python 2
      dims.push_back(d);
      if (Peek() == ',')
        ++pos_;
      else if (Peek() != ')')
        throw Bad("expected ',' or ')' in the shape");
    }
    ++pos_;
    return dims;
  }

  const std::string& path_;
  std::string_view text_;
  size_t pos_ = 0;
};

// Splits a descr like "<f4" into a stored type; throws Unimplemented for kinds Loom lacks.
StoredType ParseDescr(const std::string& path, const std::string& descr) {
  auto unsupported = [&](std::string_view why) {
    return Unimplemented("npy file '", path, "' has dtype '", descr, "' (", why,
                         "); Loom reads float16/32/64, int8..64, uint8..32 and bool arrays");
  };
  if (descr.size() < 2) throw DataLoss("npy file '", path, "': invalid descr '", descr, "'");
  size_t i = 0;
  bool big_endian = false;
  if (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=') {
    big_endian = descr[0] == '>';
    i = 1;
  }
  const char kind = descr[i++];
  int size = 0;
  for (; i < descr.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(descr[i])) || size > 1000) {
      throw unsupported("not a plain numeric type");
    }
    size = size * 10 + (descr[i] - '0');
  }
  switch (kind) {
    case 'O':
      throw unsupported("Python objects");
    case 'U':
    case 'S':
    case 'a':
      throw unsupported("strings");
    case 'c':
      throw unsupported("complex numbers");
    case 'M':
    case 'm':
      throw unsupported("dates and times");
    case 'V':
      throw unsupported("raw bytes");
    case 'f':
    case 'i':
    case 'u':
    case 'b':
      break;
    default:
      throw unsupported("unknown kind");
  }
  StoredType type{kind, size, big_endian, false};
  if (io_internal::WidenedDType(type) == DType::kInvalid)
    throw unsupported("no Loom dtype holds it");
  return type;
}

uint64_t LoadLE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Parses the header from the first bytes of the file (`prefix`, `available` of them).
NpyHeader ParseNpyHeader(const std::string& path, const char* prefix, uint64_t available,
                         uint64_t file_size) {
  if (available < 10 || std::memcmp(prefix, kMagic, kMagicSize) != 0) {
    throw DataLoss("npy file '", path, "' does not start with the magic \"\\x93NUMPY\"",
                   available < 10 ? " (it is too short)" : "", "; it is not a .npy file");
  }
  NpyHeader header;
  header.major_version = static_cast<unsigned char>(prefix[6]);
  header.minor_version = static_cast<unsigned char>(prefix[7]);
  int length_bytes;
  if (header.major_version == 1) {
    length_bytes = 2;
  } else if (header.major_version == 2 || header.major_version == 3) {
    length_bytes = 4;
  } else {
    throw Unimplemented("npy file '", path, "' has format version ", header.major_version, ".",
                        header.minor_version, "; Loom reads versions 1, 2 and 3");
  }
  if (available < 8u + length_bytes) throw DataLoss("npy file '", path, "' is truncated");
  const uint64_t header_length = LoadLE(prefix + 8, length_bytes);
  header.data_offset = 8 + length_bytes + header_length;
  if (header.data_offset > file_size) {
    throw DataLoss("npy file '", path, "': header length ", header_length,
                   " runs past the end of the ", file_size, "-byte file; it is truncated");
  }
  if (header.data_offset > available) throw DataLoss("npy file '", path, "': short read");
  const std::string_view text(prefix + 8 + length_bytes, header_length);
  auto dict = HeaderParser(path, text).ParseDict();
  auto descr = dict.find("descr");
  auto fortran = dict.find("fortran_order");
  auto shape = dict.find("shape");
  if (descr == dict.end() || !std::holds_alternative<std::string>(descr->second) ||
      fortran == dict.end() || !std::holds_alternative<bool>(fortran->second) ||
      shape == dict.end() || !std::holds_alternative<std::vector<int64_t>>(shape->second)) {
    throw DataLoss("npy file '", path,
                   "': the header needs 'descr' (string), 'fortran_order' (bool) and "
                   "'shape' (tuple): ",
                   text);
  }
  header.descr = std::get<std::string>(descr->second);
  header.fortran_order = std::get<bool>(fortran->second);
  header.shape = Shape(std::get<std::vector<int64_t>>(shape->second));
  return header;
}

std::string_view DescrFor(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "<f4";
    case DType::kFloat64:
      return "<f8";
    case DType::kInt32:
      return "<i4";
    case DType::kInt64:
      return "<i8";
    case DType::kUInt8:
      return "|u1";
    case DType::kBool:
      return "|b1";
    default:
      return "";
  }
}

}  // namespace

NpyHeader ReadNpyHeader(Env* env, const std::string& path) {
  auto file = env->NewRandomAccessFile(path);
  const uint64_t size = file->Size();
  char fixed[12] = {0};
  const size_t got = file->Read(0, std::min<uint64_t>(12, size), fixed);
  uint64_t want = 12;
  if (got >= 10 && std::memcmp(fixed, kMagic, kMagicSize) == 0) {
    want = fixed[6] == 1 ? 10 + LoadLE(fixed + 8, 2) : 12 + LoadLE(fixed + 8, 4);
  }
  want = std::min<uint64_t>(want, size);
  std::string prefix(want, '\0');
  const size_t n = file->Read(0, want, prefix.data());
  return ParseNpyHeader(path, prefix.data(), n, size);
}

Tensor ReadNpy(Env* env, const std::string& path, const NpyReadOptions& options) {
  auto region = env->MapFile(path);
  const uint64_t file_size = region->size();
  const NpyHeader header = ParseNpyHeader(path, region->data(), file_size, file_size);
  const StoredType type = ParseDescr(path, header.descr);
  const DType dtype = io_internal::WidenedDType(type);
  const bool exact =
      io_internal::IsNativeLayout(StoredType{type.kind, type.size, false, false}, dtype);
  if (!exact && !options.convert_unsupported_dtypes) {
    throw Unimplemented("npy file '", path, "' has dtype '", header.descr,
                        "', which Loom holds only after conversion to ", DTypeName(dtype),
                        " (set convert_unsupported_dtypes)");
  }
  const uint64_t data_size = file_size - header.data_offset;
  const int64_t n = io_internal::CheckedNumElements(header.shape, UINT64_MAX / type.size,
                                                    StrCat("npy file '", path, "'"));
  const uint64_t expected = static_cast<uint64_t>(n) * type.size;
  if (expected != data_size) {
    throw DataLoss("npy file '", path, "': shape ", header.shape.ToString(), " of '", header.descr,
                   "' needs ", expected, " data bytes after the ", header.data_offset,
                   "-byte header, but the file has ", data_size,
                   expected > data_size ? "; it is truncated" : "; it has trailing bytes");
  }
  const char* data = region->data() + header.data_offset;
  auto mapping = io_internal::BufferOverMapping(std::move(region));
  return io_internal::MakeTensorFromBytes(data, type, dtype, header.shape, header.fortran_order,
                                          mapping);
}

std::string EncodeNpyHeader(DType dtype, const Shape& shape) {
  const std::string_view descr = DescrFor(dtype);
  if (descr.empty()) {
    throw InvalidArgument("cannot write a ", DTypeName(dtype),
                          " tensor as .npy; use float32, float64, int32, int64, uint8 or bool");
  }
  if (shape.rank() > kMaxNpyRank) {
    throw InvalidArgument("cannot write a rank-", shape.rank(), " tensor ", shape.ToString(),
                          " as .npy: numpy loads at most ", kMaxNpyRank,
                          " dimensions; reshape it first");
  }
  std::string dims;
  for (int i = 0; i < shape.rank(); ++i) dims += StrCat(i ? ", " : "", shape.dim(i));
  if (shape.rank() == 1) dims += ",";
  std::string dict =
      StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", dims, "), }");
  // Pad with spaces and end with '\n' so that the data starts at a multiple of 64. With at
  // most 32 dims the dict stays far below version 1.0's 65535-byte limit.
  constexpr size_t prefix = 10;
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicSize);
  out += '\x01';
  out += '\0';
  uint64_t len = dict.size();
  for (size_t i = 0; i < prefix - 8; ++i, len >>= 8) out += static_cast<char>(len & 0xFF);
  return out + dict;
}

void WriteNpy(Env* env, const std::string& path, const Tensor& tensor,
              const NpyWriteOptions& options) {
  LOOM_CHECK(tensor.defined()) << "WriteNpy of an undefined tensor";
  const std::string header = EncodeNpyHeader(tensor.dtype(), tensor.shape());
  io_internal::WriteFileWith(env, path, options.atomic, [&](WritableFile& file) {
    file.Append(header);
    file.Append(std::string_view(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes()));
  });
}

}  // namespace loom
