#ifndef LOOM_CLI_SNIFF_H_
#define LOOM_CLI_SNIFF_H_

// What a file is, told from its bytes rather than its name (`loom inspect`): the magic
// numbers and checksums of the formats Loom reads, and of TensorFlow's files that it does
// not read yet, so that a user learns what they have instead of seeing it misread.
//
//   SniffedFile f = SniffFile(env, "data.bin");
//   if (f.kind == FileKind::kTFRecord && f.compression == Compression::kGzip) ...
//
// Checks, in order: a TFRecord frame at offset 0 (its length CRC matches: 1 in 2^32 by
// chance), the npy magic, a gzip or zlib header (then the same checks on the first
// decompressed bytes), a safetensors header (u64 length, then '{'), a LevelDB table
// footer (TF's checkpoint .index), an IDX header, an ONNX ModelProto (an IR version and a
// graph), a GraphDef. Names are used only for what has no magic number: TF's checkpoint
// data shards (`.data-00000-of-00001`), `saved_model.pb`, and a `.onnx` file too damaged to
// parse (so that inspect reports the damage instead of "unknown").
// Throws NotFound for a missing file; stateless and thread-safe otherwise.
#include <string>

#include "loom/base/env.h"
#include "loom/io/byte_stream.h"

namespace loom::cli {

enum class FileKind {
  kUnknown,
  kTFRecord,     // TFRecord frames (inside `compression`)
  kEvents,       // a TFRecord file whose first record is a TensorBoard Event
  kSafetensors,  // a safetensors file (a Loom checkpoint is one)
  kNpy,
  kIdx,                // (inside `compression`)
  kGraphDef,           // a binary GraphDef protobuf with named nodes
  kTFCheckpointIndex,  // TF's tensor bundle index: a LevelDB table
  kTFCheckpointData,   // TF's tensor bundle data shard: raw bytes located by the index
  kTFSavedModel,       // TF's saved_model.pb (a SavedModel protobuf)
  kOnnx,               // an ONNX ModelProto (also a `.onnx` file that does not parse)
};

struct SniffedFile {
  FileKind kind = FileKind::kUnknown;
  Compression compression = Compression::kNone;
  // e.g. "gzip-compressed TFRecord file", "TensorFlow checkpoint index (tensor bundle)".
  std::string description;
};

SniffedFile SniffFile(Env* env, const std::string& path);

// The compression of a TFRecord file from its first bytes: kGzip or kZlib when they are a
// gzip or zlib header and the file does not start with a valid TFRecord frame, else kNone.
Compression SniffCompression(Env* env, const std::string& path);

}  // namespace loom::cli

#endif  // LOOM_CLI_SNIFF_H_
