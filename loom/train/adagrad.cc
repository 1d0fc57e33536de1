#include "loom/train/adagrad.h"

#include "loom/train/training_ops.h"

namespace loom::train {

Adagrad::Adagrad(AdagradOptions options) : Optimizer(options.name), options_(std::move(options)) {
  if (!(options_.initial_accumulator_value > 0)) {
    throw InvalidArgument(name(), ": initial_accumulator_value must be positive, got ",
                          options_.initial_accumulator_value);
  }
}

void Adagrad::CreateSlots(const std::vector<Output>& vars) {
  for (const Output& v : vars) MakeSlot(v, "accumulator", options_.initial_accumulator_value);
}

void Adagrad::Prepare(const Scope& scope) {
  lr_ = Hyper(scope, options_.learning_rate, "learning_rate");
}

Operation Adagrad::ApplyDense(const Scope& scope, Output grad, Output var) {
  return ApplyAdagrad(scope, var, Slot(var, "accumulator"), lr_, grad);
}

Operation Adagrad::ApplySparse(const Scope& scope, Output values, Output indices, Output var) {
  return SparseApplyAdagrad(scope, var, Slot(var, "accumulator"), lr_, values, indices);
}

}  // namespace loom::train
