#ifndef LOOM_PYTHON_SRC_BINDINGS_H_
#define LOOM_PYTHON_SRC_BINDINGS_H_

// The parts of the extension module loom._loom, one function each, called in this order
// by PYBIND11_MODULE in module.cc. A later part may use the classes an earlier one binds
// (the train part takes the core's Graph, Session and Output).
//   BindCore       graph, tensors <-> numpy, op records, Session, errors, gradients,
//                  variables, optimizers, schedules, Saver, summaries, datasets
//                  (bind_core*.cc)
//   BindTrain      SessionRunHook subclassable from Python, MonitoredTrainingSession,
//                  SessionRunArgs (bind_train.cc)
//   BindEstimator  Estimator, EstimatorSpec, RunConfig, layers, losses, metrics, feature
//                  columns, canned estimators (bind_estimator.cc)
#include <pybind11/pybind11.h>

namespace loom::python {

void BindCore(pybind11::module_& m);
void BindTrain(pybind11::module_& m);
void BindEstimator(pybind11::module_& m);

}  // namespace loom::python

#endif  // LOOM_PYTHON_SRC_BINDINGS_H_
