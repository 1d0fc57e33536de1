#ifndef LOOM_OPS_OPS_LAYER_H_
#define LOOM_OPS_OPS_LAYER_H_

// The one place that registers every family of the ops layer (state with Const, gradient
// support, math with reduce and matmul, array, random, nn, control). Registration is explicit
// calls, never static initializers, so no linker can drop a record from a registry;
// tests/op_sweep_test.cc checks that every record a source file defines is in its family's
// Register*Ops list and that every Register*Ops function is reached from AllOps().
#include "loom/graph/op_def.h"

namespace loom {

void RegisterOpsLayerOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_OPS_LAYER_H_
