// Estimator, EstimatorSpec, RunConfig, layers, losses, metrics, feature columns and the
// canned estimators: the Estimator half of the Python bindings (branch pyest).
#include "python/src/bindings.h"

namespace loom::python {

void BindEstimator(pybind11::module_& m) {}

}  // namespace loom::python
