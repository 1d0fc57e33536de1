#ifndef LOOM_TRAIN_GLOBAL_STEP_H_
#define LOOM_TRAIN_GLOBAL_STEP_H_

// The global step: TF1's tf.train.get_or_create_global_step. One int64 scalar variable
// named "global_step" at the graph's root, non-trainable, initialized to 0 by
// GlobalVariablesInitializer. Optimizer::ApplyGradients increments it by one after the
// variable updates; schedules (learning_rate.h) and hooks read it.
//
//   auto step = train::GlobalStep(s);
//   auto train_op = train::Adam({}).Minimize(s, loss, step);
#include "loom/ops/state.h"

namespace loom::train {

// The graph's "global_step" variable, created on first use (ignoring the scope's name
// prefix and control dependencies). Throws InvalidArgument when a node named
// "global_step" exists but is not an int64 (or int32) scalar variable.
Variable GlobalStep(const Scope& scope);

// The graph's "global_step" variable, or an invalid Variable (valid() false) when the
// graph has none. Never creates it.
Variable GetGlobalStep(const Graph& graph);

}  // namespace loom::train

#endif  // LOOM_TRAIN_GLOBAL_STEP_H_
