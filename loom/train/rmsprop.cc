#include "loom/train/rmsprop.h"

#include "loom/train/training_ops.h"

namespace loom::train {

RMSProp::RMSProp(RMSPropOptions options) : Optimizer(options.name), options_(std::move(options)) {}

void RMSProp::CreateSlots(const std::vector<Output>& vars) {
  for (const Output& v : vars) {
    MakeSlot(v, "rms", 1.0);
    if (options_.centered) MakeSlot(v, "mg", 0.0);
    MakeSlot(v, "momentum", 0.0);
  }
}

void RMSProp::Prepare(const Scope& scope) {
  lr_ = Hyper(scope, options_.learning_rate, "learning_rate");
  decay_ = Hyper(scope, options_.decay, "decay");
  momentum_ = Hyper(scope, options_.momentum, "momentum");
  epsilon_ = Hyper(scope, options_.epsilon, "epsilon");
}

Operation RMSProp::ApplyDense(const Scope& scope, Output grad, Output var) {
  if (options_.centered) {
    return ApplyCenteredRMSProp(scope, var, Slot(var, "mg"), Slot(var, "rms"),
                                Slot(var, "momentum"), lr_, decay_, momentum_, epsilon_, grad);
  }
  return ApplyRMSProp(scope, var, Slot(var, "rms"), Slot(var, "momentum"), lr_, decay_, momentum_,
                      epsilon_, grad);
}

Operation RMSProp::ApplySparse(const Scope& scope, Output values, Output indices, Output var) {
  if (options_.centered) {
    return SparseApplyCenteredRMSProp(scope, var, Slot(var, "mg"), Slot(var, "rms"),
                                      Slot(var, "momentum"), lr_, decay_, momentum_, epsilon_,
                                      values, indices);
  }
  return SparseApplyRMSProp(scope, var, Slot(var, "rms"), Slot(var, "momentum"), lr_, decay_,
                            momentum_, epsilon_, values, indices);
}

}  // namespace loom::train
