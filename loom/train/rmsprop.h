#ifndef LOOM_TRAIN_RMSPROP_H_
#define LOOM_TRAIN_RMSPROP_H_

// RMSProp (Hinton's lecture 6e), TF1's RMSPropOptimizer:
//   ms = decay * ms + (1 - decay) * g^2
//   mom = momentum * mom + learning_rate * g / sqrt(ms + epsilon);  var -= mom
// centered also tracks mg = decay * mg + (1 - decay) * g and divides by
// sqrt(ms - mg^2 + epsilon) (an estimate of the variance instead of the second moment).
// Slots, in creation order: "rms" ("<var>/RMSProp", ones, as TF1), "mg" (centered only,
// zeros), "momentum" (zeros). A sparse gradient updates only its rows.
#include "loom/train/optimizer.h"

namespace loom::train {

struct RMSPropOptions {
  // The step size: a number or a float scalar tensor. Default: 0.001 (TF1 requires it;
  // 0.001 is Keras' default).
  Input learning_rate = 0.001;
  // Discount of the gradient history (TF1's `decay`, the kernels' rho). Default: 0.9.
  double decay = 0.9;
  // Default: 0.0.
  double momentum = 0.0;
  // Default: 1e-10.
  double epsilon = 1e-10;
  // Normalize by the estimated variance of the gradient. Default: false.
  bool centered = false;
  // Name scope of the ops and suffix of the slots. Default: "RMSProp".
  std::string name = "RMSProp";
};

class RMSProp : public Optimizer {
 public:
  explicit RMSProp(RMSPropOptions options = {});

 protected:
  void CreateSlots(const std::vector<Output>& vars) override;
  void Prepare(const Scope& scope) override;
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;

 private:
  RMSPropOptions options_;
  Output lr_, decay_, momentum_, epsilon_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_RMSPROP_H_
