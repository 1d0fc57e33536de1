// tf.py_func / tf.numpy_function: the ops PyFunc (stateful) and PyFuncStateless, whose
// kernel calls a Python callable with the inputs as numpy values and returns its results
// as the outputs. The records live here, not in loom/ops, because the kernel needs the
// interpreter; they are not in the registry (AllOps), so a serialized graph that holds
// one does not load (NotFoundError naming PyFunc): the function is not serialized, as TF's
// py_func body is not. The callable travels in the node itself as a HostObject attribute ("func"),
// so no global table maps tokens to functions and the function lives as long as its graph.
//
// GIL: Session.run and the training loop release it; the kernel takes it for the call
// and the conversions only, so a py_func in a parallel Dataset.map runs one call at a
// time and the rest of the pipeline keeps running.
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "loom/graph/op_def.h"
#include "python/src/bind_util.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

// The Python callable of one py_func node. Copies of the attribute share it; the last
// drop takes the GIL (PyRef), wherever the graph dies.
struct PyCallable {
  PyRef fn;
};

// Interpreter shutdown. A pipeline thread (a parallel Dataset.map's worker, a prefetch)
// may still be running a py_func when the program ends; a thread that waits for the GIL
// once finalization has begun is ended by Python with a forced unwind, which the
// pipeline's catch-all cannot let through (std::terminate). So an atexit handler, run
// while the interpreter is whole, sets `exiting` and lets go of the GIL until no kernel
// is waiting for it; from then on a py_func kernel fails with Cancelled without asking
// for the GIL. Process-wide because the interpreter is.
std::atomic<bool> exiting{false};
std::atomic<int> kernels_in_python{0};

struct InPython {
  InPython() { ++kernels_in_python; }
  ~InPython() { --kernels_in_python; }
};

[[noreturn]] void ThrowExiting(const Node& node) {
  throw Cancelled(node.description(), ": the Python interpreter is shutting down")
      .AtNode(node.name());
}

inline constexpr Attr<HostObject> kFunc{"func"};
inline constexpr Attr<std::vector<DType>> kTout{"Tout"};

// The Error an exception from the function becomes, as TF's py_func maps them:
// ValueError and TypeError -> InvalidArgument, StopIteration -> OutOfRange, MemoryError
// -> ResourceExhausted, NotImplementedError -> Unimplemented, anything else -> Unknown.
// The message carries the Python traceback. REQUIRES: the GIL.
Error ErrorFromPython(py::error_already_set& e, const Node& node) {
  ErrorCode code = ErrorCode::kUnknown;  // tf.errors.UnknownError
  if (e.matches(PyExc_ValueError) || e.matches(PyExc_TypeError)) {
    code = ErrorCode::kInvalidArgument;
  } else if (e.matches(PyExc_StopIteration)) {
    code = ErrorCode::kOutOfRange;
  } else if (e.matches(PyExc_MemoryError)) {
    code = ErrorCode::kResourceExhausted;
  } else if (e.matches(PyExc_NotImplementedError)) {
    code = ErrorCode::kUnimplemented;
  }
  std::string text;
  try {
    py::object lines =
        py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), e.trace());
    text = py::str("").attr("join")(lines).cast<std::string>();
  } catch (const py::error_already_set&) {
    text = e.what();
  }
  return Error(code,
               StrCat(node.description(), ": the Python function raised an exception:\n", text))
      .AtNode(node.name());
}

// Result `i` of the function as a Tensor of `want`. The dtype must be the declared one
// (TF does not cast either); a C-contiguous array is borrowed, not copied.
Tensor ResultTensor(const py::object& value, DType want, size_t i, const Node& node) {
  py::object array = py::module_::import("numpy").attr("asarray")(value);
  if (want == kString && py::str(array.attr("dtype").attr("kind")).cast<std::string>() == "U") {
    array = py::module_::import("numpy").attr("char").attr("encode")(array, "utf-8");
  }
  DType have = FromNumpyDType(array.attr("dtype").cast<py::dtype>());
  if (have != want) {
    std::string have_name = have == DType::kInvalid
                                ? py::str(array.attr("dtype")).cast<std::string>()
                                : std::string(DTypeName(have));
    throw InvalidArgument(node.description(), ": value ", i, " returned by the Python function is ",
                          have_name, ", but Tout declares ", DTypeName(want),
                          "; return an array of the declared dtype (np.asarray(value, \"",
                          py::str(NumpyDType(want)).cast<std::string>(), "\"))")
        .AtNode(node.name());
  }
  return ToTensor(array, want, StrCat(node.description(), " result ", i));
}

void PyFuncKernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const HostObject* func = ctx.find_attr(kFunc);
  if (func == nullptr) {
    // Defensive: add_py_func always sets it, and a loaded graph cannot hold the op.
    throw FailedPrecondition(node.description(),
                             ": the node has no Python function (a py_func's function is not "
                             "serialized with its graph); build the graph with tf.py_func again "
                             "in this process")
        .AtNode(node.name());
  }
  const PyCallable& f = func->As<PyCallable>(node.description());
  const std::vector<DType>& tout = ctx.attr(kTout);
  InPython in_python;
  if (exiting) ThrowExiting(node);
  py::gil_scoped_acquire gil;
  if (exiting) ThrowExiting(node);
  std::vector<Tensor> results;
  try {
    // Each input as Session.run would return it: an array (a numpy scalar, or bytes for a
    // string scalar, for rank 0) that the function may change without touching the graph.
    py::tuple args(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) args[i] = ToNumpy(ctx.input(i));
    py::object ret = f.fn.get()(*args);
    std::vector<py::object> values;
    if (ret.is_none() && tout.empty()) {
      // A function for its side effects only.
    } else if (py::isinstance<py::list>(ret) || py::isinstance<py::tuple>(ret)) {
      for (py::handle v : ret) values.push_back(py::reinterpret_borrow<py::object>(v));
    } else {
      values.push_back(ret);
    }
    if (values.size() != tout.size()) {
      throw InvalidArgument(node.description(), ": the Python function returned ", values.size(),
                            " values, but Tout declares ", tout.size(),
                            "; return a list with one array per Tout entry")
          .AtNode(node.name());
    }
    for (size_t i = 0; i < values.size(); ++i) {
      results.push_back(ResultTensor(values[i], tout[i], i, node));
    }
  } catch (py::error_already_set& e) {
    throw ErrorFromPython(e, node);
  }
  for (size_t i = 0; i < results.size(); ++i) ctx.set_output(static_cast<int>(i), results[i]);
}

OpDef PyFuncRecord(std::string name, bool stateful) {
  OpDef op{
      .name = std::move(name),
      .num_inputs = kVariadic,
      .stateful = stateful,
      // func is optional only because a host object is never serialized: a loaded graph
      // lacks it, and the kernel says so.
      .attrs = {kFunc.Optional(), kTout.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::FromAttrList(kTout)},
      // The function decides the shapes when it runs: every output's rank is unknown
      // until the caller's set_shape, as in TF.
      .shape =
          [](InferenceContext& c) {
            const std::vector<DType>& tout = c.attr(kTout);
            for (size_t i = 0; i < tout.size(); ++i) {
              c.set_output(static_cast<int>(i), tout[i], Shape::Unknown());
            }
          },
      .kernel = PyFuncKernel,
      // TF registers PyFunc as NotDifferentiable: tf.gradients gives None for the inputs
      // (no gradient flows through it), rather than failing.
      .grad =
          [](const GradContext& c) {
            return std::vector<GradOutput>(static_cast<size_t>(c.node().num_inputs()));
          },
      .not_swept = "needs a Python callable; python/tests/test_py_func.py runs it",
  };
  ValidateOpDef(op);
  return op;
}

const OpDef& PyFuncOp(bool stateful) {
  static const OpDef* stateful_op = new OpDef(PyFuncRecord("PyFunc", true));
  static const OpDef* stateless_op = new OpDef(PyFuncRecord("PyFuncStateless", false));
  return stateful ? *stateful_op : *stateless_op;
}

}  // namespace

void BindPyFunc(py::module_& m) {
  // Registered with atexit by loom.compat.v1 (see `exiting` above).
  m.def("py_func_shutdown", [] {
    exiting = true;
    py::gil_scoped_release release;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (kernels_in_python > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  // add_py_func(graph, name, inputs, func, Tout, stateful, control_inputs) -> Node: a
  // PyFunc (stateful) or PyFuncStateless node named `name` calling `func`.
  m.def(
      "add_py_func",
      [](Graph& graph, const std::string& name, const std::vector<Output>& inputs, py::object func,
         const std::vector<DType>& tout, bool stateful, const std::vector<Node*>& control_inputs) {
        if (!PyCallable_Check(func.ptr())) {
          throw InvalidArgument("py_func '", name, "': func must be callable, got ",
                                py::str(py::type::of(func)).cast<std::string>());
        }
        auto callable = std::make_shared<const PyCallable>(PyCallable{PyRef(std::move(func))});
        AttrMap attrs;
        attrs.Set(kFunc(HostObject::Of<PyCallable>(std::move(callable))));
        attrs.Set(kTout(tout));
        return graph.AddNode(PyFuncOp(stateful), name, inputs, std::move(attrs), control_inputs);
      },
      py::arg("graph"), py::arg("name"), py::arg("inputs"), py::arg("func"), py::arg("Tout"),
      py::arg("stateful"), py::arg("control_inputs"), py::return_value_policy::reference);
}

}  // namespace loom::python
