// BindCore: errors first (every later part throws them), then the graph, the session,
// training basics and datasets.
#include <pybind11/stl.h>

#include "loom/base/error.h"
#include "python/src/bindings.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

struct ErrorClasses {
  py::object base;
  std::map<ErrorCode, py::object> by_code;
};

ErrorClasses& Classes() {
  static ErrorClasses* classes = new ErrorClasses();
  return *classes;
}

}  // namespace

Scope MakeScope(Graph& graph, const std::string& prefix, const std::vector<Node*>& control_deps) {
  Scope s = Scope(graph).WithPrefix(prefix);
  if (!control_deps.empty()) {
    std::vector<Operation> deps(control_deps.begin(), control_deps.end());
    s = s.WithControlDependencies(deps);
  }
  return s;
}

void BindErrors(py::module_& m) {
  // TF's tf.errors: OpError (with error_code) and one subclass per code. The classes are
  // made here so that C++ errors arrive as them; loom.compat.v1.errors re-exports them.
  ErrorClasses& classes = Classes();
  PyObject* base = PyErr_NewException("loom._loom.OpError", PyExc_Exception, nullptr);
  classes.base = py::reinterpret_steal<py::object>(base);
  m.attr("OpError") = classes.base;
  const std::pair<ErrorCode, const char*> kinds[] = {
      {ErrorCode::kCancelled, "CancelledError"},
      {ErrorCode::kUnknown, "UnknownError"},
      {ErrorCode::kInvalidArgument, "InvalidArgumentError"},
      {ErrorCode::kNotFound, "NotFoundError"},
      {ErrorCode::kAlreadyExists, "AlreadyExistsError"},
      {ErrorCode::kResourceExhausted, "ResourceExhaustedError"},
      {ErrorCode::kFailedPrecondition, "FailedPreconditionError"},
      {ErrorCode::kAborted, "AbortedError"},
      {ErrorCode::kOutOfRange, "OutOfRangeError"},
      {ErrorCode::kUnimplemented, "UnimplementedError"},
      {ErrorCode::kInternal, "InternalError"},
      {ErrorCode::kUnavailable, "UnavailableError"},
      {ErrorCode::kDataLoss, "DataLossError"},
  };
  for (const auto& [code, name] : kinds) {
    std::string qualified = std::string("loom._loom.") + name;
    PyObject* cls = PyErr_NewException(qualified.c_str(), base, nullptr);
    py::object c = py::reinterpret_steal<py::object>(cls);
    c.attr("error_code") = static_cast<int>(code);
    classes.by_code[code] = c;
    m.attr(name) = c;
  }
  classes.base.attr("error_code") = static_cast<int>(ErrorCode::kInternal);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      ErrorClasses& classes = Classes();
      auto it = classes.by_code.find(e.code());
      py::object cls = it == classes.by_code.end() ? classes.base : it->second;
      py::object instance = cls(e.message());
      instance.attr("message") = e.message();
      instance.attr("node_name") = e.node().empty() ? py::object(py::none()) : py::str(e.node());
      PyErr_SetObject(cls.ptr(), instance.ptr());
    }
  });
}

void BindCore(py::module_& m) {
  BindErrors(m);
  BindGraph(m);
  BindSession(m);
  BindTrainCore(m);
  BindData(m);
  BindPyFunc(m);
  BindWhile(m);
}

}  // namespace loom::python
