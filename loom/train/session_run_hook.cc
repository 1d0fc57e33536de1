#include "loom/train/session_run_hook.h"

#include "loom/train/global_step.h"

namespace loom::train {

int64_t StepValue(const Tensor& step) {
  if (step.dtype() == kInt32) return step.scalar<int32_t>();
  if (step.dtype() == kInt64) return step.scalar<int64_t>();
  throw InvalidArgument("the global step must be an int32 or int64 scalar, got ",
                        DTypeName(step.dtype()), step.shape());
}

Output RequireGlobalStep(const Graph& graph, std::string_view who) {
  Variable step = GetGlobalStep(graph);
  if (!step.valid()) {
    throw FailedPrecondition(who, " needs a global step: create it with train::GlobalStep(scope) ",
                             "before the session starts");
  }
  return step;
}

}  // namespace loom::train
