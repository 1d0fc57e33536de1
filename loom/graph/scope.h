#ifndef LOOM_GRAPH_SCOPE_H_
#define LOOM_GRAPH_SCOPE_H_

// Scope: where op builders add nodes — a graph, a name prefix (TF's name_scope), the
// control dependencies every new node gets, and an optional exact name for the next node.
// A cheap value type; deriving a scope never changes the one it came from.
//
//   Graph graph;
//   Scope root(graph);
//   Scope dense = root.NewSubScope("dense");          // "dense", then "dense_1", ...
//   Output y = MatMul(dense.WithOpName("MatMul"), x, w);  // node "dense/MatMul"
//
// Input lets builders take literals: Mul(s, x, 2.0) turns 2.0 into a Const of x's dtype.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "loom/graph/graph.h"

namespace loom {

class Scope {
 public:
  explicit Scope(Graph& graph) : graph_(&graph) {}

  Graph& graph() const { return *graph_; }
  // A child name scope; its name is made unique in the graph, like tf.name_scope.
  Scope NewSubScope(std::string_view name) const;
  // The next node built with this scope is named `name` inside the prefix (made unique).
  Scope WithOpName(std::string_view name) const;
  // A scope whose name prefix is exactly `prefix` ("" is the root): an existing name
  // scope re-entered, as tf.name_scope("outer/") does. Node names are still made unique.
  Scope WithPrefix(std::string_view prefix) const;
  // Every node built with the result gets `deps` as control inputs (added to existing).
  Scope WithControlDependencies(const std::vector<Operation>& deps) const;
  Scope WithNoControlDependencies() const;

  // Adds a node: named by WithOpName, else `default_name` (else the op name), under the
  // prefix and made unique; with this scope's control dependencies.
  Node* AddNode(const OpDef& op, std::vector<Output> inputs, AttrMap attrs = {},
                std::string_view default_name = "") const;

  // "outer/inner", "" at the root.
  const std::string& prefix() const { return prefix_; }
  // prefix + "/" + name, or name at the root.
  std::string FullName(std::string_view name) const;

 private:
  Graph* graph_;
  std::string prefix_;
  std::string op_name_;
  std::vector<Node*> control_deps_;
};

// An op argument: an Output, or a literal that the builder turns into a Const node.
class Input {
 public:
  Input(Output output) : output_(output) {}
  Input(Node* node) : output_(node, 0) {}
  Input(const Tensor& tensor) : literal_(tensor), has_literal_(true) {}
  Input(float v) : number_(v), is_number_(true) {}
  Input(double v) : number_(v), is_number_(true) {}
  Input(int v) : number_(v), is_number_(true), is_integer_(true) {}
  Input(int64_t v) : number_(static_cast<double>(v)), is_number_(true), is_integer_(true) {}
  Input(std::initializer_list<float> values);

  bool is_output() const { return output_.valid(); }
  // True for an Input made from an invalid Output (e.g. absent labels): no tensor at all.
  bool empty() const { return !output_.valid() && !has_literal_ && !is_number_; }
  const Output& output() const { return output_; }
  // For a literal: the tensor it becomes with dtype `hint` (kInvalid: float32 for
  // floating literals, int32 for integer ones, the tensor's own dtype for tensors).
  Tensor ToTensor(DType hint) const;

 private:
  Output output_;
  Tensor literal_;
  bool has_literal_ = false;
  double number_ = 0;
  bool is_number_ = false;
  bool is_integer_ = false;
};

// The Output for `input`: itself, or a new Const node (dtype from `hint`, see Input).
Output AsOutput(const Scope& scope, const Input& input, DType hint = DType::kInvalid);
// For binary ops: converts both, giving a literal the dtype of the other argument.
std::pair<Output, Output> AsOutputs(const Scope& scope, const Input& a, const Input& b);

// A constant node holding `value`. Large constants are fine in memory; serialization
// writes them beside the graph (graph_def.h).
Output Const(const Scope& scope, const Tensor& value);
template <typename T>
Output Const(const Scope& scope, const std::vector<T>& values, const Shape& shape) {
  return Const(scope, Tensor::FromVector(values, shape));
}
template <typename T>
Output ScalarConst(const Scope& scope, T value) {
  return Const(scope, Tensor::Scalar(value));
}

// The op record of Const, for registries, and its value attribute (a rule that folds
// constants reads it from a producer).
const OpDef& ConstOp();
inline constexpr Attr<Tensor> kConstValue{"value"};

}  // namespace loom

#endif  // LOOM_GRAPH_SCOPE_H_
