#ifndef LOOM_TRAIN_ADAM_H_
#define LOOM_TRAIN_ADAM_H_

// Adam (Kingma & Ba 2015), TF1's AdamOptimizer, with the bias corrections folded into the
// step size exactly as TF1's ApplyAdam kernel does:
//   t = t + 1 (kept as beta1_power = beta1^t, beta2_power = beta2^t)
//   lr_t = learning_rate * sqrt(1 - beta2^t) / (1 - beta1^t)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   var -= lr_t * m / (sqrt(v) + epsilon)
// Slots "m" ("<var>/Adam") and "v" ("<var>/Adam_1"), zeros. Two non-trainable scalar
// variables per optimizer, "beta1_power" and "beta2_power" (the first variable's dtype,
// starting at beta1 and beta2), are multiplied by beta1 and beta2 after all updates of a
// step. A sparse gradient updates only its rows and their moments (TF's LazyAdam; TF1's
// dense-fallback Adam would decay every row's moments).
#include "loom/train/optimizer.h"

namespace loom::train {

struct AdamOptions {
  // The step size: a number or a float scalar tensor. Default: 0.001.
  Input learning_rate = 0.001;
  // Decay of the first-moment estimates. Default: 0.9.
  double beta1 = 0.9;
  // Decay of the second-moment estimates. Default: 0.999.
  double beta2 = 0.999;
  // Added to sqrt(v) ("epsilon hat" in the paper). Default: 1e-8.
  double epsilon = 1e-8;
  // Name scope of the ops and suffix of the slots. Default: "Adam".
  std::string name = "Adam";
};

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});

  // The beta1^t and beta2^t variables; invalid before the first ApplyGradients.
  Output beta1_power() const { return beta1_power_; }
  Output beta2_power() const { return beta2_power_; }

 protected:
  void CreateSlots(const std::vector<Output>& vars) override;
  void Prepare(const Scope& scope) override;
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;
  Operation Finish(const Scope& scope, const std::vector<Operation>& updates) override;

 private:
  AdamOptions options_;
  Output beta1_power_, beta2_power_;
  Output lr_, beta1_, beta2_, epsilon_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_ADAM_H_
