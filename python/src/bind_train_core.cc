// Training basics: optimizers, the global step, learning-rate schedules, Saver, summaries
// and FileWriter. Each builder takes the graph and the package's current name scope.
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>

#include "loom/base/env.h"
#include "loom/estimator/all_ops.h"
#include "loom/estimator/tf_checkpoints.h"
#include "loom/graph/graph_def.h"
#include "loom/io/safetensors.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/ops/random.h"
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
  m.def("inverse_time_decay",
        [](Graph& g, const std::string& prefix, const std::string& name, py::object lr, Output step,
           int64_t decay_steps, double rate, bool staircase) {
          return train::InverseTimeDecay(NamedScope(g, prefix, name), NumberOrOutput(lr), step,
                                         decay_steps, rate, staircase);
        });
  m.def("natural_exp_decay",
        [](Graph& g, const std::string& prefix, const std::string& name, py::object lr, Output step,
           int64_t decay_steps, double rate, bool staircase) {
          return train::NaturalExpDecay(NamedScope(g, prefix, name), NumberOrOutput(lr), step,
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

// tf.train.load_checkpoint / NewCheckpointReader over a Loom checkpoint (safetensors) or a
// TF one (a V2 tensor bundle): `path` is a checkpoint prefix, one of its files, or a
// directory (its newest checkpoint, Loom's first). Entries are full tensors by name; a
// Loom checkpoint's iterator states and random streams are not variables and are left out.
class PyCheckpointReader {
 public:
  explicit PyCheckpointReader(const std::string& path) {
    Env* env = Env::Default();
    std::string prefix = path;
    if (env->IsDirectory(path)) {
      std::optional<std::string> latest = train::LatestCheckpoint(env, path);
      if (!latest) latest = LatestTfCheckpoint(env, path);
      if (!latest) {
        throw NotFound("no checkpoint in directory '", path,
                       "' (no 'checkpoint' state file, no TF checkpoint); pass a checkpoint "
                       "prefix such as '",
                       path, "/model.ckpt-100'");
      }
      prefix = *latest;
    }
    path_ = prefix;
    const bool is_tf = env->FileExists(prefix + ".index") || prefix.ends_with(".index") ||
                       prefix.find(".data-") != std::string::npos;
    if (is_tf) {
      tf_ = TfCheckpointReader::Open(env, prefix);
      for (const TfCheckpointEntry& e : tf_->entries()) {
        entries_[e.name] = {e.dtype, e.shape};
      }
      return;
    }
    const std::string file = env->FileExists(prefix) ? prefix : train::CheckpointFilePath(prefix);
    if (!env->FileExists(file)) {
      throw NotFound("no checkpoint at '", path, "': neither '", file, "' (Loom) nor '", prefix,
                     ".index' (TF) exists");
    }
    loom_ = SafetensorsReader::Open(env, file);
    for (const train::CheckpointEntry& e : train::ListVariables(env, file)) {
      if (e.is_iterator_state || e.is_random_stream) continue;
      entries_[e.name] = {e.dtype, e.shape};
    }
  }

  const std::string& path() const { return path_; }
  bool Has(const std::string& name) const { return entries_.count(name) > 0; }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, e] : entries_) names.push_back(name);
    return names;
  }
  const std::pair<DType, Shape>& Entry(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::vector<std::string> similar;
      for (const auto& [n, e] : entries_) {
        if (similar.size() < 5 &&
            (n.find(name) != std::string::npos || name.find(n) != std::string::npos)) {
          similar.push_back(n);
        }
      }
      throw NotFound("Key ", name, " not found in checkpoint '", path_, "'",
                     similar.empty() ? "" : "; similar names: ", StrJoin(similar, ", "));
    }
    return it->second;
  }
  Tensor Get(const std::string& name) const {
    Entry(name);
    return tf_ ? tf_->Get(name) : loom_->Get(name).Clone();
  }

 private:
  std::string path_;
  std::unique_ptr<TfCheckpointReader> tf_;
  std::unique_ptr<SafetensorsReader> loom_;
  std::map<std::string, std::pair<DType, Shape>> entries_;  // by name: TF's sorted order
};

void BindSaver(py::module_& m) {
  py::class_<PyCheckpointReader>(m, "CheckpointReader")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def_property_readonly("path", &PyCheckpointReader::path)
      .def("names", &PyCheckpointReader::Names)
      .def("has_tensor", &PyCheckpointReader::Has)
      .def("dtype",
           [](const PyCheckpointReader& r, const std::string& name) { return r.Entry(name).first; })
      .def("shape", [](const PyCheckpointReader& r,
                       const std::string& name) { return FromShape(r.Entry(name).second); })
      .def("get_tensor", [](const PyCheckpointReader& r, const std::string& name) {
        return ToNumpy(r.Get(name));
      });
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
            // A checkpoint TensorFlow wrote (model.ckpt-999.index + .data-*), as a TF1
            // program restores pretrained weights: its Saver's variables from their
            // names there (or name_map's). It was NotFound for the .safetensors file.
            Env* env = Env::Default();
            if (!env->FileExists(path + ".safetensors") && env->FileExists(path + ".index")) {
              RestoreFromTfCheckpoint(session, path, s.var_list(), name_map, env);
              return;
            }
            s.Restore(session, path, {.name_map = std::move(name_map)});
          },
          py::arg("session"), py::arg("path"),
          py::arg("name_map") = std::map<std::string, std::string>{})
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
  // tf.train.get_checkpoint_state: the `checkpoint` file of `dir` (paths joined to dir), or
  // None when there is none.
  m.def("read_checkpoint_state", [](const std::string& dir) -> py::object {
    std::optional<train::CheckpointState> state = train::ReadCheckpointState(Env::Default(), dir);
    if (!state) return py::none();
    py::dict out;
    out["model_checkpoint_path"] = state->model_checkpoint_path;
    out["all_model_checkpoint_paths"] = state->all_model_checkpoint_paths;
    out["all_model_checkpoint_timestamps"] = state->all_model_checkpoint_timestamps;
    out["last_preserved_timestamp"] = state->last_preserved_timestamp;
    return out;
  });
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
