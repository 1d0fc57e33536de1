#include "loom/io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "loom/base/error.h"
#include "loom/io/array_layout.h"

namespace loom {
namespace {

using io_internal::StoredType;

// The reference implementation refuses headers above 100 MB; so do we, so that a corrupt
// length cannot make us read (or allocate) gigabytes of "JSON".
constexpr uint64_t kMaxHeaderLength = 100'000'000;

struct FileDType {
  std::string_view name;
  StoredType stored;
  bool supported;  // false: known to safetensors, not convertible (F8 variants, U64)
};

constexpr FileDType kFileDTypes[] = {
    {"BOOL", {'b', 1, false, false}, true},     {"U8", {'u', 1, false, false}, true},
    {"I8", {'i', 1, false, false}, true},       {"I16", {'i', 2, false, false}, true},
    {"U16", {'u', 2, false, false}, true},      {"F16", {'f', 2, false, false}, true},
    {"BF16", {'f', 2, false, true}, true},      {"I32", {'i', 4, false, false}, true},
    {"U32", {'u', 4, false, false}, true},      {"F32", {'f', 4, false, false}, true},
    {"I64", {'i', 8, false, false}, true},      {"U64", {'u', 8, false, false}, false},
    {"F64", {'f', 8, false, false}, true},      {"F8_E4M3", {'f', 1, false, false}, false},
    {"F8_E5M2", {'f', 1, false, false}, false},
};

const FileDType* FindFileDType(std::string_view name) {
  for (const auto& d : kFileDTypes)
    if (d.name == name) return &d;
  return nullptr;
}

std::string_view FileDTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "F32";
    case DType::kFloat64:
      return "F64";
    case DType::kInt32:
      return "I32";
    case DType::kInt64:
      return "I64";
    case DType::kUInt8:
      return "U8";
    case DType::kBool:
      return "BOOL";
    default:
      return "";
  }
}

// Deeper than any safetensors header needs (root object, tensor entry, shape array).
constexpr int kMaxJsonDepth = 16;

// True when brackets outside strings nest deeper than `limit`. Runs before the JSON parser
// so that nothing (parsing, destruction, dump() in messages) ever recurses by a depth the
// file chose; the parser then judges the syntax.
bool NestsDeeperThan(std::string_view json_text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

uint64_t LoadU64LE(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

SafetensorsEntry ParseEntry(const std::string& path, const std::string& name,
                            const nlohmann::json& value) {
  auto bad = [&](const auto&... what) {
    return DataLoss("safetensors file '", path, "': tensor '", name, "' ", what...,
                    "; the file is corrupt or not safetensors");
  };
  if (!value.is_object()) throw bad("is not a JSON object");
  SafetensorsEntry entry;
  entry.name = name;
  auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) throw bad("has no string \"dtype\"");
  entry.dtype = dtype->get<std::string>();
  const FileDType* file_dtype = FindFileDType(entry.dtype);
  if (file_dtype == nullptr) throw bad("has unknown dtype \"", entry.dtype, "\"");
  auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) throw bad("has no \"shape\" array");
  std::vector<int64_t> dims;
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t{1} << 62)) {
      // Only a number is shown: dump() of a container would print (and recurse over) it.
      throw bad("has an invalid dimension ", d.is_number() ? d.dump() : d.type_name(),
                " in its shape");
    }
    dims.push_back(d.get<int64_t>());
  }
  entry.shape = Shape(std::move(dims));
  auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    throw bad("has no \"data_offsets\" pair of non-negative integers");
  }
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.end < entry.begin) {
    throw bad("has data_offsets [", entry.begin, ",", entry.end, "] that end before they begin");
  }
  const uint64_t size = file_dtype->stored.size;
  const uint64_t n = io_internal::CheckedNumElements(
      entry.shape, UINT64_MAX / size, StrCat("safetensors file '", path, "': tensor '", name, "'"));
  if (n * size != entry.end - entry.begin) {
    throw bad("has shape ", entry.shape.ToString(), " and dtype ", entry.dtype, " (", n * size,
              " bytes) but data_offsets [", entry.begin, ",", entry.end, "] span ",
              entry.end - entry.begin, " bytes");
  }
  return entry;
}

SafetensorsIndex ParseHeader(const std::string& path, std::string_view json_text,
                             uint64_t file_size) {
  SafetensorsIndex index;
  index.header_length = json_text.size();
  index.file_size = file_size;
  if (NestsDeeperThan(json_text, kMaxJsonDepth)) {
    throw DataLoss("safetensors file '", path, "': the header nests JSON deeper than ",
                   kMaxJsonDepth, " levels; the file is corrupt or not safetensors");
  }
  nlohmann::json header;
  // The JSON object keeps the last of two equal keys; safetensors readers must reject them.
  std::set<std::string> names;
  std::optional<std::string> duplicate;
  auto note_key = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && !duplicate &&
        !names.insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    header = nlohmann::json::parse(json_text, note_key);
  } catch (const nlohmann::json::exception& e) {
    throw DataLoss("safetensors file '", path, "': the header is not valid JSON (", e.what(),
                   "); the file is corrupt or not safetensors");
  }
  if (duplicate) {
    throw DataLoss("safetensors file '", path, "': the header names '", *duplicate,
                   "' more than once; the file is corrupt");
  }
  if (!header.is_object()) {
    throw DataLoss("safetensors file '", path, "': the header is not a JSON object");
  }
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        throw DataLoss("safetensors file '", path, "': __metadata__ is not a JSON object");
      }
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          throw DataLoss("safetensors file '", path, "': __metadata__ value for '", mkey,
                         "' is not a string");
        }
        index.metadata[mkey] = mvalue.get<std::string>();
      }
      continue;
    }
    index.tensors.push_back(ParseEntry(path, key, value));
  }
  std::stable_sort(index.tensors.begin(), index.tensors.end(), [](const auto& a, const auto& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  // The data must be covered exactly: no gaps, no overlaps, nothing after the last tensor.
  const uint64_t data_size = file_size - 8 - index.header_length;
  uint64_t expected = 0;
  for (const auto& t : index.tensors) {
    if (t.begin != expected) {
      throw DataLoss("safetensors file '", path, "': tensor '", t.name, "' starts at data byte ",
                     t.begin, " but the previous tensor ends at ", expected,
                     t.begin < expected ? " (tensors overlap)" : " (a gap)",
                     "; the file is corrupt");
    }
    if (t.end > data_size) {
      throw DataLoss("safetensors file '", path, "': tensor '", t.name, "' ends at byte ",
                     8 + index.header_length + t.end, " but the file has ", file_size,
                     " bytes; the file is truncated or corrupt");
    }
    expected = t.end;
  }
  if (expected != data_size) {
    throw DataLoss("safetensors file '", path, "': the tensors cover ", expected,
                   " data bytes but the file holds ", data_size,
                   "; the file has trailing bytes or is corrupt");
  }
  return index;
}

uint64_t CheckHeaderLength(const std::string& path, const char* prefix, uint64_t file_size) {
  if (file_size < 8) {
    throw DataLoss("safetensors file '", path, "' has ", file_size,
                   " bytes, fewer than the 8-byte header length; it is truncated");
  }
  const uint64_t n = LoadU64LE(prefix);
  if (n > file_size - 8 || n > kMaxHeaderLength) {
    throw DataLoss("safetensors file '", path, "': header length ", n, " exceeds the file size ",
                   file_size, n > kMaxHeaderLength ? " or the 100 MB limit" : "",
                   "; the file is truncated or not safetensors");
  }
  return n;
}

}  // namespace

SafetensorsIndex ReadSafetensorsIndex(Env* env, const std::string& path) {
  auto file = env->NewRandomAccessFile(path);
  const uint64_t file_size = file->Size();
  char prefix[8] = {0};
  file->Read(0, std::min<uint64_t>(8, file_size), prefix);
  const uint64_t n = CheckHeaderLength(path, prefix, file_size);
  std::string json_text(n, '\0');
  if (file->Read(8, n, json_text.data()) != n) {
    throw DataLoss("safetensors file '", path, "': short read of the header");
  }
  return ParseHeader(path, json_text, file_size);
}

std::unique_ptr<SafetensorsReader> SafetensorsReader::Open(Env* env, const std::string& path,
                                                           const SafetensorsReadOptions& options) {
  std::unique_ptr<SafetensorsReader> reader(new SafetensorsReader());
  reader->path_ = path;
  reader->options_ = options;
  auto region = env->MapFile(path);
  const char* data = region->data();
  const uint64_t file_size = region->size();
  const uint64_t n = CheckHeaderLength(path, data, file_size);
  reader->index_ = ParseHeader(path, std::string_view(data + 8, n), file_size);
  reader->data_start_ = 8 + n;
  for (size_t i = 0; i < reader->index_.tensors.size(); ++i) {
    reader->by_name_[reader->index_.tensors[i].name] = i;
  }
  reader->mapping_ = io_internal::BufferOverMapping(std::move(region));
  return reader;
}

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  for (const auto& t : index_.tensors) out.push_back(t.name);
  return out;
}

Tensor SafetensorsReader::Get(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    throw NotFound("safetensors file '", path_, "' has no tensor '", name, "'");
  }
  const SafetensorsEntry& entry = index_.tensors[it->second];
  const FileDType* file_dtype = FindFileDType(entry.dtype);
  const DType dtype = io_internal::WidenedDType(file_dtype->stored);
  const bool native =
      dtype != DType::kInvalid && io_internal::IsNativeLayout(file_dtype->stored, dtype);
  if (!file_dtype->supported || dtype == DType::kInvalid ||
      (!native && !options_.convert_unsupported_dtypes)) {
    throw Unimplemented("safetensors file '", path_, "': tensor '", name, "' has dtype ",
                        entry.dtype, ", which Loom does not support",
                        file_dtype->supported
                            ? " without conversion (set convert_unsupported_dtypes)"
                            : "; convert the file to F32, F64, I32, I64, U8 or BOOL");
  }
  const char* bytes = static_cast<const char*>(mapping_->data()) + data_start_ + entry.begin;
  return io_internal::MakeTensorFromBytes(bytes, file_dtype->stored, dtype, entry.shape,
                                          /*fortran_order=*/false, mapping_);
}

std::map<std::string, Tensor> ReadSafetensors(Env* env, const std::string& path,
                                              const SafetensorsReadOptions& options) {
  auto reader = SafetensorsReader::Open(env, path, options);
  std::map<std::string, Tensor> out;
  for (const auto& t : reader->index().tensors) out[t.name] = reader->Get(t.name);
  return out;
}

std::vector<size_t> SafetensorsDataOrder(
    const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto size_of = [&](size_t i) {
    return tensors[i].second.defined() ? DTypeSize(tensors[i].second.dtype()) : size_t{0};
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return size_of(a) > size_of(b); });
  return order;
}

std::vector<SafetensorsEntry> SafetensorsLayout(
    const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<SafetensorsEntry> layout;
  uint64_t offset = 0;
  for (size_t i : SafetensorsDataOrder(tensors)) {
    const Tensor& t = tensors[i].second;
    layout.push_back({.name = tensors[i].first,
                      .dtype = std::string(FileDTypeName(t.dtype())),
                      .shape = t.shape(),
                      .begin = offset,
                      .end = offset + t.TotalBytes()});
    offset += t.TotalBytes();
  }
  return layout;
}

void WriteSafetensors(Env* env, const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata,
                      const SafetensorsWriteOptions& options) {
  // No gaps are allowed between tensors (the format forbids holes), so alignment comes
  // from the order: 8-byte element types first, then 4, 2 and 1 (stable: the given order
  // within a size, as the reference writer orders by alignment). Every tensor then starts
  // at a multiple of its element size and can be mapped without a copy.
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (size_t i : SafetensorsDataOrder(tensors)) order.push_back(&tensors[i]);
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto* entry : order) {
    const auto& [name, tensor] = *entry;
    if (name.empty() || name == "__metadata__") {
      throw InvalidArgument("writing safetensors file '", path, "': invalid tensor name '", name,
                            "'");
    }
    if (header.contains(name)) {
      throw InvalidArgument("writing safetensors file '", path, "': tensor name '", name,
                            "' appears twice");
    }
    if (!tensor.defined() || FileDTypeName(tensor.dtype()).empty()) {
      throw InvalidArgument("writing safetensors file '", path, "': tensor '", name, "' has dtype ",
                            DTypeName(tensor.dtype()),
                            "; safetensors holds float32, float64, int32, int64, uint8, bool");
    }
    header[name] = {{"dtype", FileDTypeName(tensor.dtype())},
                    {"shape", tensor.shape().dims()},
                    {"data_offsets", {offset, offset + tensor.TotalBytes()}}};
    offset += tensor.TotalBytes();
  }
  std::string json_text = header.dump();
  json_text.append((8 - json_text.size() % 8) % 8, ' ');
  char prefix[8];
  uint64_t n = json_text.size();
  for (int i = 0; i < 8; ++i, n >>= 8) prefix[i] = static_cast<char>(n & 0xFF);
  io_internal::WriteFileWith(env, path, options.atomic, [&](WritableFile& file) {
    file.Append(std::string_view(prefix, 8));
    file.Append(json_text);
    for (const auto* entry : order) {
      const Tensor& tensor = entry->second;
      file.Append(
          std::string_view(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes()));
    }
  });
}

}  // namespace loom
