#ifndef LOOM_TRAIN_GRADIENT_DESCENT_H_
#define LOOM_TRAIN_GRADIENT_DESCENT_H_

// Plain gradient descent, TF1's GradientDescentOptimizer: var -= learning_rate * grad.
// No slots. A sparse gradient updates only its rows.
#include "loom/train/optimizer.h"

namespace loom::train {

struct GradientDescentOptions {
  // The step size: a number or a float scalar tensor (e.g. a schedule from
  // learning_rate.h). Default: 0.01 (TF1 requires it; 0.01 is Keras' SGD default).
  Input learning_rate = 0.01;
  // Name scope of the ops. Default: "GradientDescent".
  std::string name = "GradientDescent";
};

class GradientDescent : public Optimizer {
 public:
  explicit GradientDescent(GradientDescentOptions options = {});

 protected:
  void Prepare(const Scope& scope) override;
  Operation ApplyDense(const Scope& scope, Output grad, Output var) override;
  Operation ApplySparse(const Scope& scope, Output values, Output indices, Output var) override;

 private:
  GradientDescentOptions options_;
  Output lr_;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_GRADIENT_DESCENT_H_
