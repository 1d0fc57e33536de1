// The extension module loom._loom: the C++ library as the pure-Python package
// (python/loom) uses it. Nothing here is TF-shaped; loom.compat.v1 gives the TF1 names.
#include <pybind11/pybind11.h>

#include "python/src/bindings.h"

PYBIND11_MODULE(_loom, m) {
  m.doc() = "Loom's C++ core; use it through loom.compat.v1";
  loom::python::BindCore(m);
  loom::python::BindTrain(m);
  loom::python::BindEstimator(m);
}
