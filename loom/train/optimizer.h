#ifndef LOOM_TRAIN_OPTIMIZER_H_
#define LOOM_TRAIN_OPTIMIZER_H_

// Optimizer: TF1's tf.train.Optimizer. Minimize(loss) = ComputeGradients + ApplyGradients:
//
//   auto train_op = train::Adam({.learning_rate = 1e-3}).Minimize(s, loss, train::GlobalStep(s));
//   session.RunTarget(GlobalVariablesInitializer(s));   // also initializes the slots
//   for (...) session.Run(feeds, {loss}, {train_op});
//
// ApplyGradients builds, under a name scope named after the optimizer ("Adam"), in TF1's
// order:
//   1. the slots each variable needs ("<var>/Adam", "<var>/Adam_1"): non-trainable
//      variables shaped like it, initialized by GlobalVariablesInitializer, created once per
//      optimizer object and variable;
//   2. the hyperparameters as scalar tensors (a literal becomes a float64 Const; an Output,
//      such as a learning-rate schedule, is used as is);
//   3. one fused update op per variable (training_ops.h), dense or sparse as its gradient
//      is; a sparse gradient (Gather over an embedding table) updates only its rows;
//   4. a finishing op after all updates (Adam: its beta powers), and then, when a global
//      step is given, global_step += 1 under a control dependency on everything before, so
//      the step counts finished updates, as in TF1.
// The learning rate and other hyperparameters are read when the update runs, so feeding
// or scheduling them works. The object only builds graph ops; it may be destroyed once
// Minimize returns (the ops live in the graph). Not thread-safe: build from one thread.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::train {

// A variable's gradient (dense, or IndexedSlices for a Gather'd table; invalid when the
// loss does not depend on the variable) and the variable (a Variable node's output).
using GradAndVar = std::pair<GradOutput, Output>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // The gradients of `loss` (a float32/float64 scalar) with respect to var_list (default:
  // the graph's trainable variables), added under scope's "gradients" name scope. A
  // variable the loss does not depend on gets an invalid GradOutput. Throws
  // InvalidArgument for a non-scalar or non-float loss, an empty var_list, or an entry
  // that is not a variable.
  // Virtual (with ApplyGradients and the slot lookups) so that a wrapper can change what
  // happens between the two, as distribute::DistributedOptimizer averages across ranks.
  virtual std::vector<GradAndVar> ComputeGradients(const Scope& scope, Output loss,
                                                   const std::vector<Output>& var_list = {});

  // Applies the gradients (entries with an invalid gradient are skipped) and, when
  // global_step is valid (an integer scalar variable), increments it by one after the
  // updates. Returns the op to run each step. Throws InvalidArgument, naming the
  // variables, when no entry has a gradient, and for a gradient whose dtype or shape does
  // not match its variable.
  virtual Operation ApplyGradients(const Scope& scope,
                                   const std::vector<GradAndVar>& grads_and_vars,
                                   Output global_step = Output());

  // ComputeGradients then ApplyGradients. Throws InvalidArgument naming the loss and the
  // variables when none of them receives a gradient.
  Operation Minimize(const Scope& scope, Output loss, Output global_step = Output(),
                     const std::vector<Output>& var_list = {});

  // The slot `slot_name` (see each optimizer: Adam has "m" and "v") made for `var`, or an
  // invalid Output when none exists.
  virtual Output GetSlot(const Output& var, const std::string& slot_name) const;
  // The slot names this optimizer has created, sorted.
  virtual std::vector<std::string> GetSlotNames() const;
  // The name scope of its ops and the suffix of its slot variables ("Adam").
  const std::string& name() const { return name_; }

 protected:
  explicit Optimizer(std::string name) : name_(std::move(name)) {}

  // Creates this optimizer's slots (and other variables) for `vars`; called first by
  // ApplyGradients. REQUIRES: idempotent per variable (use MakeSlot, which is).
  virtual void CreateSlots(const std::vector<Output>& vars) {}
  // Converts the hyperparameters to tensors under `scope` (use Hyper).
  virtual void Prepare(const Scope& scope) {}
  // The update of one variable from a dense gradient, or from rows `values` at `indices`.
  virtual Operation ApplyDense(const Scope& scope, Output grad, Output var) = 0;
  virtual Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) = 0;
  // The op that completes a step after every update; by default a group of them.
  virtual Operation Finish(const Scope& scope, const std::vector<Operation>& updates);

  // The slot `slot_name` of var, created if absent as a non-trainable variable named
  // "<var>/<name()>" (made unique), shaped like var and filled with `initial_value`.
  Output MakeSlot(const Output& var, const std::string& slot_name, double initial_value);
  // REQUIRES: MakeSlot(var, slot_name, ...) was called.
  Output Slot(const Output& var, const std::string& slot_name) const;
  // A hyperparameter as a scalar tensor: the Output itself, or a float64 Const `name`.
  static Output Hyper(const Scope& scope, const Input& value, std::string_view name);

 private:
  std::string name_;
  std::map<std::pair<const Node*, std::string>, Output> slots_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_OPTIMIZER_H_
