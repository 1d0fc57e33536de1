#ifndef LOOM_ESTIMATOR_ONNX_EXPORT_H_
#define LOOM_ESTIMATOR_ONNX_EXPORT_H_

// ONNX export: one serving signature of a model's kPredict graph, with its weights, as an
// ONNX model (IR version 8, default-domain opset 13 by default, ai.onnx.ml opset 2 for
// vocabulary lookups) that ONNX Runtime and other runtimes load. Written with libprotobuf
// from loom/io/proto/onnx.proto (ONNX's field numbers). docs/onnx.md has the op table.
//
//   loom::ExportOnnx(classifier, serving_input_fn, "model.onnx");           // an Estimator
//   loom::ExportSavedModelToOnnx("export/1700000000", "model.onnx");        // a SavedModel
//
// The ONNX graph's inputs are the signature's input keys (only those the outputs depend
// on), its outputs the signature's output keys; variables become initializers named like
// the variables ("dnn/hiddenlayer_0/kernel"). An unknown dim is the symbolic dim "batch"
// for dim 0, "<key>_dim<i>" for others. Images stay NHWC at the interface: convolutions
// and pooling are wrapped in Transposes to ONNX's NCHW.
//
// Weights past the 2 GB protobuf limit: initializers stay inside the .onnx file while
// their total is at most max_inline_weight_bytes; beyond that the largest go to ONNX
// external data in "<file>.data" beside it (data_location EXTERNAL with "location",
// "offset", "length"; offsets 4096-aligned) until the rest fits.
//
// Every op of the exported subgraph either maps or the export fails with one
// Unimplemented error listing each unsupported op, its count, a node and the reason (hash
// buckets and crossed columns have no ONNX op; see docs/onnx.md). Nothing is written then.
//
// No protobuf type appears here; onnx_export_proto.h (Loom's own code, not installed) has
// the steps that build and write the onnx::ModelProto.
#include <cstdint>
#include <map>
#include <string>

#include "loom/base/env.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/saved_model.h"

namespace loom {

// 2 GiB less 64 MiB left for the graph itself.
inline constexpr int64_t kOnnxMaxInlineWeightBytes = (int64_t{1} << 31) - (int64_t{64} << 20);

struct OnnxExportOptions {
  // The signature exported. Default: "", "predict" when the model has it (every
  // prediction: a classifier's logits, probabilities, class_ids, classes), else
  // "serving_default".
  std::string signature;
  // The default domain's opset, 13 to 17 (the ops written mean the same in each).
  // Default: 13.
  int64_t opset = 13;
  // See the header comment. Default: kOnnxMaxInlineWeightBytes.
  int64_t max_inline_weight_bytes = kOnnxMaxInlineWeightBytes;
};

struct OnnxExportResult {
  std::string path;                // the .onnx file
  std::string external_data_path;  // "" when every weight is inline
  std::string signature;           // the one exported
  int64_t num_nodes = 0;           // ONNX nodes
  int64_t num_external_tensors = 0;
};

// The signature (OnnxExportOptions::signature) of a graph and its variables, written to
// `path`. Throws NotFound for an unknown signature, listing the known ones.
OnnxExportResult ExportOnnx(Env* env, const std::string& path, const Graph& graph,
                            const std::map<std::string, Tensor>& variables,
                            const std::map<std::string, SignatureDef>& signatures,
                            const OnnxExportOptions& options = {});

// A Loom SavedModel directory (saved_model.h) as ONNX.
OnnxExportResult ExportSavedModelToOnnx(const std::string& saved_model_dir, const std::string& path,
                                        const OnnxExportOptions& options = {}, Env* env = nullptr);

// The Estimator's model in kPredict fed by serving_input_fn, with the variables of the
// newest checkpoint (or export_options.checkpoint_path), as ONNX; nothing else is written.
// Throws FailedPrecondition when there is no checkpoint.
OnnxExportResult ExportOnnx(Estimator& estimator, const ServingInputReceiverFn& serving_input_fn,
                            const std::string& path, const OnnxExportOptions& options = {},
                            const ExportOptions& export_options = {});

}  // namespace loom

#endif  // LOOM_ESTIMATOR_ONNX_EXPORT_H_
