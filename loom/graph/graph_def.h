#ifndef LOOM_GRAPH_GRAPH_DEF_H_
#define LOOM_GRAPH_GRAPH_DEF_H_

// Graph <-> GraphDef, the protobuf TensorFlow and TensorBoard read (our own .proto files,
// wire-compatible: loom/io/proto/graph.proto). Nodes are written in id order (a
// topological order), inputs as "node", "node:1" and "^control", attributes as AttrValue,
// plus "_output_shapes" so TensorBoard can label edges. The graph's collections
// (collections.h) go into the GraphDef too (its loom_collections field), and come back.
//
// Data never goes into a graph file: a constant holding more than
// `inline_constant_bytes` is written with its dtype and shape only, and its bytes go to a
// safetensors sidecar beside the graph ("<path>.data.safetensors", keyed by node name);
// such a node carries the attr "_external_data" naming the sidecar's file name. A graph
// file's size therefore depends on the number of nodes, never on the data (TF's
// "GraphDef cannot be larger than 2GB" cannot happen).
//
// Attribute floats are 32-bit in AttrValue (as in TF), so a double attribute round-trips
// with float precision.
//
// The API speaks Loom types and bytes only; the protobuf messages stay inside Loom
// (graph_def_proto.h, for Loom's own code that holds a proto::GraphDef).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/base/env.h"
#include "loom/graph/op_def.h"

namespace loom {

struct GraphExportOptions {
  // Constants larger than this many bytes go to the sidecar. Default: 1 MiB.
  int64_t inline_constant_bytes = 1 << 20;
};

// The graph's structure as a binary GraphDef, with map entries in sorted order so equal
// graphs give equal bytes. Large constants keep dtype and shape but no values; they are
// appended to `external` (node name, value) when it is not null, dropped otherwise
// (that is what event files get: structure only).
std::string SerializeGraph(const Graph& graph, const GraphExportOptions& options = {},
                           std::vector<std::pair<std::string, Tensor>>* external = nullptr);
// The same GraphDef in protobuf's text format (graph.pbtxt), large constants stripped.
std::string GraphToText(const Graph& graph, const GraphExportOptions& options = {});

// Adds the nodes of the binary GraphDef `serialized` to `graph` (empty or not; names must
// not collide), looking ops up in `registry`. External constants are read from
// `sidecar_path` (zero-copy views of the mapped file). Throws DataLoss when the bytes are
// not a GraphDef or a sidecar tensor is missing, NotFound for an unknown op or input,
// InvalidArgument for bad attributes or shapes (naming the node).
void ImportSerializedGraph(std::string_view serialized, const OpRegistry& registry, Graph& graph,
                           Env* env = nullptr, const std::string& sidecar_path = "");

// Writes `path` (binary GraphDef) and, when some constant is large, the sidecar
// "<path>.data.safetensors"; both atomically.
void ExportGraph(const Graph& graph, Env* env, const std::string& path,
                 const GraphExportOptions& options = {});
// Reads what ExportGraph wrote into `graph`.
void ImportGraph(Env* env, const std::string& path, const OpRegistry& registry, Graph& graph);

// The sidecar path for a graph file.
std::string GraphSidecarPath(const std::string& graph_path);

}  // namespace loom

#endif  // LOOM_GRAPH_GRAPH_DEF_H_
