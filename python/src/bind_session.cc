// Session: run(feeds, fetches, targets) converts the feeds (borrowing numpy memory where it
// can, convert.h), releases the GIL for the whole C++ run, and returns numpy arrays.
// make_callable(feeds, fetches, targets) fixes all three once: a SessionCallable called
// with the feed values in order (Session.make_callable, and Session.run's cache).
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/base/error.h"
#include "loom/runtime/session.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

// The fetched values as a list of numpy arrays (convert.h's no-copy rule).
py::list FetchList(std::vector<Tensor>& values) {
  py::list out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = ToNumpy(std::move(values[i]));
  }
  return out;
}

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
  return FetchList(values);
}

// Session.make_callable's native half (and Session.run's cache of one per fetch and feed
// signature, _session.py): the fed outputs, the fetches, the targets and the names the
// errors use are fixed when it is made, so a call only converts its arguments (borrowed
// where convert.h allows), runs with the GIL released and converts the results. Returns
// the fetched values as a list, or None when there are no fetches.
class Callable {
 public:
  Callable(Session& session, std::vector<Output> feeds, std::vector<Output> fetches,
           const std::vector<Node*>& targets)
      : session_(session),
        feeds_(std::move(feeds)),
        fetches_(std::move(fetches)),
        targets_(targets.begin(), targets.end()) {
    what_.reserve(feeds_.size());
    for (const Output& out : feeds_) what_.push_back("feed for '" + out.name() + "'");
  }

  py::object Call(const py::args& args) {
    if (args.size() != feeds_.size()) {
      throw InvalidArgument("Session callable: expected ", feeds_.size(), " feed values (one per ",
                            "feed_list entry), got ", args.size());
    }
    FeedList feed_list;
    feed_list.reserve(feeds_.size());
    for (size_t i = 0; i < feeds_.size(); ++i) {
      py::handle value = args[i];
      if (!py::isinstance<py::array>(value) && py::hasattr(value, "_out") &&
          py::hasattr(value, "graph")) {  // a loom.compat.v1.Tensor
        throw py::type_error("The value of a feed cannot be a tf.Tensor object (" +
                             py::str(value.attr("name")).cast<std::string>() +
                             "). Acceptable feed values include Python scalars, strings, "
                             "lists, numpy ndarrays.");
      }
      feed_list.emplace_back(feeds_[i], ToTensor(value, feeds_[i].dtype(), what_[i]));
    }
    std::vector<Tensor> values;
    {
      py::gil_scoped_release nogil;
      values = session_.Run(feed_list, fetches_, targets_);
    }
    feed_list.clear();  // as in Run
    if (fetches_.empty()) return py::none();
    return FetchList(values);
  }

  size_t num_feeds() const { return feeds_.size(); }

 private:
  Session& session_;
  std::vector<Output> feeds_;
  std::vector<Output> fetches_;
  std::vector<Operation> targets_;
  std::vector<std::string> what_;
};

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
  py::class_<Callable>(m, "SessionCallable")
      .def("__call__", &Callable::Call)
      .def_property_readonly("num_feeds", &Callable::num_feeds);
  py::class_<Session, std::unique_ptr<Session, DeleteWithoutGil>>(m, "Session")
      .def(py::init([](Graph& graph, int intra_op_threads) {
             return new Session(graph, SessionOptions{.intra_op_threads = intra_op_threads});
           }),
           py::arg("graph"), py::arg("intra_op_threads") = 0, py::keep_alive<1, 2>())
      .def("run", &Run, py::arg("feeds"), py::arg("fetches"), py::arg("targets"))
      .def(
          "make_callable",
          [](Session& s, std::vector<Output> feeds, std::vector<Output> fetches,
             const std::vector<Node*>& targets) {
            return std::make_unique<Callable>(s, std::move(feeds), std::move(fetches), targets);
          },
          py::arg("feeds"), py::arg("fetches"), py::arg("targets"), py::keep_alive<0, 1>())
      .def_property_readonly("num_runs", &Session::num_runs)
      .def("read_variable",
           [](Session& s, const std::string& name) { return ToNumpy(s.ReadVariable(name)); })
      .def("variable_initialized", &Session::VariableInitialized);
}

}  // namespace loom::python
