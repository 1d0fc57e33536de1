#ifndef LOOM_DATA_SYMBOLIC_H_
#define LOOM_DATA_SYMBOLIC_H_

// Sources over graph Outputs (placeholders): their values come from the Bindings that an
// initializer op builds from the Session's feeds.
#include "loom/data/dataset_impl.h"

namespace loom::data {

// The spec component for an Output: its dtype and static shape.
TensorSpec SpecOfOutput(const Output& output);
// The bound tensor of each component. Throws FailedPrecondition when unbound and
// InvalidArgument, naming the placeholder, when the value's dtype or shape does not match
// the Output's.
Element ResolveBindings(const std::string& stage, const std::map<std::string, Output>& components,
                        const IteratorContext& ctx);

}  // namespace loom::data

#endif  // LOOM_DATA_SYMBOLIC_H_
