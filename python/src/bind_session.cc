// Session: run(feeds, fetches, targets) converts the feeds (borrowing numpy memory where it
// can, convert.h), releases the GIL for the whole C++ run, and returns numpy arrays.
#include <pybind11/stl.h>

#include "loom/runtime/session.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

py::list Run(Session& session, const py::list& feeds, const std::vector<Output>& fetches,
             const std::vector<Node*>& targets) {
  FeedList feed_list;
  feed_list.reserve(feeds.size());
  for (py::handle item : feeds) {
    auto pair = item.cast<py::tuple>();
    Output out = pair[0].cast<Output>();
    feed_list.emplace_back(out, ToTensor(pair[1], out.dtype(), "feed for '" + out.name() + "'"));
  }
  std::vector<Operation> target_ops(targets.begin(), targets.end());
  std::vector<Tensor> values;
  {
    py::gil_scoped_release nogil;
    values = session.Run(feed_list, fetches, target_ops);
  }
  feed_list.clear();  // borrowed feeds drop their arrays here, unless the run kept them
  py::list out;
  for (Tensor& t : values) out.append(ToNumpy(std::move(t)));
  return out;
}

// Destroys a Session without the GIL: its iterators may hold numpy arrays whose release
// (convert.h) takes the GIL on a pipeline thread that the destructor joins.
struct DeleteWithoutGil {
  void operator()(Session* session) const {
    py::gil_scoped_release nogil;
    delete session;
  }
};

}  // namespace

void BindSession(py::module_& m) {
  py::class_<Session, std::unique_ptr<Session, DeleteWithoutGil>>(m, "Session")
      .def(py::init([](Graph& graph, int intra_op_threads) {
             return new Session(graph, SessionOptions{.intra_op_threads = intra_op_threads});
           }),
           py::arg("graph"), py::arg("intra_op_threads") = 0, py::keep_alive<1, 2>())
      .def("run", &Run, py::arg("feeds"), py::arg("fetches"), py::arg("targets"))
      .def_property_readonly("num_runs", &Session::num_runs)
      .def("read_variable",
           [](Session& s, const std::string& name) { return ToNumpy(s.ReadVariable(name)); })
      .def("variable_initialized", &Session::VariableInitialized);
}

}  // namespace loom::python
