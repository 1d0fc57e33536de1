// The train layer's hooks and MonitoredTrainingSession for Python (tf.train.SessionRunHook,
// the built-in hooks, tf.train.MonitoredTrainingSession). TF's Python signatures, nested
// fetch structures and feed_dicts are handled in loom/compat/v1/train_hooks.py; this file
// is the seam to C++:
//   - PyHook, the trampoline: a C++ SessionRunHook that forwards each call to a Python
//     adapter object (train_hooks._HookAdapter) with the GIL held. The adapter's
//     before_run returns flat lists (fetches, feeds, targets); after_run gets the fetched
//     tensors back as a flat list. A Python exception raised in a hook propagates through
//     the C++ loop as pybind11::error_already_set (not a loom::Error, so MonitoredSession
//     treats it as a failure: End does not run) and reaches the caller as itself.
//   - the built-in hooks as classes held by std::shared_ptr<SessionRunHook>, so any of
//     them (and PyHook) goes into a HookList;
//   - PyListener, the same kind of trampoline for a CheckpointSaverListener
//     (train_hooks._ListenerAdapter): begin / before_save / after_save / end with the GIL
//     held; after_save's truth requests a stop, as in TF;
//   - MonitoredSession (made by MonitoredTrainingSession), whose run releases the GIL.
// Lifetime: every hook handed to C++ keeps its Python object alive through the
// shared_ptr's deleter, which takes the GIL to drop the reference.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/train/basic_hooks.h"
#include "loom/train/global_step.h"
#include "loom/train/monitored_session.h"
#include "python/src/bind_util.h"
#include "python/src/bindings.h"

namespace py = pybind11;

namespace loom::python {
namespace {

using train::HookList;
using train::SessionRunArgs;
using train::SessionRunContext;
using train::SessionRunHook;
using train::SessionRunValues;

// A C++ hook that calls a Python adapter (see the file comment).
class PyHook : public SessionRunHook {
 public:
  explicit PyHook(py::object adapter) : adapter_(std::move(adapter)) {}
  ~PyHook() override {
    if (!Py_IsInitialized()) {
      adapter_.release();  // at interpreter exit: leak, never touch Python
      return;
    }
    py::gil_scoped_acquire gil;
    adapter_ = py::object();
  }

  void Begin(Graph& graph) override {
    py::gil_scoped_acquire gil;
    adapter_.attr("begin")(py::cast(&graph, py::return_value_policy::reference));
  }
  void AfterCreateSession(Session& session) override {
    py::gil_scoped_acquire gil;
    adapter_.attr("after_create_session")(py::cast(&session, py::return_value_policy::reference));
  }
  SessionRunArgs BeforeRun(SessionRunContext& context) override {
    py::gil_scoped_acquire gil;
    py::object args =
        adapter_.attr("before_run")(py::cast(&context, py::return_value_policy::reference));
    SessionRunArgs result;
    if (args.is_none()) return result;
    auto tuple = args.cast<py::tuple>();
    result.fetches = tuple[0].cast<std::vector<Output>>();
    result.feeds = ToFeedList(tuple[1], "a hook's SessionRunArgs.feed_dict");
    for (Node* target : tuple[2].cast<std::vector<Node*>>()) result.targets.emplace_back(target);
    return result;
  }
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override {
    py::gil_scoped_acquire gil;
    py::list results;
    for (const Tensor& t : values.results) results.append(ToNumpy(t));
    adapter_.attr("after_run")(py::cast(&context, py::return_value_policy::reference), results);
  }
  void End(Session& session) override {
    py::gil_scoped_acquire gil;
    adapter_.attr("end")(py::cast(&session, py::return_value_policy::reference));
  }

 private:
  py::object adapter_;
};

// A C++ CheckpointSaverListener that calls a Python adapter (see the file comment). The
// session's graph goes along, so the adapter can wrap the session as a tf.Session.
class PyListener : public train::CheckpointSaverListener {
 public:
  explicit PyListener(py::object adapter) : adapter_(std::move(adapter)) {}
  ~PyListener() override {
    if (!Py_IsInitialized()) {
      adapter_.release();  // at interpreter exit: leak, never touch Python
      return;
    }
    py::gil_scoped_acquire gil;
    adapter_ = py::object();
  }

  void Begin() override {
    py::gil_scoped_acquire gil;
    adapter_.attr("begin")();
  }
  void BeforeSave(Session& session, int64_t global_step) override {
    py::gil_scoped_acquire gil;
    adapter_.attr("before_save")(Ref(&session), Ref(&session.graph()), global_step);
  }
  bool AfterSave(Session& session, int64_t global_step) override {
    py::gil_scoped_acquire gil;
    return adapter_.attr("after_save")(Ref(&session), Ref(&session.graph()), global_step)
        .cast<bool>();
  }
  void End(Session& session, int64_t global_step) override {
    py::gil_scoped_acquire gil;
    adapter_.attr("end")(Ref(&session), Ref(&session.graph()), global_step);
  }

 private:
  template <typename T>
  static py::object Ref(T* object) {
    return py::cast(object, py::return_value_policy::reference);
  }
  py::object adapter_;
};

// LoggingTensorHook with tensors given by name ("softmax_tensor", "loss:0") or as
// tensors: names are looked up in Begin, in the graph being run (TF resolves them there
// too), then a train::LoggingTensorHook does the work.
class NamedLoggingTensorHook : public SessionRunHook {
 public:
  using Entry = std::pair<std::string, std::variant<std::string, Output>>;
  NamedLoggingTensorHook(std::vector<Entry> tensors, train::LoggingTensorOptions options)
      : tensors_(std::move(tensors)), options_(std::move(options)) {}

  void Begin(Graph& graph) override {
    std::vector<std::pair<std::string, Output>> resolved;
    for (const auto& [tag, tensor] : tensors_) {
      if (const Output* output = std::get_if<Output>(&tensor)) {
        resolved.emplace_back(tag, *output);
      } else {
        resolved.emplace_back(tag, graph.GetOutput(std::get<std::string>(tensor)));
      }
    }
    inner_ = std::make_unique<train::LoggingTensorHook>(std::move(resolved), options_);
    inner_->Begin(graph);
  }
  SessionRunArgs BeforeRun(SessionRunContext& context) override {
    return inner_->BeforeRun(context);
  }
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override {
    inner_->AfterRun(context, values);
  }
  void End(Session& session) override { inner_->End(session); }

 private:
  std::vector<Entry> tensors_;
  train::LoggingTensorOptions options_;
  std::unique_ptr<train::LoggingTensorHook> inner_;
};

// NanTensorHook with the loss given by name or as a tensor (resolved in Begin).
class NamedNanTensorHook : public SessionRunHook {
 public:
  NamedNanTensorHook(std::variant<std::string, Output> loss, bool fail_on_nan_loss)
      : loss_(std::move(loss)), fail_(fail_on_nan_loss) {}
  void Begin(Graph& graph) override {
    const Output* output = std::get_if<Output>(&loss_);
    inner_ = std::make_unique<train::NanTensorHook>(
        output ? *output : graph.GetOutput(std::get<std::string>(loss_)), fail_);
    inner_->Begin(graph);
  }
  SessionRunArgs BeforeRun(SessionRunContext& context) override {
    return inner_->BeforeRun(context);
  }
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override {
    inner_->AfterRun(context, values);
  }

 private:
  std::variant<std::string, Output> loss_;
  bool fail_;
  std::unique_ptr<train::NanTensorHook> inner_;
};

}  // namespace

FeedList ToFeedList(const py::handle& feeds, std::string_view what) {
  FeedList result;
  if (feeds.is_none()) return result;
  for (py::handle item : feeds) {
    auto pair = item.cast<py::tuple>();
    auto output = pair[0].cast<Output>();
    result.emplace_back(output, ToTensor(pair[1], output.dtype(), what));
  }
  return result;
}

HookList ToHookList(const py::handle& hooks) {
  HookList result;
  if (hooks.is_none()) return result;
  for (py::handle hook : hooks) {
    auto cpp = hook.cast<std::shared_ptr<SessionRunHook>>();
    // The Python object stays alive as long as C++ holds the hook.
    PyRef keep(py::reinterpret_borrow<py::object>(hook));
    result.push_back(
        std::shared_ptr<SessionRunHook>(cpp.get(), [cpp, keep](SessionRunHook*) mutable {
          keep = PyRef();
          cpp.reset();
        }));
  }
  return result;
}

void BindTrain(py::module_& m) {
  // Identifies a C++ graph across the Python wrappers of it (train_hooks._graphs).
  m.def("graph_address", [](const Graph& g) { return reinterpret_cast<uintptr_t>(&g); });

  py::class_<SessionRunContext>(m, "SessionRunContext")
      .def("request_stop", &SessionRunContext::RequestStop)
      .def_property_readonly("stop_requested", &SessionRunContext::stop_requested)
      .def_property_readonly("session", &SessionRunContext::session,
                             py::return_value_policy::reference)
      .def_property_readonly("original_fetches",
                             [](const SessionRunContext& c) { return c.original_args().fetches; })
      .def_property_readonly(
          "original_targets",
          [](const SessionRunContext& c) {
            std::vector<Node*> nodes;
            for (const Operation& op : c.original_args().targets) nodes.push_back(op.node);
            return nodes;
          },
          py::return_value_policy::reference);

  py::class_<SessionRunHook, std::shared_ptr<SessionRunHook>>(m, "SessionRunHook");

  py::class_<PyHook, SessionRunHook, std::shared_ptr<PyHook>>(m, "PyHook")
      .def(py::init<py::object>(), py::arg("adapter"));

  py::class_<train::CheckpointSaverListener, std::shared_ptr<train::CheckpointSaverListener>>(
      m, "CheckpointSaverListener");
  py::class_<PyListener, train::CheckpointSaverListener, std::shared_ptr<PyListener>>(m,
                                                                                      "PyListener")
      .def(py::init<py::object>(), py::arg("adapter"));

  py::class_<train::StopAtStepHook, SessionRunHook, std::shared_ptr<train::StopAtStepHook>>(
      m, "StopAtStepHook")
      .def(py::init([](py::object num_steps, py::object last_step) {
             return std::make_shared<train::StopAtStepHook>(train::StopAtStepOptions{
                 .num_steps = OptionalInt(num_steps), .last_step = OptionalInt(last_step)});
           }),
           py::arg("num_steps") = py::none(), py::arg("last_step") = py::none());

  py::class_<train::StepCounterHook, SessionRunHook, std::shared_ptr<train::StepCounterHook>>(
      m, "StepCounterHook")
      .def(py::init([](py::object every_n_steps, py::object every_n_secs, std::string output_dir) {
             return std::make_shared<train::StepCounterHook>(
                 train::StepCounterOptions{.every_n_steps = OptionalInt(every_n_steps),
                                           .every_n_secs = OptionalDouble(every_n_secs),
                                           .output_dir = std::move(output_dir)});
           }),
           py::arg("every_n_steps") = py::none(), py::arg("every_n_secs") = py::none(),
           py::arg("output_dir") = "");

  py::class_<NamedLoggingTensorHook, SessionRunHook, std::shared_ptr<NamedLoggingTensorHook>>(
      m, "LoggingTensorHook")
      .def(py::init([](std::vector<NamedLoggingTensorHook::Entry> tensors, py::object every_n_iter,
                       py::object every_n_secs, bool at_end, py::object formatter) {
             train::LoggingTensorOptions options{.every_n_iter = OptionalInt(every_n_iter),
                                                 .every_n_secs = OptionalDouble(every_n_secs),
                                                 .at_end = at_end};
             if (!formatter.is_none()) {
               // Called from the training loop (GIL released): take it for the call.
               options.formatter =
                   [fn = PyRef(formatter)](const std::map<std::string, Tensor>& values) {
                     py::gil_scoped_acquire gil;
                     py::dict numpy;
                     for (const auto& [tag, value] : values) numpy[py::str(tag)] = ToNumpy(value);
                     return fn.get()(numpy).cast<std::string>();
                   };
             }
             return std::make_shared<NamedLoggingTensorHook>(std::move(tensors),
                                                             std::move(options));
           }),
           py::arg("tensors"), py::arg("every_n_iter") = py::none(),
           py::arg("every_n_secs") = py::none(), py::arg("at_end") = false,
           py::arg("formatter") = py::none());

  py::class_<train::CheckpointSaverHook, SessionRunHook,
             std::shared_ptr<train::CheckpointSaverHook>>(m, "CheckpointSaverHook")
      .def(
          py::init([](std::string checkpoint_dir, py::object save_secs, py::object save_steps,
                      std::string checkpoint_basename,
                      std::vector<std::shared_ptr<train::CheckpointSaverListener>> listeners) {
            return std::make_shared<train::CheckpointSaverHook>(
                std::move(checkpoint_dir),
                train::CheckpointSaverOptions{.save_secs = OptionalDouble(save_secs),
                                              .save_steps = OptionalInt(save_steps),
                                              .checkpoint_basename = std::move(checkpoint_basename),
                                              .listeners = std::move(listeners)});
          }),
          py::arg("checkpoint_dir"), py::arg("save_secs") = py::none(),
          py::arg("save_steps") = py::none(), py::arg("checkpoint_basename") = "model.ckpt",
          py::arg("listeners") = std::vector<std::shared_ptr<train::CheckpointSaverListener>>{});

  py::class_<train::SummarySaverHook, SessionRunHook, std::shared_ptr<train::SummarySaverHook>>(
      m, "SummarySaverHook")
      .def(py::init([](py::object save_steps, py::object save_secs, std::string output_dir,
                       std::optional<Output> summary_op) {
             train::SummarySaverOptions options{.save_steps = OptionalInt(save_steps),
                                                .save_secs = OptionalDouble(save_secs),
                                                .output_dir = std::move(output_dir)};
             if (summary_op) {
               options.summary_op = *summary_op;
             } else {
               options.scaffold = std::make_shared<train::Scaffold>();
             }
             return std::make_shared<train::SummarySaverHook>(std::move(options));
           }),
           py::arg("save_steps") = py::none(), py::arg("save_secs") = py::none(),
           py::arg("output_dir") = "", py::arg("summary_op") = py::none());

  py::class_<NamedNanTensorHook, SessionRunHook, std::shared_ptr<NamedNanTensorHook>>(
      m, "NanTensorHook")
      .def(py::init<std::variant<std::string, Output>, bool>(), py::arg("loss_tensor"),
           py::arg("fail_on_nan_loss") = true);

  py::class_<train::FinalOpsHook, SessionRunHook, std::shared_ptr<train::FinalOpsHook>>(
      m, "FinalOpsHook")
      .def(py::init([](std::vector<Output> final_ops, const py::object& feeds) {
             return std::make_shared<train::FinalOpsHook>(
                 std::move(final_ops), ToFeedList(feeds, "FinalOpsHook's final_ops_feed_dict"));
           }),
           py::arg("final_ops"), py::arg("feeds") = py::none())
      .def_property_readonly("final_ops_values", [](const train::FinalOpsHook& hook) {
        py::list values;
        for (const Tensor& t : hook.final_ops_values()) values.append(ToNumpy(t));
        return values;
      });

  py::class_<train::GlobalStepWaiterHook, SessionRunHook,
             std::shared_ptr<train::GlobalStepWaiterHook>>(m, "GlobalStepWaiterHook")
      .def(py::init<int64_t, double>(), py::arg("wait_until_step"), py::arg("poll_secs") = 0.5);

  py::class_<train::ProfilerHook, SessionRunHook, std::shared_ptr<train::ProfilerHook>>(
      m, "ProfilerHook")
      .def(py::init([](py::object save_steps, py::object save_secs, std::string output_dir) {
             return std::make_shared<train::ProfilerHook>(
                 train::ProfilerOptions{.save_steps = OptionalInt(save_steps),
                                        .save_secs = OptionalDouble(save_secs),
                                        .output_dir = std::move(output_dir)});
           }),
           py::arg("save_steps") = py::none(), py::arg("save_secs") = py::none(),
           py::arg("output_dir") = "");

  py::class_<train::MonitoredSession>(m, "MonitoredSession")
      .def(
          "run",
          [](train::MonitoredSession& s, const py::object& feeds,
             const std::vector<Output>& fetches, const std::vector<Node*>& target_nodes) {
            FeedList feed_list = ToFeedList(feeds, "MonitoredSession.run's feed_dict");
            std::vector<Operation> targets(target_nodes.begin(), target_nodes.end());
            std::vector<Tensor> values =
                WithoutGil([&] { return s.Run(feed_list, fetches, targets); });
            py::list result;
            for (const Tensor& t : values) result.append(ToNumpy(t));
            return result;
          },
          py::arg("feeds"), py::arg("fetches"), py::arg("targets"))
      .def("should_stop", &train::MonitoredSession::ShouldStop)
      .def("close", [](train::MonitoredSession& s) { WithoutGil([&] { s.Close(); }); })
      .def_property_readonly("end_of_input", &train::MonitoredSession::end_of_input)
      .def_property_readonly("raw_session", &train::MonitoredSession::raw_session,
                             py::return_value_policy::reference);

  // The Scaffold a session finalized (its init ops, summary op and Saver), held by the
  // Python graph so that a later session over the same (finalized) graph reuses them, as
  // TF's Scaffold finds them in the graph's collections, instead of building new ones.
  py::class_<train::Scaffold, std::shared_ptr<train::Scaffold>>(m, "Scaffold");

  // tf.train.MonitoredTrainingSession; the graph must outlive the session (the Python
  // wrapper keeps it). Returns (session, scaffold).
  m.def(
      "monitored_training_session",
      [](Graph& graph, bool is_chief, std::string checkpoint_dir, py::object hooks,
         py::object chief_only_hooks, py::object save_checkpoint_secs,
         py::object save_checkpoint_steps, py::object save_summaries_steps,
         py::object save_summaries_secs, int64_t log_step_count_steps, std::string summary_dir,
         std::optional<Output> summary_op, Node* init_op, py::object init_fn,
         const std::shared_ptr<train::Scaffold>& previous) {
        train::MonitoredTrainingSessionOptions options;
        options.is_chief = is_chief;
        options.checkpoint_dir = std::move(checkpoint_dir);
        options.hooks = ToHookList(hooks);
        options.chief_only_hooks = ToHookList(chief_only_hooks);
        options.save_checkpoint_secs = OptionalDouble(save_checkpoint_secs);
        options.save_checkpoint_steps = OptionalInt(save_checkpoint_steps);
        options.save_summaries_steps = OptionalInt(save_summaries_steps);
        options.save_summaries_secs = OptionalDouble(save_summaries_secs);
        options.log_step_count_steps = log_step_count_steps;
        options.summary_dir = std::move(summary_dir);
        options.scaffold = std::make_shared<train::Scaffold>();
        if (previous != nullptr) {
          options.scaffold->init_op = previous->init_op;
          options.scaffold->local_init_op = previous->local_init_op;
          options.scaffold->summary_op = previous->summary_op;
          options.scaffold->saver = previous->saver;
        }
        if (summary_op) options.scaffold->summary_op = *summary_op;
        if (init_op != nullptr) options.scaffold->init_op = Operation(init_op);
        if (!init_fn.is_none()) {
          options.scaffold->init_fn = [fn = PyRef(init_fn)](Session& session) {
            py::gil_scoped_acquire gil;
            fn.get()(py::cast(&session, py::return_value_policy::reference));
          };
        }
        auto session = WithoutGil([&] { return train::MonitoredTrainingSession(graph, options); });
        return py::make_tuple(py::cast(std::move(session)), options.scaffold);
      },
      py::arg("graph"), py::arg("is_chief") = true, py::arg("checkpoint_dir") = "",
      py::arg("hooks") = py::none(), py::arg("chief_only_hooks") = py::none(),
      py::arg("save_checkpoint_secs") = py::none(), py::arg("save_checkpoint_steps") = py::none(),
      py::arg("save_summaries_steps") = py::none(), py::arg("save_summaries_secs") = py::none(),
      py::arg("log_step_count_steps") = 100, py::arg("summary_dir") = "",
      py::arg("summary_op") = py::none(), py::arg("init_op") = static_cast<Node*>(nullptr),
      py::arg("init_fn") = py::none(), py::arg("previous_scaffold") = nullptr);
}

}  // namespace loom::python
