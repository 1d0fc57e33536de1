#include "loom/data/symbolic.h"

namespace loom::data {

TensorSpec SpecOfOutput(const Output& output) { return {output.dtype(), output.shape()}; }

Element ResolveBindings(const std::string& stage, const std::map<std::string, Output>& components,
                        const IteratorContext& ctx) {
  Element out;
  for (const auto& [name, o] : components) {
    const Tensor* value = nullptr;
    if (ctx.bindings) {
      auto it = ctx.bindings->find({o.node, o.index});
      if (it != ctx.bindings->end()) value = &it->second;
    }
    if (value == nullptr) {
      throw FailedPrecondition(stage, " component '", name, "' reads '", o.name(),
                               "', which has no value: run the iterator's initializer with '",
                               o.node->name(), "' fed");
    }
    if (value->dtype() != o.dtype() || !value->shape().IsCompatibleWith(o.shape())) {
      throw InvalidArgument(stage, " component '", name, "': the value bound to placeholder '",
                            o.node->name(), "' is ", DTypeName(value->dtype()), value->shape(),
                            " but the placeholder is ", DTypeName(o.dtype()), o.shape());
    }
    out[name] = *value;
  }
  return out;
}

}  // namespace loom::data
