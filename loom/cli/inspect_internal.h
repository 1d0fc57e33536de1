#ifndef LOOM_CLI_INSPECT_INTERNAL_H_
#define LOOM_CLI_INSPECT_INTERNAL_H_

// The record-file half of `loom inspect` (inspect_records.cc), TF's checkpoint index
// (inspect_tf_bundle.cc) and ONNX models (inspect_onnx.cc), used by inspect.cc. Each
// function prints what it read; a damaged file (a truncated last record, a compressed
// stream cut short, records failing their CRC) is reported after what could be read, by
// throwing DataLoss, so that the command exits non-zero.
#include <string>

#include "loom/base/env.h"
#include "loom/io/byte_stream.h"

namespace loom::cli {

// TFRecord frames, decoding the first `show` records that are tf.train.Example or
// tf.train.SequenceExample (with their feature lists).
void InspectRecords(Env* env, const std::string& path, Compression compression, int show);
// TensorBoard event files: events, steps and per-tag scalars.
void InspectEvents(Env* env, const std::string& path, Compression compression);
// TensorFlow's checkpoint index (inspect_tf_bundle.cc): every tensor's dtype and shape;
// DataLoss when the table is damaged or a tensor lies outside its data shard.
// `path` may be the prefix or its .index file; prints the global step when it holds one.
void InspectTFCheckpointIndex(Env* env, const std::string& path);
// A TF SavedModel directory (saved_model.pb + variables/): its signatures, inputs, outputs
// and tf.Example features, and why a signature cannot run in Loom.
void InspectTFSavedModel(Env* env, const std::string& dir);
// An ONNX model (inspect_onnx.cc): header, inputs and outputs, ops, initializers; DataLoss
// when it does not parse, a node reads a value nothing produces, or an initializer's bytes
// (inline or external) do not match its shape.
void InspectOnnx(Env* env, const std::string& path);

}  // namespace loom::cli

#endif  // LOOM_CLI_INSPECT_INTERNAL_H_
