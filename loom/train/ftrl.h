#ifndef LOOM_TRAIN_FTRL_H_
#define LOOM_TRAIN_FTRL_H_

// FTRL-Proximal (McMahan et al. 2013, "Ad Click Prediction"), TF1's FtrlOptimizer
// (without l2_shrinkage), p = learning_rate_power:
//   new_accum = accum + g^2
//   linear += g - (new_accum^-p - accum^-p) / learning_rate * var
//   var = |linear| > l1 ? (l1 * sign(linear) - linear) / (new_accum^-p / learning_rate + 2 * l2)
//                       : 0
//   accum = new_accum
// Slots "accum" ("<var>/Ftrl", starting at initial_accumulator_value) and "linear"
// ("<var>/Ftrl_1", zeros). A sparse gradient updates only its rows.
#include "loom/train/optimizer.h"

namespace loom::train {

struct FtrlOptions {
  // The step size: a number or a float scalar tensor. Default: 0.001 (TF1 requires it;
  // 0.001 is Keras' default).
  Input learning_rate = 0.001;
  // How the step size shrinks with the accumulated squared gradient; <= 0. Default: -0.5.
  double learning_rate_power = -0.5;
  // The accumulators' starting value; >= 0. Default: 0.1.
  double initial_accumulator_value = 0.1;
  // L1 regularization strength; >= 0. Default: 0.0.
  double l1_regularization_strength = 0.0;
  // L2 regularization strength; >= 0. Default: 0.0.
  double l2_regularization_strength = 0.0;
  // Name scope of the ops and suffix of the slots. Default: "Ftrl".
  std::string name = "Ftrl";
};

class Ftrl : public Optimizer {
 public:
  // Throws InvalidArgument for an option outside its range (as TF1 does).
  explicit Ftrl(FtrlOptions options = {});

 protected:
  void CreateSlots(const std::vector<Output>& vars) override;
  void Prepare(const Scope& scope) override;
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;

 private:
  FtrlOptions options_;
  Output lr_, l1_, l2_, lr_power_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_FTRL_H_
