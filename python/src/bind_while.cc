// tf.while_loop's builder (loom/runtime/while_loop.h): the package opens a loop, builds
// cond and body as Python functions on its loop variables, and finishes it
// (python/loom/compat/v1/_while_loop.py).
#include <pybind11/stl.h>

#include "loom/runtime/while_loop.h"
#include "python/src/core.h"

namespace loom::python {

void BindWhile(py::module_& m) {
  py::class_<WhileBuilder>(m, "WhileBuilder")
      .def(py::init([](Graph& graph, const std::string& prefix, const std::vector<Node*>& control,
                       const std::vector<Output>& initial_values, const py::list& invariants,
                       int64_t maximum_iterations, int64_t parallel_iterations, bool back_prop,
                       const std::string& name) {
             WhileOptions options{.maximum_iterations = maximum_iterations,
                                  .parallel_iterations = parallel_iterations,
                                  .back_prop = back_prop,
                                  .name = name};
             // False: the initial value's shape; None: an unknown rank; else the dims.
             for (py::handle shape : invariants) {
               const bool initial = py::isinstance<py::bool_>(shape) && !shape.cast<bool>();
               options.shape_invariants.push_back(initial ? std::nullopt
                                                          : std::optional<Shape>(ToShape(shape)));
             }
             return std::make_unique<WhileBuilder>(MakeScope(graph, prefix, control),
                                                   initial_values, std::move(options));
           }),
           py::arg("graph"), py::arg("prefix"), py::arg("control"), py::arg("initial_values"),
           py::arg("shape_invariants"), py::arg("maximum_iterations"),
           py::arg("parallel_iterations"), py::arg("back_prop"), py::arg("name"),
           py::keep_alive<1, 2>())
      .def_property_readonly("prefix", [](const WhileBuilder& b) { return b.scope().prefix(); })
      .def_property_readonly("loop_vars", &WhileBuilder::loop_vars)
      .def("finish", &WhileBuilder::Finish, py::arg("cond"), py::arg("body_outputs"));
}

}  // namespace loom::python
