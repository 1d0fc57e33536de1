#include "loom/train/adam.h"

#include "loom/ops/state.h"
#include "loom/train/training_ops.h"

namespace loom::train {
namespace {

// A non-trainable scalar variable at the graph's root, starting at `value`.
Output MakePowerVariable(Graph& graph, const std::string& name, DType dtype, double value) {
  Scope root(graph);
  // Outside the caller's control dependencies and cond branches (TF's init_scope).
  Graph::ContextOverride outside(graph, nullptr);
  Tensor init = dtype == kFloat64 ? Tensor::Scalar<double>(value)
                                  : Tensor::Scalar<float>(static_cast<float>(value));
  Output c = Const(root.WithOpName(name + "/initial_value"), init);
  return Variable(root.WithOpName(name), c, {.trainable = false});
}

}  // namespace

Adam::Adam(AdamOptions options) : Optimizer(options.name), options_(std::move(options)) {}

void Adam::CreateSlots(const std::vector<Output>& vars) {
  if (!beta1_power_.valid()) {
    Graph& graph = *vars[0].node->graph();
    beta1_power_ = MakePowerVariable(graph, "beta1_power", vars[0].dtype(), options_.beta1);
    beta2_power_ = MakePowerVariable(graph, "beta2_power", vars[0].dtype(), options_.beta2);
  }
  for (const Output& v : vars) {
    MakeSlot(v, "m", 0.0);
    MakeSlot(v, "v", 0.0);
  }
}

void Adam::Prepare(const Scope& scope) {
  lr_ = Hyper(scope, options_.learning_rate, "learning_rate");
  beta1_ = Hyper(scope, options_.beta1, "beta1");
  beta2_ = Hyper(scope, options_.beta2, "beta2");
  epsilon_ = Hyper(scope, options_.epsilon, "epsilon");
}

Operation Adam::ApplyDense(const Scope& scope, Output grad, Output var) {
  return ApplyAdam(scope, var, Slot(var, "m"), Slot(var, "v"), beta1_power_, beta2_power_, lr_,
                   beta1_, beta2_, epsilon_, grad);
}

Operation Adam::ApplySparse(const Scope& scope, Output values, Output indices, Output var) {
  return SparseApplyAdam(scope, var, Slot(var, "m"), Slot(var, "v"), beta1_power_, beta2_power_,
                         lr_, beta1_, beta2_, epsilon_, values, indices);
}

Operation Adam::Finish(const Scope& scope, const std::vector<Operation>& updates) {
  // The powers advance only after every update of this step has read them.
  Scope after = scope.WithControlDependencies(updates);
  std::vector<Operation> all = updates;
  all.push_back(ScaleVariable(after.WithOpName("update_beta1_power"), beta1_power_, beta1_));
  all.push_back(ScaleVariable(after.WithOpName("update_beta2_power"), beta2_power_, beta2_));
  return Group(scope.WithOpName("update"), all);
}

}  // namespace loom::train
