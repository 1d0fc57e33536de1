#include "loom/train/momentum.h"

#include "loom/train/training_ops.h"

namespace loom::train {

Momentum::Momentum(MomentumOptions options)
    : Optimizer(options.name), options_(std::move(options)) {}

void Momentum::CreateSlots(const std::vector<Output>& vars) {
  for (const Output& v : vars) MakeSlot(v, "momentum", 0.0);
}

void Momentum::Prepare(const Scope& scope) {
  lr_ = Hyper(scope, options_.learning_rate, "learning_rate");
  momentum_ = Hyper(scope, options_.momentum, "momentum");
}

Operation Momentum::ApplyDense(const Scope& scope, Output grad, Output var) {
  return ApplyMomentum(scope, var, Slot(var, "momentum"), lr_, momentum_, grad,
                       options_.use_nesterov);
}

Operation Momentum::ApplySparse(const Scope& scope, Output values, Output indices, Output var) {
  return SparseApplyMomentum(scope, var, Slot(var, "momentum"), lr_, momentum_, values, indices,
                             options_.use_nesterov);
}

}  // namespace loom::train
