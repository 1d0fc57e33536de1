#ifndef LOOM_ESTIMATOR_LAYERS_INTERNAL_H_
#define LOOM_ESTIMATOR_LAYERS_INTERNAL_H_

// Helpers shared by the layer files (not part of the public API).
#include <string>

#include "loom/estimator/layers.h"
#include "loom/ops/state.h"

namespace loom::layers::internal {

// A variable named "<layer>/<name>" whose initial value (from `init`, or `fallback` when
// init is empty) is built under "<layer>/<name>_initializer". With a regularizer, its
// penalty "<layer>/<name>_regularizer/penalty" joins GraphKeys::kRegularizationLosses.
// With a getter, the getter decides (VariableGetter): the variable it returns, made (if
// it makes one) under the variable scope it names instead of `layer`.
Output MakeVariable(const Scope& layer, const std::string& name, const Shape& shape, DType dtype,
                    const initializers::Initializer& init,
                    const initializers::Initializer& fallback, bool trainable,
                    const Regularizer& regularizer = {}, const VariableGetter& getter = {});

// The layer's name scope: `name` made unique under scope, or scope itself when name is
// empty (the caller's own, e.g. a TF1 variable scope's name scope).
Scope LayerScope(const Scope& scope, const std::string& name);

// The activation applied in `layer`, or x itself when empty.
Output Activate(const Scope& layer, const Activation& activation, Output x);

// "SAME" / "VALID" from any case; throws InvalidArgument naming `layer` otherwise.
std::string NormalizePadding(const std::string& padding, const std::string& layer);

// Checks x is float32/float64 with known rank >= min_rank; names the layer.
void CheckFloatInput(const Output& x, const std::string& layer, int min_rank);

}  // namespace loom::layers::internal

#endif  // LOOM_ESTIMATOR_LAYERS_INTERNAL_H_
