#ifndef LOOM_OPS_STATE_H_
#define LOOM_OPS_STATE_H_

// Placeholders, variables and assignments; identity, grouping and gradient stopping.
//
//   auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 784});
//   auto w = Variable(s.WithOpName("w"), RandomNormal(s, {784, 10}, ...));
//   Session session(graph);
//   session.RunTarget(GlobalVariablesInitializer(s));
//
// Variables live in the Session (a VariableResource named after the variable node). The
// Variable node's output is its current value; Assign* ops take the variable as a ref
// input and update it in place when nothing else views its buffer (copy-on-write
// otherwise), so values already fetched never change under the caller.
#include "loom/graph/op_def.h"

namespace loom {

// A placeholder: a value that must be fed to Session::Run. Feeds are checked against
// dtype and the known dims of `shape` (default: unknown shape).
Output Placeholder(const Scope& scope, DType dtype, const Shape& shape = Shape::Unknown());
// Like Placeholder, but produces `default_value` when not fed.
Output PlaceholderWithDefault(const Scope& scope, Input default_value, const Shape& shape);

struct VariableOptions {
  // Included in Graph::TrainableVariables() (optimizers' default var_list). Default: true.
  bool trainable = true;
  // The variable's static shape. Default: the initial value's static shape.
  Shape shape = Shape::Unknown();
  // A local variable (metric counters, epoch state): not saved in checkpoints, not
  // trainable, initialized by LocalVariablesInitializer. Default: false.
  bool local = false;
};

// A variable. As an Output it reads the current value; `initializer` assigns the
// initial value (GlobalVariablesInitializer runs every one). Built inside a cond branch,
// the variable and its initializer are still added outside it (control.h); an initial
// value built inside a branch is an InvalidArgument.
struct Variable : public Output {
  Variable() = default;
  Variable(const Scope& scope, Input initial_value, const VariableOptions& options = {});
  Operation initializer;
  const std::string& name() const { return node->name(); }
};

// Sets `variable` (a Variable node's output) to value, and outputs the new value.
Output Assign(const Scope& scope, Output variable, Input value);
// AssignAdd / AssignSub add / subtract a value of the variable's shape, or a scalar
// (to every element).
Output AssignAdd(const Scope& scope, Output variable, Input value);
Output AssignSub(const Scope& scope, Output variable, Input value);

// One op that runs all initializers of the graph's variables (made so far).
Operation GlobalVariablesInitializer(const Scope& scope);
// The same for variables with attr "local" true (metrics' counters).
Operation LocalVariablesInitializer(const Scope& scope);

Output Identity(const Scope& scope, Input x);
// Gradients do not flow through (TF's tf.stop_gradient).
Output StopGradient(const Scope& scope, Input x);
Operation NoOp(const Scope& scope);
// A NoOp with control dependencies on every op in `deps` (tf.group).
Operation Group(const Scope& scope, const std::vector<Operation>& deps);

// Throws FailedPrecondition naming the variable when it has no value yet.
// REQUIRES: var.mu() held.
void CheckInitialized(const KernelContext& ctx, const VariableResource& var, int ref_input)
    LOOM_REQUIRES(var.mu());

void RegisterStateOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_STATE_H_
