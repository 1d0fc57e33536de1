#include "loom/train/ftrl.h"

#include "loom/train/training_ops.h"

namespace loom::train {

Ftrl::Ftrl(FtrlOptions options) : Optimizer(options.name), options_(std::move(options)) {
  auto require = [this](bool ok, std::string_view what, double value) {
    if (!ok) throw InvalidArgument(name(), ": ", what, ", got ", value);
  };
  require(options_.learning_rate_power <= 0, "learning_rate_power must be <= 0",
          options_.learning_rate_power);
  require(options_.initial_accumulator_value >= 0, "initial_accumulator_value must be >= 0",
          options_.initial_accumulator_value);
  require(options_.l1_regularization_strength >= 0, "l1_regularization_strength must be >= 0",
          options_.l1_regularization_strength);
  require(options_.l2_regularization_strength >= 0, "l2_regularization_strength must be >= 0",
          options_.l2_regularization_strength);
}

void Ftrl::CreateSlots(const std::vector<Output>& vars) {
  for (const Output& v : vars) {
    MakeSlot(v, "accum", options_.initial_accumulator_value);
    MakeSlot(v, "linear", 0.0);
  }
}

void Ftrl::Prepare(const Scope& scope) {
  lr_ = Hyper(scope, options_.learning_rate, "learning_rate");
  l1_ = Hyper(scope, options_.l1_regularization_strength, "l1_regularization_strength");
  l2_ = Hyper(scope, options_.l2_regularization_strength, "l2_regularization_strength");
  lr_power_ = Hyper(scope, options_.learning_rate_power, "learning_rate_power");
}

Operation Ftrl::ApplyDense(const Scope& scope, Output grad, Output var) {
  return ApplyFtrl(scope, var, Slot(var, "accum"), Slot(var, "linear"), lr_, l1_, l2_, lr_power_,
                   grad);
}

Operation Ftrl::ApplySparse(const Scope& scope, Output values, Output indices, Output var) {
  return SparseApplyFtrl(scope, var, Slot(var, "accum"), Slot(var, "linear"), lr_, l1_, l2_,
                         lr_power_, values, indices);
}

}  // namespace loom::train
