// Training basics: optimizers, the global step, learning-rate schedules, Saver, summaries
// and FileWriter. Each builder takes the graph and the package's current name scope.
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "loom/base/env.h"
#include "loom/estimator/all_ops.h"
#include "loom/graph/graph_def.h"
#include "loom/train/adagrad.h"
#include "loom/train/adam.h"
#include "loom/train/file_writer.h"
#include "loom/train/ftrl.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/learning_rate.h"
#include "loom/train/momentum.h"
#include "loom/train/rmsprop.h"
#include "loom/train/saver.h"
#include "loom/train/summary.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

// An optimizer hyperparameter: a number or a scalar tensor (a schedule).
Input NumberOrOutput(py::handle value) {
  if (py::isinstance<Output>(value)) return Input(value.cast<Output>());
  return Input(value.cast<double>());
}

py::object GradToPython(const GradOutput& g) {
  if (g.is_sparse()) return py::make_tuple(g.indices, g.values, g.dense_shape);
  if (g.dense.valid()) return py::cast(g.dense);
  return py::none();
}

GradOutput GradFromPython(py::handle g) {
  if (g.is_none()) return GradOutput();
  if (py::isinstance<py::tuple>(g)) {
    auto t = g.cast<py::tuple>();
    return GradOutput::Sparse(t[0].cast<Output>(), t[1].cast<Output>(), t[2].cast<Output>());
  }
  return GradOutput(g.cast<Output>());
}

Output OptionalOutput(py::handle value) {
  return value.is_none() ? Output() : value.cast<Output>();
}

Scope NamedScope(Graph& g, const std::string& prefix, const std::string& name) {
  Scope s = MakeScope(g, prefix);
  return name.empty() ? s : s.WithOpName(name);
}

void BindOptimizers(py::module_& m) {
  py::class_<train::Optimizer>(m, "Optimizer")
      .def_property_readonly("name", &train::Optimizer::name)
      .def(
          "compute_gradients",
          [](train::Optimizer& o, Graph& g, const std::string& prefix, Output loss,
             const std::vector<Output>& var_list) {
            py::list out;
            for (const auto& [grad, var] :
                 o.ComputeGradients(MakeScope(g, prefix), loss, var_list)) {
              out.append(py::make_tuple(GradToPython(grad), var));
            }
            return out;
          },
          py::arg("graph"), py::arg("prefix"), py::arg("loss"), py::arg("var_list"))
      .def(
          "apply_gradients",
          [](train::Optimizer& o, Graph& g, const std::string& prefix, const py::list& pairs,
             py::object global_step) {
            std::vector<train::GradAndVar> gv;
            for (py::handle p : pairs) {
              auto t = p.cast<py::tuple>();
              gv.emplace_back(GradFromPython(t[0]), t[1].cast<Output>());
            }
            return o.ApplyGradients(MakeScope(g, prefix), gv, OptionalOutput(global_step)).node;
          },
          py::return_value_policy::reference)
      .def(
          "minimize",
          [](train::Optimizer& o, Graph& g, const std::string& prefix, Output loss,
             py::object global_step, const std::vector<Output>& var_list) {
            return o.Minimize(MakeScope(g, prefix), loss, OptionalOutput(global_step), var_list)
                .node;
          },
          py::return_value_policy::reference)
      .def("get_slot",
           [](const train::Optimizer& o, const Output& var, const std::string& slot) -> py::object {
             Output s = o.GetSlot(var, slot);
             return s.valid() ? py::cast(s) : py::none();
           })
      .def("get_slot_names", &train::Optimizer::GetSlotNames);

  m.def("gradient_descent",
        [](py::object lr, std::string name) -> std::unique_ptr<train::Optimizer> {
          return std::make_unique<train::GradientDescent>(
              train::GradientDescentOptions{.learning_rate = NumberOrOutput(lr), .name = name});
        });
  m.def("momentum",
        [](py::object lr, py::object momentum, bool nesterov,
           std::string name) -> std::unique_ptr<train::Optimizer> {
          return std::make_unique<train::Momentum>(
              train::MomentumOptions{.learning_rate = NumberOrOutput(lr),
                                     .momentum = NumberOrOutput(momentum),
                                     .use_nesterov = nesterov,
                                     .name = name});
        });
  m.def(
      "adam",
      [](py::object lr, double beta1, double beta2, double epsilon,
         std::string name) -> std::unique_ptr<train::Optimizer> {
        return std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = NumberOrOutput(lr),
                                                                .beta1 = beta1,
                                                                .beta2 = beta2,
                                                                .epsilon = epsilon,
                                                                .name = name});
      });
  m.def("adagrad",
        [](py::object lr, double initial, std::string name) -> std::unique_ptr<train::Optimizer> {
          return std::make_unique<train::Adagrad>(
              train::AdagradOptions{.learning_rate = NumberOrOutput(lr),
                                    .initial_accumulator_value = initial,
                                    .name = name});
        });
  m.def("rmsprop",
        [](py::object lr, double decay, double momentum, double epsilon, bool centered,
           std::string name) -> std::unique_ptr<train::Optimizer> {
          return std::make_unique<train::RMSProp>(
              train::RMSPropOptions{.learning_rate = NumberOrOutput(lr),
                                    .decay = decay,
                                    .momentum = momentum,
                                    .epsilon = epsilon,
                                    .centered = centered,
                                    .name = name});
        });
  m.def("ftrl",
        [](py::object lr, double power, double initial, double l1, double l2,
           std::string name) -> std::unique_ptr<train::Optimizer> {
          return std::make_unique<train::Ftrl>(
              train::FtrlOptions{.learning_rate = NumberOrOutput(lr),
                                 .learning_rate_power = power,
                                 .initial_accumulator_value = initial,
                                 .l1_regularization_strength = l1,
                                 .l2_regularization_strength = l2,
                                 .name = name});
        });
}

void BindStepAndSchedules(py::module_& m) {
  // The graph's global step, made on first use: (value Output, initializer Node).
  m.def("get_or_create_global_step", [](Graph& g) {
    Variable v = train::GlobalStep(Scope(g));
    return py::make_tuple(static_cast<Output>(v),
                          py::cast(v.initializer.node, py::return_value_policy::reference));
  });
  m.def("get_global_step", [](const Graph& g) -> py::object {
    Variable v = train::GetGlobalStep(g);
    if (!v.valid()) return py::none();
    return py::cast(static_cast<Output>(v));
  });
  m.def("exponential_decay",
        [](Graph& g, const std::string& prefix, const std::string& name, py::object lr, Output step,
           int64_t decay_steps, double rate, bool staircase) {
          return train::ExponentialDecay(NamedScope(g, prefix, name), NumberOrOutput(lr), step,
                                         decay_steps, rate, staircase);
        });
  m.def("piecewise_constant",
        [](Graph& g, const std::string& prefix, const std::string& name, Output step,
           std::vector<int64_t> boundaries, std::vector<double> values) {
          return train::PiecewiseConstant(NamedScope(g, prefix, name), step, std::move(boundaries),
                                          std::move(values));
        });
  m.def("polynomial_decay",
        [](Graph& g, const std::string& prefix, const std::string& name, py::object lr, Output step,
           int64_t decay_steps, double end_lr, double power, bool cycle) {
          return train::PolynomialDecay(NamedScope(g, prefix, name), NumberOrOutput(lr), step,
                                        decay_steps, end_lr, power, cycle);
        });
  m.def("cosine_decay", [](Graph& g, const std::string& prefix, const std::string& name,
                           py::object lr, Output step, int64_t decay_steps, double alpha) {
    return train::CosineDecay(NamedScope(g, prefix, name), NumberOrOutput(lr), step, decay_steps,
                              alpha);
  });
}

void BindSaver(py::module_& m) {
  py::class_<train::Saver>(m, "Saver")
      .def(py::init([](const Graph& g, std::vector<std::string> var_list, int max_to_keep,
                       double every_n_hours) {
             return std::make_unique<train::Saver>(
                 g, train::SaverOptions{.var_list = std::move(var_list),
                                        .max_to_keep = max_to_keep,
                                        .keep_checkpoint_every_n_hours = every_n_hours});
           }),
           py::arg("graph"), py::arg("var_list"), py::arg("max_to_keep"),
           py::arg("keep_checkpoint_every_n_hours"), py::keep_alive<1, 2>())
      .def(
          "save",
          [](train::Saver& s, Session& session, const std::string& prefix,
             std::optional<int64_t> step) {
            py::gil_scoped_release nogil;
            return s.Save(session, prefix, step);
          },
          py::arg("session"), py::arg("prefix"), py::arg("global_step") = py::none())
      .def(
          "restore",
          [](train::Saver& s, Session& session, const std::string& path,
             std::map<std::string, std::string> name_map) {
            py::gil_scoped_release nogil;
            s.Restore(session, path, {.name_map = std::move(name_map)});
          },
          py::arg("session"), py::arg("path"),
          py::arg("name_map") = std::map<std::string, std::string>())
      .def("restore_latest",
           [](train::Saver& s, Session& session, const std::string& dir) {
             py::gil_scoped_release nogil;
             return s.RestoreLatest(session, dir);
           })
      .def_property_readonly("last_checkpoints", &train::Saver::last_checkpoints)
      .def("recover_last_checkpoints", &train::Saver::RecoverLastCheckpoints)
      .def_property_readonly("var_list", &train::Saver::var_list);
  m.def("latest_checkpoint",
        [](const std::string& dir) { return train::LatestCheckpoint(Env::Default(), dir); });
  // The graph's structure as a binary GraphDef file (large constants in a sidecar): what
  // Saver.save writes as "<checkpoint>.meta".
  m.def("export_graph",
        [](const Graph& g, const std::string& path) { ExportGraph(g, Env::Default(), path); });
  m.def("import_graph",
        [](Graph& g, const std::string& path) { ImportGraph(Env::Default(), path, AllOps(), g); });
  m.def("graph_to_text", [](const Graph& g) { return GraphToText(g); });
}

void BindSummaries(py::module_& m) {
  m.def("scalar_summary",
        [](Graph& g, const std::string& prefix, const std::string& name, const std::string& tag,
           Output value) { return train::ScalarSummary(NamedScope(g, prefix, name), tag, value); });
  m.def("histogram_summary", [](Graph& g, const std::string& prefix, const std::string& name,
                                const std::string& tag, Output values) {
    return train::HistogramSummary(NamedScope(g, prefix, name), tag, values);
  });
  m.def("image_summary", [](Graph& g, const std::string& prefix, const std::string& name,
                            const std::string& tag, Output images, int max_images) {
    return train::ImageSummary(NamedScope(g, prefix, name), tag, images, max_images);
  });
  m.def("text_summary",
        [](Graph& g, const std::string& prefix, const std::string& name, const std::string& tag,
           Output text) { return train::TextSummary(NamedScope(g, prefix, name), tag, text); });
  m.def("merge_summary", [](Graph& g, const std::string& prefix, const std::string& name,
                            const std::vector<Output>& inputs) {
    return train::MergeSummary(NamedScope(g, prefix, name), inputs);
  });

  py::class_<train::FileWriter>(m, "FileWriter")
      .def(py::init([](const std::string& logdir, int max_queue, double flush_secs,
                       const std::string& suffix) {
             return std::make_unique<train::FileWriter>(
                 logdir,
                 train::FileWriterOptions{
                     .max_queue = max_queue, .flush_secs = flush_secs, .filename_suffix = suffix});
           }),
           py::arg("logdir"), py::arg("max_queue") = 10, py::arg("flush_secs") = 120.0,
           py::arg("filename_suffix") = "")
      .def("add_summary", [](train::FileWriter& w, const py::bytes& serialized,
                             int64_t step) { w.AddSummary(std::string(serialized), step); })
      .def("add_graph", &train::FileWriter::AddGraph, py::arg("graph"), py::arg("step") = 0)
      .def("flush", &train::FileWriter::Flush)
      .def("close", &train::FileWriter::Close)
      .def_property_readonly("closed", &train::FileWriter::closed)
      .def_property_readonly("path", &train::FileWriter::path)
      .def_property_readonly("logdir", &train::FileWriter::logdir);
}

}  // namespace

void BindTrainCore(py::module_& m) {
  BindOptimizers(m);
  BindStepAndSchedules(m);
  BindSaver(m);
  BindSummaries(m);
}

}  // namespace loom::python
