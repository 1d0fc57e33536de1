#include "loom/train/gradient_descent.h"

#include "loom/train/training_ops.h"

namespace loom::train {

GradientDescent::GradientDescent(GradientDescentOptions options)
    : Optimizer(options.name), options_(std::move(options)) {}

void GradientDescent::Prepare(const Scope& scope) {
  lr_ = Hyper(scope, options_.learning_rate, "learning_rate");
}

Operation GradientDescent::ApplyDense(const Scope& scope, Output grad, Output var) {
  return ApplyGradientDescent(scope, var, lr_, grad);
}

Operation GradientDescent::ApplySparse(const Scope& scope, Output values, Output indices,
                                       Output var) {
  return SparseApplyGradientDescent(scope, var, lr_, values, indices);
}

}  // namespace loom::train
