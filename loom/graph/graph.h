#ifndef LOOM_GRAPH_GRAPH_H_
#define LOOM_GRAPH_GRAPH_H_

// Graph: the dataflow graph, TF1's tf.Graph. It owns its Nodes; a Node is one op
// application with its inputs (Outputs of earlier nodes), control inputs, attributes and
// inferred output dtypes/shapes. Nodes are only ever appended, and a node's inputs must
// already exist, so node ids are a topological order. Shape and dtype inference run in
// AddNode, so a bad graph fails at construction with the node's name.
// Data never enters a graph: constants above a threshold are written beside a serialized
// graph, never inside it (graph_def.h).
// Thread-safety: building is single-threaded; after Finalize() the graph is immutable and
// may be read (and run by Sessions) from any thread.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/graph/attr_value.h"

namespace loom {

class BuildContext;
class Collections;
class Graph;
class Node;
struct OpDef;

// One output of a node: "name:index". A value type; an Output with node == nullptr is
// "no output" (used for absent gradients).
struct Output {
  Node* node = nullptr;
  int index = 0;

  Output() = default;
  Output(Node* n, int i = 0) : node(n), index(i) {}
  bool valid() const { return node != nullptr; }
  DType dtype() const;
  const Shape& shape() const;
  // "dense/MatMul:0" (TF's tensor naming).
  std::string name() const;
  bool operator==(const Output& o) const { return node == o.node && index == o.index; }
};

// A node used as a run target or control dependency (TF's Operation).
struct Operation {
  Node* node = nullptr;
  Operation() = default;
  Operation(Node* n) : node(n) {}
  Operation(const Output& o) : node(o.node) {}
  bool valid() const { return node != nullptr; }
  const std::string& name() const;
};

class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const OpDef& op_def() const { return *op_def_; }
  const std::string& op() const;
  Graph* graph() const { return graph_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Output& input(int i) const { return inputs_[i]; }
  const std::vector<Output>& inputs() const { return inputs_; }
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }

  int num_outputs() const { return static_cast<int>(output_dtypes_.size()); }
  DType output_dtype(int i) const { return output_dtypes_[i]; }
  const Shape& output_shape(int i) const { return output_shapes_[i]; }
  Output output(int i = 0) { return Output(this, i); }

  const AttrMap& attrs() const { return attrs_; }
  // Throws InvalidArgument naming this node when missing or of another kind.
  template <typename T>
  const T& attr(std::string_view name) const {
    if (const T* value = attrs_.Find<T>(name)) return *value;  // the hot path: no message
    return attrs_.Get<T>(name, description());                 // throws
  }
  // A declared attribute by its typed key. Construction checked its presence and kind
  // (or filled in its default), so only an optional attribute that is absent, or a key
  // the op does not declare, throws (InvalidArgument naming this node).
  template <typename T>
  const T& attr(const Attr<T>& key) const {
    if (const T* value = attrs_.Find<T>(key.name)) return *value;
    return attrs_.Get<T>(key.name, description());
  }
  // An optional attribute: nullptr when absent.
  template <typename T>
  const T* find_attr(const Attr<T>& key) const {
    return attrs_.Find<T>(key.name);
  }
  // "MatMul 'dense/MatMul'" for error messages.
  std::string description() const;
  // The build context the node was added in (a cond branch), or nullptr (see BuildContext).
  BuildContext* context() const { return context_; }

 private:
  friend class Graph;
  Node() = default;

  int id_ = 0;
  std::string name_;
  const OpDef* op_def_ = nullptr;
  Graph* graph_ = nullptr;
  std::vector<Output> inputs_;
  std::vector<Node*> control_inputs_;
  AttrMap attrs_;
  std::vector<DType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  BuildContext* context_ = nullptr;
};

// A build context: the graph-building hook behind tf.cond (TF's control-flow context).
// While a context is the graph's current one, Graph::AddNode hands it every new node's
// inputs and control inputs before any check, so C++ builders and the Python front end
// alike see it; it may replace a data input built outside it (a cond branch puts it
// through a Switch) and add control inputs (the branch's pivot). The node then records
// the context (Node::context). Contexts nest: `outer()` is the one current when this one
// was pushed. The Graph owns every context pushed on it (nodes point at them).
class BuildContext {
 public:
  BuildContext() = default;
  virtual ~BuildContext() = default;
  BuildContext(const BuildContext&) = delete;
  BuildContext& operator=(const BuildContext&) = delete;

  BuildContext* outer() const { return outer_; }
  // True when `node` was added in this context or in one nested in it.
  bool Contains(const Node* node) const;

  // Called by Graph::AddNode for a node about to be added while this context is current.
  // May replace entries of `inputs` other than op's ref inputs (keeping dtype) and append
  // to `control_inputs`; it may add nodes itself (under a Graph::ContextOverride).
  virtual void AdaptNode(Graph& graph, const OpDef& op, const std::string& name,
                         std::vector<Output>& inputs, std::vector<Node*>& control_inputs) = 0;

 private:
  friend class Graph;
  BuildContext* outer_ = nullptr;
};

struct GraphOptions {
  // The graph-level random seed (TF's tf.set_random_seed). Random ops derive their seeds
  // from it and their own seed. Default: -1, no graph seed (ops without a seed of their own
  // are then seeded nondeterministically).
  int64_t seed = -1;
};

class Graph {
  // One tf.control_dependencies block (see ControlDependencies).
  struct ControlBlock {
    std::vector<Node*> deps;
    std::unordered_set<const Node*> built;  // nodes added while the block was open
  };

 public:
  explicit Graph(GraphOptions options = {});
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Adds a node named exactly `name` (REQUIRES: unused; see UniqueName), checks the
  // inputs against the op's signature and runs its shape function. Throws InvalidArgument
  // naming the node on any mismatch, FailedPrecondition once the graph is finalized.
  // The node also gets the current control dependencies (see ControlDependencies) as
  // control inputs, as TF1 gives every op built inside tf.control_dependencies.
  Node* AddNode(const OpDef& op, const std::string& name, std::vector<Output> inputs, AttrMap attrs,
                std::vector<Node*> control_inputs = {});

  // Makes `context` the current build context, nested in the current one; the graph keeps
  // it (nodes refer to it) and returns it.
  BuildContext* PushContext(std::unique_ptr<BuildContext> context);
  // Makes context()->outer() current again. REQUIRES: `context` is the current context.
  void PopContext(const BuildContext* context);
  // The current build context, or nullptr outside every context.
  BuildContext* context() const { return context_; }

  // While alive, nodes are added in `context` (nullptr: outside every context) and with
  // no control dependencies (TF's init_scope, and control_dependencies(None)): a variable
  // and its initializer lifted out of a cond branch or a control_dependencies block, or
  // the Switch a branch builds in the context around it.
  class ContextOverride {
   public:
    ContextOverride(Graph& graph, BuildContext* context)
        : graph_(graph), saved_(graph.context_), saved_blocks_(std::move(graph.control_blocks_)) {
      graph.context_ = context;
      graph.control_blocks_.clear();
    }
    ~ContextOverride() {
      graph_.context_ = saved_;
      graph_.control_blocks_ = std::move(saved_blocks_);
    }
    ContextOverride(const ContextOverride&) = delete;
    ContextOverride& operator=(const ContextOverride&) = delete;

   private:
    Graph& graph_;
    BuildContext* saved_;
    std::vector<ControlBlock> saved_blocks_;
  };

  // tf.control_dependencies: while alive, every node added to the graph (by any builder)
  // gets `deps` as control inputs, except (as TF1) a dep that is already a data input's
  // node, and the deps of a block when a data input was itself built inside that block
  // (it already runs after them). Blocks nest; a ContextOverride opens an empty stack.
  class ControlDependencies {
   public:
    ControlDependencies(Graph& graph, std::vector<Node*> deps) : graph_(graph) {
      graph.PushControlDependencies(std::move(deps));
    }
    ~ControlDependencies() { graph_.PopControlDependencies(); }
    ControlDependencies(const ControlDependencies&) = delete;
    ControlDependencies& operator=(const ControlDependencies&) = delete;

   private:
    Graph& graph_;
  };
  // The non-RAII form of ControlDependencies (the Python front end's with-blocks).
  // Throws InvalidArgument for a null or foreign dep.
  void PushControlDependencies(std::vector<Node*> deps);
  // REQUIRES: a block pushed and not popped (under the current ContextOverride).
  void PopControlDependencies();
  // Every dep of the open blocks, outermost first, without repeats.
  std::vector<Node*> CurrentControlDependencies() const;

  // `base` if no node has it, else base_1, base_2, ... (TF's unique naming).
  std::string UniqueName(std::string_view base);

  // Makes the graph read-only; later AddNode calls throw FailedPrecondition.
  void Finalize() { finalized_ = true; }
  bool finalized() const { return finalized_; }

  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  Node* node(int id) const { return nodes_[id].get(); }
  // nullptr when absent.
  Node* FindNode(std::string_view name) const;
  // Throws NotFound listing near names when absent. Accepts "name" or "name:index".
  Output GetOutput(std::string_view name) const;

  const GraphOptions& options() const { return options_; }
  int64_t seed() const { return options_.seed; }
  void set_seed(int64_t seed) { options_.seed = seed; }

  // Nodes whose op has OpRole::kVariable, in creation order; Trainable... only those with
  // attr "trainable" true.
  std::vector<Node*> Variables() const;
  std::vector<Node*> TrainableVariables() const;

  // The graph's registry of named, typed member lists (TF's collections): the global
  // step, update ops, regularization losses. See collections.h.
  Collections& collections() { return *collections_; }
  const Collections& collections() const { return *collections_; }

 private:
  GraphOptions options_;
  std::unique_ptr<Collections> collections_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::unordered_map<std::string, Node*> by_name_;
  std::unordered_map<std::string, int> name_counters_;
  std::vector<std::unique_ptr<BuildContext>> contexts_;
  BuildContext* context_ = nullptr;
  std::vector<ControlBlock> control_blocks_;
  bool finalized_ = false;
};

std::ostream& operator<<(std::ostream& os, const Output& output);

}  // namespace loom

#endif  // LOOM_GRAPH_GRAPH_H_
