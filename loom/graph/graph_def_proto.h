#ifndef LOOM_GRAPH_GRAPH_DEF_PROTO_H_
#define LOOM_GRAPH_GRAPH_DEF_PROTO_H_

// Graph <-> proto::GraphDef for Loom's own code that holds the message itself (event files,
// TF SavedModels, the `loom` command, tests). Internal to Loom: not installed, so no public
// header exposes a protobuf type; users go through graph_def.h's bytes and files. The
// conversion rules are graph_def.h's.
#include <string>
#include <utility>
#include <vector>

#include "loom/graph/graph_def.h"
#include "loom/io/proto/graph.pb.h"

namespace loom {

// SerializeGraph before the encoding: see there.
proto::GraphDef ToGraphDef(const Graph& graph, const GraphExportOptions& options = {},
                           std::vector<std::pair<std::string, Tensor>>* external = nullptr);

// ImportSerializedGraph after the parse: see there (all its errors but the parse's).
void ImportGraphDef(const proto::GraphDef& def, const OpRegistry& registry, Graph& graph,
                    Env* env = nullptr, const std::string& sidecar_path = "");

// The binary encoding of a GraphDef with map entries in sorted order, so equal graphs
// give equal bytes.
std::string SerializeGraphDef(const proto::GraphDef& def);

}  // namespace loom

#endif  // LOOM_GRAPH_GRAPH_DEF_PROTO_H_
