#ifndef LOOM_TRAIN_ADAGRAD_H_
#define LOOM_TRAIN_ADAGRAD_H_

// Adagrad (Duchi et al. 2011), TF1's AdagradOptimizer:
//   accum += g^2;  var -= learning_rate * g / sqrt(accum)
// Slot "accumulator" ("<var>/Adagrad"), starting at initial_accumulator_value. A sparse
// gradient updates only its rows.
#include "loom/train/optimizer.h"

namespace loom::train {

struct AdagradOptions {
  // The step size: a number or a float scalar tensor. Default: 0.001 (TF1 requires it;
  // 0.001 is Keras' default).
  Input learning_rate = 0.001;
  // The accumulators' starting value; must be positive. Default: 0.1.
  double initial_accumulator_value = 0.1;
  // Name scope of the ops and suffix of the slots. Default: "Adagrad".
  std::string name = "Adagrad";
};

class Adagrad : public Optimizer {
 public:
  // Throws InvalidArgument when initial_accumulator_value <= 0.
  explicit Adagrad(AdagradOptions options = {});

 protected:
  void CreateSlots(const std::vector<Output>& vars) override;
  void Prepare(const Scope& scope) override;
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;

 private:
  AdagradOptions options_;
  Output lr_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_ADAGRAD_H_
