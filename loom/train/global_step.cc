#include "loom/train/global_step.h"

namespace loom::train {
namespace {

constexpr const char* kGlobalStepName = "global_step";

// Rebuilds the Variable handle of an existing variable node: the node and the Assign
// that Variable's constructor made as its initializer.
Variable HandleOf(const Graph& graph, Node* var) {
  Variable v;
  v.node = var;
  v.index = 0;
  for (int id = var->id() + 1; id < graph.num_nodes(); ++id) {
    Node* n = graph.node(id);
    if (n->op() == "Assign" && n->attrs().GetOr<bool>("_initializer", false) &&
        n->input(0).node == var) {
      v.initializer = n;
      break;
    }
  }
  return v;
}

}  // namespace

Variable GetGlobalStep(const Graph& graph) {
  Node* node = graph.FindNode(kGlobalStepName);
  if (node == nullptr) return Variable();
  const bool ok = node->op_def().role == OpRole::kVariable &&
                  (node->output_dtype(0) == kInt64 || node->output_dtype(0) == kInt32) &&
                  node->output_shape(0) == Shape{};
  if (!ok) {
    throw InvalidArgument("the graph's '", kGlobalStepName, "' node (", node->description(), ", ",
                          DTypeName(node->output_dtype(0)), node->output_shape(0),
                          ") is not an int64 scalar variable; rename it so that "
                          "train::GlobalStep can create the global step");
  }
  return HandleOf(graph, node);
}

Variable GlobalStep(const Scope& scope) {
  Variable existing = GetGlobalStep(scope.graph());
  if (existing.valid()) return existing;
  Scope root(scope.graph());
  Output zero = Const(root.WithOpName("global_step/Initializer/zeros"), Tensor::Scalar<int64_t>(0));
  return Variable(root.WithOpName(kGlobalStepName), zero, {.trainable = false});
}

}  // namespace loom::train
