#ifndef LOOM_ESTIMATOR_TF_GRAPH_TRANSLATOR_H_
#define LOOM_ESTIMATOR_TF_GRAPH_TRANSLATOR_H_

// Internal to loom/estimator: TF tensor names and the translation of a TF GraphDef's needed
// part into a Loom graph, for the loaders of tf_saved_model.h.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/estimator/tf_saved_model.h"
#include "loom/graph/graph.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/tf_checkpoint.h"

namespace loom::tf_import {

// "node:1" -> {"node", 1}; "node" -> {"node", 0}. An index past int is InvalidArgument.
std::pair<std::string, int> ParseTensorName(std::string_view name);
// "node" -> "node:0".
std::string CanonicalTensorName(std::string_view name);

// Translates the part of a TF GraphDef that some outputs need into a Loom graph (the
// SavedModel and frozen-graph loaders of tf_saved_model.h). Not thread-safe; one per graph.
class GraphTranslator {
 public:
  GraphTranslator(const proto::GraphDef& def, const TfCheckpointReader* variables, Graph& graph,
                  const std::string& source);

  const proto::NodeDef& NodeDef(const std::string& name) const;

  // Tensors that are fed instead of computed.
  void Cut(const std::string& tensor, Output value) { fed_[CanonicalTensorName(tensor)] = value; }

  // The nodes `outputs` need, fed tensors cut off (control inputs followed: a node that
  // runs only as a dependency, such as an Assert, is still translated). An input naming
  // no node is InvalidArgument naming both.
  std::vector<const proto::NodeDef*> Needed(const std::vector<std::string>& outputs) const;

  // The tensor `tensor` is a copy of: Identity chains followed back, up to a fed tensor.
  std::string Resolve(const std::string& tensor) const;

  // The features a ParseExample node reads; nullopt when its keys are not constants.
  std::optional<std::vector<TfExampleFeature>> ExampleFeatures(const proto::NodeDef& n) const;

  // True when an output of node `name` is fed (a control input on it is then satisfied by
  // the feed).
  bool IsFedNode(const std::string& name) const;

  Output Tensor(const std::string& tensor);

 private:
  // Translates `name` after every node it depends on, in an explicit post-order: no
  // recursion depth comes from the file, and a cycle (which a TF1 graph has only in a
  // while loop, never imported) is an error naming a node on it instead of a stack
  // overflow.
  Node* Translate(const std::string& name);

  // Translates one node whose inputs are translated (Translate's order).
  Node* TranslateNode(const std::string& name);

  const TfCheckpointReader* variables_;
  Graph& graph_;
  const std::string& source_;
  std::map<std::string, const proto::NodeDef*> nodes_;
  std::map<std::string, Output> fed_;
  std::map<std::string, Node*> done_;
};

}  // namespace loom::tf_import

#endif  // LOOM_ESTIMATOR_TF_GRAPH_TRANSLATOR_H_
