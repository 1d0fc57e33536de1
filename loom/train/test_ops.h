#ifndef LOOM_TRAIN_TEST_OPS_H_
#define LOOM_TRAIN_TEST_OPS_H_

// Test-only ops, so the train tests do not depend on the math family: a differentiable
// quadratic loss.
#include "loom/graph/op_def.h"

namespace loom::train::testing {

// L = sum((x - target)^2), a scalar of x's dtype; dL/dx = 2 * (x - target). No gradient
// flows to target.
Output SquaredError(const Scope& scope, Output x, Output target);

}  // namespace loom::train::testing

#endif  // LOOM_TRAIN_TEST_OPS_H_
