#ifndef LOOM_TRAIN_GLOBAL_STEP_H_
#define LOOM_TRAIN_GLOBAL_STEP_H_

// The global step: TF1's tf.train.get_or_create_global_step. One int64 scalar variable
// named "global_step" at the graph's root, non-trainable, initialized to 0 by
// GlobalVariablesInitializer, and registered in the graph's GraphKeys::kGlobalStep
// collection (collections.h), which is how everything finds it again: by registration,
// not by name. Optimizer::ApplyGradients increments it by one after the variable updates;
// schedules (learning_rate.h) and hooks read it.
//
//   auto step = train::GlobalStep(s);
//   auto train_op = train::Adam({}).Minimize(s, loss, step);
#include "loom/ops/state.h"

namespace loom::train {

// The graph's global step, created on first use (ignoring the scope's name prefix and
// control dependencies). Throws InvalidArgument when the graph has none yet but another
// node is already named "global_step".
Variable GlobalStep(const Scope& scope);

// The graph's global step (the one variable in its GraphKeys::kGlobalStep collection), or
// an invalid Variable (valid() false) when it has none. Never creates it. Throws
// InvalidArgument when the collection holds more than one variable, or one that is not
// an int64 (or int32) scalar.
Variable GetGlobalStep(const Graph& graph);

}  // namespace loom::train

#endif  // LOOM_TRAIN_GLOBAL_STEP_H_
