#ifndef LOOM_TRAIN_TRAINING_OPS_H_
#define LOOM_TRAIN_TRAINING_OPS_H_

// Fused variable updates, TF1's training_ops (ApplyAdam, SparseApplyAdam, ...), which the
// optimizers build; usable directly like tf.raw_ops. Each op takes, in order:
//   the variable and its slots, as ref inputs (each must be a Variable node's output);
//   scalar hyperparameters (float32 or float64 scalars, converted to the variable's dtype;
//     literals become Consts of the variable's dtype);
//   the gradient: dense ops take `grad` shaped like the variable; Sparse* ops take
//     `values` [n, row shape...] and `indices` [n] (int32 or int64): row indices[i] of the
//     variable receives gradient row values[i]. Rows sharing an index are summed, then
//     updated once (TF1's _apply_sparse_duplicate_indices). Only the indexed rows of the
//     variable and its slots change; nothing the size of the variable is allocated.
//     SparseApplyAdam is therefore "lazy" Adam (TF's LazyAdamOptimizer): untouched rows'
//     moments do not decay.
// The ops have no outputs: run them as targets or control dependencies. A kernel locks
// its variables (in address order), fails with FailedPrecondition naming an uninitialized
// one, copies a buffer that something else still views (VariableResource::MutableValue), and
// updates in place over the intra-op thread pool. float32 and float64.
// Update rules (TF1's, with g the gradient; lr etc. the scalars):
//   GradientDescent  var -= lr * g
//   Momentum         accum = accum * momentum + g
//                    var -= lr * accum, or with use_nesterov
//                    var -= lr * g + lr * momentum * accum
//   Adam             lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
//                    m += (g - m) * (1 - beta1);  v += (g*g - v) * (1 - beta2)
//                    var -= lr_t * m / (sqrt(v) + epsilon)
//   Adagrad          accum += g*g;  var -= lr * g / sqrt(accum)
//   RMSProp          ms += (g*g - ms) * (1 - rho)
//                    mom = mom * momentum + lr * g / sqrt(ms + epsilon);  var -= mom
//   CenteredRMSProp  as RMSProp with mg += (g - mg) * (1 - rho) and
//                    mom = mom * momentum + lr * g / sqrt(ms - mg*mg + epsilon)
//   Ftrl             new_accum = accum + g*g
//                    linear += g - (new_accum^-lr_power - accum^-lr_power) / lr * var
//                    var = |linear| > l1 ? (l1 * sign(linear) - linear) /
//                          (new_accum^-lr_power / lr + 2 * l2) : 0;  accum = new_accum
#include "loom/graph/op_def.h"

namespace loom::train {

Operation ApplyGradientDescent(const Scope& scope, Output var, Input lr, Output grad);
Operation SparseApplyGradientDescent(const Scope& scope, Output var, Input lr, Output values,
                                     Output indices);

Operation ApplyMomentum(const Scope& scope, Output var, Output accum, Input lr, Input momentum,
                        Output grad, bool use_nesterov = false);
Operation SparseApplyMomentum(const Scope& scope, Output var, Output accum, Input lr,
                              Input momentum, Output values, Output indices,
                              bool use_nesterov = false);

Operation ApplyAdam(const Scope& scope, Output var, Output m, Output v, Input beta1_power,
                    Input beta2_power, Input lr, Input beta1, Input beta2, Input epsilon,
                    Output grad);
Operation SparseApplyAdam(const Scope& scope, Output var, Output m, Output v, Input beta1_power,
                          Input beta2_power, Input lr, Input beta1, Input beta2, Input epsilon,
                          Output values, Output indices);

Operation ApplyAdagrad(const Scope& scope, Output var, Output accum, Input lr, Output grad);
Operation SparseApplyAdagrad(const Scope& scope, Output var, Output accum, Input lr, Output values,
                             Output indices);

Operation ApplyRMSProp(const Scope& scope, Output var, Output ms, Output mom, Input lr, Input rho,
                       Input momentum, Input epsilon, Output grad);
Operation SparseApplyRMSProp(const Scope& scope, Output var, Output ms, Output mom, Input lr,
                             Input rho, Input momentum, Input epsilon, Output values,
                             Output indices);
Operation ApplyCenteredRMSProp(const Scope& scope, Output var, Output mg, Output ms, Output mom,
                               Input lr, Input rho, Input momentum, Input epsilon, Output grad);
Operation SparseApplyCenteredRMSProp(const Scope& scope, Output var, Output mg, Output ms,
                                     Output mom, Input lr, Input rho, Input momentum, Input epsilon,
                                     Output values, Output indices);

Operation ApplyFtrl(const Scope& scope, Output var, Output accum, Output linear, Input lr, Input l1,
                    Input l2, Input lr_power, Output grad);
Operation SparseApplyFtrl(const Scope& scope, Output var, Output accum, Output linear, Input lr,
                          Input l1, Input l2, Input lr_power, Output values, Output indices);

// var *= factor (Adam's beta powers after each step).
Operation ScaleVariable(const Scope& scope, Output var, Input factor);

// A tensor of `shape` (fully defined) filled with `value`: slot initial values, without a
// constant the size of the variable in the graph.
Output ConstantFill(const Scope& scope, DType dtype, const Shape& shape, double value);

// Registers the ops above and the learning-rate schedule ops (learning_rate.h).
void RegisterTrainOps(OpRegistry& registry);

}  // namespace loom::train

#endif  // LOOM_TRAIN_TRAINING_OPS_H_
