#ifndef LOOM_TRAIN_MOMENTUM_H_
#define LOOM_TRAIN_MOMENTUM_H_

// Momentum SGD, TF1's MomentumOptimizer:
//   accum = momentum * accum + grad
//   var -= learning_rate * accum                                  (default)
//   var -= learning_rate * grad + learning_rate * momentum * accum (use_nesterov)
// Slot "momentum" ("<var>/Momentum"), zeros. A sparse gradient updates only its rows
// (and their accumulators).
#include "loom/train/optimizer.h"

namespace loom::train {

struct MomentumOptions {
  // The step size: a number or a float scalar tensor. Default: 0.01 (TF1 requires it).
  Input learning_rate = 0.01;
  // The accumulator's decay: a number or a float scalar tensor. Default: 0.9 (TF1
  // requires it).
  Input momentum = 0.9;
  // Nesterov momentum (Sutskever et al. 2013). Default: false.
  bool use_nesterov = false;
  // Name scope of the ops and suffix of the slots. Default: "Momentum".
  std::string name = "Momentum";
};

class Momentum : public Optimizer {
 public:
  explicit Momentum(MomentumOptions options = {});

 protected:
  void CreateSlots(const std::vector<Output>& vars) override;
  void Prepare(const Scope& scope) override;
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;

 private:
  MomentumOptions options_;
  Output lr_, momentum_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_MOMENTUM_H_
