#ifndef LOOM_PYTHON_SRC_CORE_H_
#define LOOM_PYTHON_SRC_CORE_H_

// The parts of BindCore (bind_core.cc), one per file, and what they share.
//   BindErrors   loom::Error -> the Python exception classes OpError and its subclasses
//                (InvalidArgumentError, ...), message intact (bind_core.cc)
//   BindGraph    DType, Graph, Node, Output, the op records, generic node building,
//                collections, gradients, variables (bind_graph.cc)
//   BindSession  Session.run with the GIL released, numpy in and out (bind_session.cc)
//   BindTrainCore optimizers, global step, schedules, Saver, summaries, FileWriter
//                (bind_train_core.cc)
//   BindData     Dataset and its iterators, map traced into a graph (bind_data.cc)
//   BindPyFunc   tf.py_func's ops, a kernel that calls Python (bind_py_func.cc)
//   BindWhile    tf.while_loop's builder (bind_while.cc)
// The Python objects of a graph's nodes and outputs hold no reference to it: the
// package's wrappers (loom.compat.v1.Tensor, Operation) keep the Graph alive.
#include <string>
#include <vector>

#include "loom/graph/scope.h"
#include "python/src/convert.h"

namespace loom::python {

void BindErrors(py::module_& m);
void BindGraph(py::module_& m);
void BindSession(py::module_& m);
void BindTrainCore(py::module_& m);
void BindData(py::module_& m);
void BindPyFunc(py::module_& m);
void BindWhile(py::module_& m);

// The scope the package's builder calls run in: `prefix` (the current name scope, as
// the package tracks it) and `control_deps` (the tf.control_dependencies stack).
Scope MakeScope(Graph& graph, const std::string& prefix,
                const std::vector<Node*>& control_deps = {});

}  // namespace loom::python

#endif  // LOOM_PYTHON_SRC_CORE_H_
