#include "loom/cli/sniff.h"

#include <cstdint>
#include <cstring>
#include <regex>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"
#include "loom/io/proto/event.pb.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/proto/onnx.pb.h"
#include "loom/io/record_reader.h"

namespace loom::cli {
namespace {

constexpr size_t kHeadBytes = 64;

uint64_t LittleEndian64(const std::string& bytes, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

uint32_t LittleEndian32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// A TFRecord frame starts here: 8 length bytes and their masked CRC-32C.
bool IsTFRecordHeader(const std::string& head) {
  return head.size() >= 12 &&
         crc32c::Mask(crc32c::Value(head.data(), 8)) == LittleEndian32(head, 8);
}

bool IsGzipHeader(const std::string& head) {
  return head.size() >= 3 && head[0] == '\x1f' && head[1] == '\x8b' && head[2] == '\x08';
}

// RFC 1950: CM = 8 (deflate), a window of at most 32 KiB, and the check bits.
bool IsZlibHeader(const std::string& head) {
  if (head.size() < 2) return false;
  const auto cmf = static_cast<unsigned char>(head[0]), flg = static_cast<unsigned char>(head[1]);
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

// The MNIST format: two zero bytes, a type code, then 1 to 4 dimensions.
bool IsIdxHeader(const std::string& head) {
  if (head.size() < 4 || head[0] != 0 || head[1] != 0) return false;
  const auto type = static_cast<unsigned char>(head[2]), rank = static_cast<unsigned char>(head[3]);
  return (type == 0x08 || type == 0x09 || (type >= 0x0b && type <= 0x0e)) && rank >= 1 &&
         rank <= 4 && head.size() >= 4u + 4u * rank;
}

// The first bytes of the decompressed stream ("" when they do not decompress).
std::string DecompressedHead(Env* env, const std::string& path, Compression compression) {
  try {
    auto stream = NewDecompressingInputStream(
        NewRandomAccessInputStream(env->NewRandomAccessFile(path), path), compression, path, 4096);
    std::string head(kHeadBytes, '\0');
    head.resize(stream->Read(kHeadBytes, head.data()));
    return head;
  } catch (const Error&) {
    return "";
  }
}

// The first record of a TFRecord file is an Event with TensorBoard's file_version.
bool FirstRecordIsEvent(Env* env, const std::string& path, Compression compression) {
  try {
    auto reader = RecordReader::Open(env, path,
                                     {.compression = compression, .truncated_record_is_eof = true});
    std::string record;
    if (!reader->ReadRecord(&record)) return false;
    proto::Event event;
    return event.ParseFromString(record) && event.file_version().starts_with("brain.Event:");
  } catch (const Error&) {
    return false;
  }
}

bool IsGraphDef(Env* env, const std::string& path, uint64_t size) {
  if (size == 0 || size > (1u << 30)) return false;
  proto::GraphDef def;
  if (!def.ParseFromString(ReadFileToString(env, path)) || def.node_size() == 0) return false;
  for (const auto& n : def.node()) {
    if (n.name().empty() || n.op().empty()) return false;
  }
  return true;
}

// An ONNX ModelProto: it parses, with an IR version (1 to 100: ONNX is at 10) and a
// graph. A GraphDef never parses as one (its field 1 is a message, ONNX's a varint).
bool IsOnnxModel(Env* env, const std::string& path, uint64_t size) {
  if (size == 0 || size >= (uint64_t{1} << 31)) return false;
  onnx::ModelProto model;
  return model.ParseFromString(ReadFileToString(env, path)) && model.ir_version() >= 1 &&
         model.ir_version() <= 100 && model.has_graph();
}

std::string CompressedName(Compression c) {
  return c == Compression::kGzip   ? "gzip-compressed "
         : c == Compression::kZlib ? "zlib-compressed "
                                   : "";
}

}  // namespace

Compression SniffCompression(Env* env, const std::string& path) {
  auto file = env->NewRandomAccessFile(path);
  std::string head(kHeadBytes, '\0');
  head.resize(file->Read(0, kHeadBytes, head.data()));
  if (IsTFRecordHeader(head)) return Compression::kNone;
  if (IsGzipHeader(head)) return Compression::kGzip;
  if (IsZlibHeader(head) && !DecompressedHead(env, path, Compression::kZlib).empty())
    return Compression::kZlib;
  return Compression::kNone;
}

SniffedFile SniffFile(Env* env, const std::string& path) {
  if (!env->FileExists(path)) throw NotFound("'", path, "' does not exist");
  auto file = env->NewRandomAccessFile(path);
  const uint64_t size = file->Size();
  std::string head(kHeadBytes, '\0');
  head.resize(file->Read(0, kHeadBytes, head.data()));

  auto records = [&](Compression c) -> SniffedFile {
    if (FirstRecordIsEvent(env, path, c))
      return {FileKind::kEvents, c, CompressedName(c) + "TensorBoard event file"};
    return {FileKind::kTFRecord, c, CompressedName(c) + "TFRecord file"};
  };
  if (IsTFRecordHeader(head)) return records(Compression::kNone);
  if (head.starts_with("\x93NUMPY")) return {FileKind::kNpy, Compression::kNone, "npy array"};
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    if (c == Compression::kGzip ? !IsGzipHeader(head) : !IsZlibHeader(head)) continue;
    const std::string inner = DecompressedHead(env, path, c);
    if (inner.empty() && c == Compression::kZlib) break;  // 0x78.. by chance, not zlib
    if (IsTFRecordHeader(inner)) return records(c);
    if (IsIdxHeader(inner)) return {FileKind::kIdx, c, CompressedName(c) + "IDX array"};
    return {FileKind::kUnknown, c,
            CompressedName(c) + "data of an unknown format" +
                (inner.empty() ? " (the compressed stream is damaged at its start)" : "")};
  }
  if (head.size() >= 9 && head[8] == '{') {
    const uint64_t header = LittleEndian64(head, 0);
    if (header >= 2 && header <= size - 8)
      return {FileKind::kSafetensors, Compression::kNone, "safetensors file"};
    // A header length past the end with JSON after it is a safetensors file cut short
    // (the format caps the header at 100 MB): its reader names the truncation, where
    // "data of an unknown format" would not.
    if (header >= 2 && header <= 100'000'000 && head.size() >= 10 &&
        (head[9] == '"' || head[9] == '}'))
      return {FileKind::kSafetensors, Compression::kNone, "safetensors file"};
  }
  // LevelDB's table magic number closes the footer of TF's checkpoint .index files.
  if (size >= 48) {
    std::string tail(8, '\0');
    if (file->Read(size - 8, 8, tail.data()) == 8 &&
        LittleEndian64(tail, 0) == 0xdb4775248b80fb57ull)
      return {FileKind::kTFCheckpointIndex, Compression::kNone,
              "TensorFlow checkpoint index (tensor bundle: a LevelDB table)"};
  }
  if (IsIdxHeader(head)) return {FileKind::kIdx, Compression::kNone, "IDX array"};
  if (IsOnnxModel(env, path, size))
    return {FileKind::kOnnx, Compression::kNone, "ONNX model (ModelProto)"};
  if (IsGraphDef(env, path, size)) return {FileKind::kGraphDef, Compression::kNone, "GraphDef"};
  static const std::regex kDataShard(R"(.*\.data-\d{5}-of-\d{5}$)");
  if (std::regex_match(path, kDataShard))
    return {FileKind::kTFCheckpointData, Compression::kNone,
            "TensorFlow checkpoint data shard (tensor bundle)"};
  if (Basename(path) == "saved_model.pb")
    return {FileKind::kTFSavedModel, Compression::kNone, "TensorFlow SavedModel (saved_model.pb)"};
  if (path.ends_with(".onnx"))
    return {FileKind::kOnnx, Compression::kNone,
            "ONNX model by its name, whose bytes do not parse as one"};
  return {FileKind::kUnknown, Compression::kNone, "data of an unknown format"};
}

}  // namespace loom::cli
