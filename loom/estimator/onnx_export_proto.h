#ifndef LOOM_ESTIMATOR_ONNX_EXPORT_PROTO_H_
#define LOOM_ESTIMATOR_ONNX_EXPORT_PROTO_H_

// The libprotobuf side of onnx_export.h: the two steps ExportOnnx runs, building the
// onnx::ModelProto and writing it, for Loom's own code and tests that look at the message
// itself. Internal to Loom: not installed, so no public header exposes a protobuf type.
#include <map>
#include <string>

#include "loom/base/env.h"
#include "loom/estimator/onnx_export.h"
#include "loom/io/proto/onnx.pb.h"

namespace loom {

// The ONNX model of `signature` in `graph`, every variable's value from `variables` (by
// node name), all weights inline. Throws Unimplemented (onnx_export.h), FailedPrecondition for
// a variable without a value, InvalidArgument for bad options or a signature output that
// needs a placeholder the signature does not feed.
onnx::ModelProto ToOnnxModel(const Graph& graph, const std::map<std::string, Tensor>& variables,
                             const std::string& signature_name, const SignatureDef& signature,
                             const OnnxExportOptions& options = {});

// Writes `model` to `path` (atomically), moving weights to "<path>.data" as the header
// comment says. Throws ResourceExhausted when the graph alone passes protobuf's limit.
OnnxExportResult WriteOnnxModel(Env* env, const std::string& path, onnx::ModelProto model,
                                const OnnxExportOptions& options = {});

}  // namespace loom

#endif  // LOOM_ESTIMATOR_ONNX_EXPORT_PROTO_H_
