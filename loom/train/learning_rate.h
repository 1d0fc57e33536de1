#ifndef LOOM_TRAIN_LEARNING_RATE_H_
#define LOOM_TRAIN_LEARNING_RATE_H_

// Learning-rate schedules, TF1's tf.train.*_decay: each is one small graph op that reads
// the global step (int64 or int32 scalar, usually train::GlobalStep) and outputs the
// learning rate as a scalar of learning_rate's dtype (float32 for a literal), to pass as
// an optimizer's learning_rate:
//
//   auto step = train::GlobalStep(s);
//   auto lr = train::ExponentialDecay(s, 0.1, step, /*decay_steps=*/1000, /*decay_rate=*/0.96);
//   auto train_op = train::GradientDescent({.learning_rate = lr}).Minimize(s, loss, step);
//
// The ops are not differentiable. Formulas (TF1's), with t the global step:
//   ExponentialDecay   lr * decay_rate^(t / decay_steps), the exponent floored if staircase
//   InverseTimeDecay   lr / (1 + decay_rate * t / decay_steps), t / decay_steps floored if
//                      staircase
//   NaturalExpDecay    lr * exp(-decay_rate * t / decay_steps), t / decay_steps floored if
//                      staircase
//   PiecewiseConstant  values[0] for t <= boundaries[0], values[i] for
//                      boundaries[i-1] < t <= boundaries[i], values.back() after the last
//   PolynomialDecay    (lr - end_lr) * (1 - t' / decay_steps')^power + end_lr, where
//                      t' = min(t, decay_steps), decay_steps' = decay_steps; or if cycle,
//                      t' = t, decay_steps' = decay_steps * max(1, ceil(t / decay_steps))
//   CosineDecay        lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(t, decay_steps) /
//                      decay_steps)) + alpha)
// Construction throws InvalidArgument for decay_steps <= 0 or mismatched piecewise lists.
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::train {

Output ExponentialDecay(const Scope& scope, Input learning_rate, Output global_step,
                        int64_t decay_steps, double decay_rate, bool staircase = false);

Output InverseTimeDecay(const Scope& scope, Input learning_rate, Output global_step,
                        int64_t decay_steps, double decay_rate, bool staircase = false);

Output NaturalExpDecay(const Scope& scope, Input learning_rate, Output global_step,
                       int64_t decay_steps, double decay_rate, bool staircase = false);

// REQUIRES: values.size() == boundaries.size() + 1, boundaries increasing. The output is
// float32.
Output PiecewiseConstant(const Scope& scope, Output global_step, std::vector<int64_t> boundaries,
                         std::vector<double> values);

Output PolynomialDecay(const Scope& scope, Input learning_rate, Output global_step,
                       int64_t decay_steps, double end_learning_rate = 1e-4, double power = 1.0,
                       bool cycle = false);

Output CosineDecay(const Scope& scope, Input learning_rate, Output global_step, int64_t decay_steps,
                   double alpha = 0.0);

// Called by RegisterTrainOps.
void RegisterLearningRateOps(OpRegistry& registry);

}  // namespace loom::train

#endif  // LOOM_TRAIN_LEARNING_RATE_H_
