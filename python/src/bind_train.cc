// SessionRunHook (subclassable from Python), MonitoredTrainingSession and SessionRunArgs:
// the train half of the Python bindings (branch pyest).
#include "python/src/bindings.h"

namespace loom::python {

void BindTrain(pybind11::module_& m) {}

}  // namespace loom::python
