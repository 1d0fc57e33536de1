#include "loom/train/optimizer.h"

#include <set>

#include "loom/autodiff/gradients.h"
#include "loom/ops/state.h"
#include "loom/train/training_ops.h"

namespace loom::train {
namespace {

// "['dense/w', 'dense/b']", TF's way of listing variables in messages.
std::string NameList(const std::vector<Output>& vars) {
  std::string out = "[";
  for (size_t i = 0; i < vars.size(); ++i) {
    out += StrCat(i ? ", '" : "'", vars[i].node->name(), "'");
  }
  return out + "]";
}

void CheckVariable(const std::string& optimizer, const Output& var) {
  if (!var.valid()) throw InvalidArgument(optimizer, ": an entry of the variable list is empty");
  if (var.node->op_def().role != OpRole::kVariable) {
    throw InvalidArgument(optimizer, ": ", var.node->description(),
                          " is not a variable; optimizers update Variable nodes");
  }
  if (!IsFloating(var.dtype())) {
    throw InvalidArgument(optimizer, ": variable '", var.node->name(), "' has dtype ",
                          DTypeName(var.dtype()), "; only float32/float64 variables are trained");
  }
}

}  // namespace

std::vector<GradAndVar> Optimizer::ComputeGradients(const Scope& scope, Output loss,
                                                    const std::vector<Output>& var_list) {
  if (!loss.valid()) throw InvalidArgument(name_, ": the loss is an empty Output");
  // One element in any rank ([1], [1, 1]) is a scalar loss, as in TF (EstimatorSpec takes
  // it too); a shape that may hold more is almost always a forgotten reduction.
  bool single_element = !loss.shape().rank_known();
  if (loss.shape().rank_known()) {
    single_element = true;
    for (int64_t d : loss.shape().dims()) single_element = single_element && d == 1;
  }
  if (!IsFloating(loss.dtype()) || !single_element) {
    throw InvalidArgument(name_, ": the loss ", loss.name(),
                          " must be a float32 or float64 scalar (or hold one element, "
                          "shape [1]), but it is ",
                          DTypeName(loss.dtype()), loss.shape(),
                          "; reduce it to a scalar first (Sum or Mean)");
  }
  std::vector<Output> vars = var_list;
  if (vars.empty()) {
    for (Node* n : scope.graph().TrainableVariables()) vars.push_back(n->output(0));
  }
  if (vars.empty()) {
    throw InvalidArgument(name_,
                          ": no variables to optimize: the graph has no trainable "
                          "variables and var_list is empty");
  }
  for (const Output& v : vars) CheckVariable(name_, v);
  std::vector<GradOutput> grads = GradientsWithSparse(scope, {loss}, vars);
  std::vector<GradAndVar> result;
  result.reserve(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) result.emplace_back(grads[i], vars[i]);
  return result;
}

Operation Optimizer::ApplyGradients(const Scope& scope,
                                    const std::vector<GradAndVar>& grads_and_vars,
                                    Output global_step) {
  std::vector<GradAndVar> todo;
  std::vector<Output> all_vars, vars;
  std::set<const Node*> seen;
  for (const auto& [grad, var] : grads_and_vars) {
    CheckVariable(name_, var);
    if (!seen.insert(var.node).second) {
      throw InvalidArgument(name_, ": variable '", var.node->name(),
                            "' appears twice in grads_and_vars; sum its gradients first");
    }
    all_vars.push_back(var);
    if (!grad.valid()) continue;
    const Output& g = grad.is_sparse() ? grad.values : grad.dense;
    if (g.dtype() != var.dtype()) {
      throw InvalidArgument(name_, ": gradient ", g.name(), " has dtype ", DTypeName(g.dtype()),
                            " but variable '", var.node->name(), "' has dtype ",
                            DTypeName(var.dtype()));
    }
    todo.emplace_back(grad, var);
    vars.push_back(var);
  }
  if (todo.empty()) {
    throw InvalidArgument(name_, ": no gradients provided for any variable ", NameList(all_vars),
                          "; check that the loss depends on them through differentiable ops");
  }
  if (global_step.valid() &&
      (global_step.node->op_def().role != OpRole::kVariable || !IsInteger(global_step.dtype()) ||
       !(global_step.shape() == Shape{}))) {
    throw InvalidArgument(name_, ": global_step ", global_step.name(), " (",
                          DTypeName(global_step.dtype()), global_step.shape(),
                          ") must be an integer scalar variable such as train::GlobalStep(scope)");
  }

  CreateSlots(vars);
  Scope opt = scope.NewSubScope(name_);
  Prepare(opt);
  std::vector<Operation> updates;
  for (const auto& [grad, var] : todo) {
    Scope update = opt.NewSubScope("update_" + var.node->name());
    updates.push_back(grad.is_sparse() ? ApplySparse(update, grad.values, grad.indices, var)
                                       : ApplyDense(update, grad.dense, var));
  }
  Operation finish = Finish(opt, updates);
  if (!global_step.valid()) return finish;
  // TF1: the step is incremented only after every update (and the finishing op) has run.
  return AssignAdd(opt.WithControlDependencies({finish}).WithOpName("increment_global_step"),
                   global_step, 1);
}

Operation Optimizer::Minimize(const Scope& scope, Output loss, Output global_step,
                              const std::vector<Output>& var_list) {
  std::vector<GradAndVar> grads_and_vars = ComputeGradients(scope, loss, var_list);
  std::vector<Output> vars;
  bool any = false;
  for (const auto& [grad, var] : grads_and_vars) {
    vars.push_back(var);
    any |= grad.valid();
  }
  if (!any) {
    throw InvalidArgument(name_, ": no gradients provided for any variable ", NameList(vars),
                          " from loss ", loss.name(),
                          "; the loss does not depend on them through differentiable ops "
                          "(a StopGradient, a constant, or another graph's values?)");
  }
  return ApplyGradients(scope, grads_and_vars, global_step);
}

Operation Optimizer::Finish(const Scope& scope, const std::vector<Operation>& updates) {
  return Group(scope.WithOpName("update"), updates);
}

Output Optimizer::GetSlot(const Output& var, const std::string& slot_name) const {
  auto it = slots_.find({var.node, slot_name});
  return it == slots_.end() ? Output() : it->second;
}

std::vector<std::string> Optimizer::GetSlotNames() const {
  std::set<std::string> names;
  for (const auto& [key, slot] : slots_) names.insert(key.second);
  return {names.begin(), names.end()};
}

Output Optimizer::MakeSlot(const Output& var, const std::string& slot_name, double initial_value) {
  auto& slot = slots_[{var.node, slot_name}];
  if (slot.valid()) return slot;
  // Slots sit beside their variable, outside the caller's name scope and control
  // dependencies (TF1's slot_creator).
  Scope root(*var.node->graph());
  Graph::ContextOverride outside(*var.node->graph(), nullptr);
  const std::string base = StrCat(var.node->name(), "/", name_);
  Output init =
      ConstantFill(root.WithOpName(base + "/Initializer"), var.dtype(), var.shape(), initial_value);
  slot = Variable(root.WithOpName(base), init, {.trainable = false});
  return slot;
}

Output Optimizer::Slot(const Output& var, const std::string& slot_name) const {
  Output slot = GetSlot(var, slot_name);
  LOOM_CHECK(slot.valid()) << name_ << ": slot '" << slot_name << "' of '" << var.node->name()
                           << "' was never made";
  return slot;
}

Output Optimizer::Hyper(const Scope& scope, const Input& value, std::string_view name) {
  if (value.is_output()) return value.output();
  Tensor t;
  try {
    t = value.ToTensor(kFloat64);
  } catch (const Error&) {
    t = value.ToTensor(DType::kInvalid);  // a Tensor literal keeps its own dtype
  }
  return Const(scope.WithOpName(name), t);
}

}  // namespace loom::train
