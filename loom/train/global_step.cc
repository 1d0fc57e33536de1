#include "loom/train/global_step.h"

#include "loom/graph/collections.h"

namespace loom::train {
namespace {

constexpr const char* kGlobalStepName = "global_step";

}  // namespace

Variable GetGlobalStep(const Graph& graph) {
  const std::vector<VariableRef> steps = graph.collections().Get(GraphKeys::kGlobalStep);
  if (steps.empty()) return Variable();
  if (steps.size() > 1) {
    throw InvalidArgument("the graph's '", GraphKeys::kGlobalStep.name, "' collection holds ",
                          steps.size(), " variables ('", steps[0].variable.node->name(), "', '",
                          steps[1].variable.node->name(), "', ...); a graph has one global step");
  }
  const Output& step = steps[0].variable;
  if ((step.dtype() != kInt64 && step.dtype() != kInt32) || step.shape() != Shape{}) {
    throw InvalidArgument("the graph's global step ", step.node->description(), " is ",
                          DTypeName(step.dtype()), step.shape(),
                          "; it must be an int64 (or int32) scalar variable");
  }
  Variable v;
  v.node = step.node;
  v.index = step.index;
  v.initializer = steps[0].initializer;
  return v;
}

Variable GlobalStep(const Scope& scope) {
  Variable existing = GetGlobalStep(scope.graph());
  if (existing.valid()) return existing;
  Graph& graph = scope.graph();
  if (Node* taken = graph.FindNode(kGlobalStepName)) {
    throw InvalidArgument("cannot create the global step: the graph already has a node named '",
                          kGlobalStepName, "' (", taken->description(),
                          ") that is not its global step; rename that node");
  }
  Scope root(graph);
  // Outside the caller's control dependencies and cond branches (TF's init_scope).
  Graph::ContextOverride outside(graph, nullptr);
  Output zero = Const(root.WithOpName("global_step/Initializer/zeros"), Tensor::Scalar<int64_t>(0));
  Variable step(root.WithOpName(kGlobalStepName), zero, {.trainable = false});
  graph.collections().Add(GraphKeys::kGlobalStep, VariableRef{step, step.initializer});
  return step;
}

}  // namespace loom::train
