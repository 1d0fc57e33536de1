// tf.estimator for Python: the C++ Estimator driven by a Python model_fn and input_fn.
// loom/compat/v1/estimator.py gives TF's names and signatures; this file is the seam:
//   - Estimator(model_fn, config): model_fn is a Python callable (graph_scope, features,
//     labels, mode) -> EstimatorSpec (the C++ struct, built by make_estimator_spec), called
//     with the GIL held while the C++ Estimator builds a graph. TF's argument matching
//     (features, labels, mode, params, config) happens in estimator.py.
//   - input functions: a Python callable (graph_scope) -> InputFnResult, or an InputFn
//     made in C++ (numpy_input_fn: the arrays are viewed, never copied).
//   - train / evaluate / export_saved_model / train_and_evaluate run with the GIL
//     released; predict returns an iterator whose every next() releases it.
//   - exporters: the C++ LatestExporter / BestExporter / FinalExporter over a Python
//     serving function (BestExporter's compare_fn may be Python), and PyExporter, a
//     trampoline to a Python tf.estimator.Exporter subclass's export(); train takes
//     saving listeners (bind_train.cc's PyListener).
//   - SavedModelPredictor (tf.contrib.predictor.from_saved_model): loads an export and
//     runs a signature with the GIL released.
// An exception raised in Python code the loop calls back (model_fn, input_fn, a hook)
// leaves the loop as pybind11::error_already_set and arrives in the caller as itself.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/estimator/canned.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/input_fn.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/saved_model.h"
#include "loom/estimator/train_and_evaluate.h"
#include "loom/ops/nn.h"
#include "python/src/bind_util.h"
#include "python/src/bindings.h"
#include "python/src/core.h"

namespace py = pybind11;

namespace loom::python {
namespace {

// An input function made in C++ (numpy_input_fn), passed back to train/evaluate/predict.
struct InputFnHandle {
  InputFn fn;
};

Mode ParseMode(const std::string& mode) {
  if (mode == "train") return Mode::kTrain;
  if (mode == "eval") return Mode::kEval;
  if (mode == "infer") return Mode::kPredict;
  throw InvalidArgument("mode '", mode, "' is not one of ModeKeys.TRAIN ('train'), ",
                        "ModeKeys.EVAL ('eval'), ModeKeys.PREDICT ('infer')");
}

// The graph a C++ builder is filling, as Python sees it: borrowed (the Estimator owns it
// for the length of the call; the package's Graph wrapper marks it so).
py::object GraphOf(const Scope& scope) {
  return py::cast(&scope.graph(), py::return_value_policy::reference);
}

// A Python input_fn (or an InputFnHandle) as a C++ InputFn. The Python function gets the
// graph and the name scope's prefix.
InputFn ToInputFn(const py::object& input_fn) {
  if (py::isinstance<InputFnHandle>(input_fn)) return input_fn.cast<const InputFnHandle&>().fn;
  return [fn = PyRef(input_fn)](Scope& scope) -> InputFnResult {
    py::gil_scoped_acquire gil;
    return fn.get()(GraphOf(scope), scope.prefix()).cast<InputFnResult>();
  };
}

ServingInputReceiverFn ToServingFn(const py::object& serving_fn) {
  return [fn = PyRef(serving_fn)](Scope& scope) -> ServingInputReceiver {
    py::gil_scoped_acquire gil;
    auto [features, receivers] =
        fn.get()(GraphOf(scope), scope.prefix())
            .cast<std::pair<std::map<std::string, Output>, std::map<std::string, Output>>>();
    return {Features(std::move(features)), std::move(receivers)};
  };
}

RunConfig MakeRunConfig(std::string model_dir, const py::object& tf_random_seed,
                        int64_t save_summary_steps, const py::object& save_checkpoints_steps,
                        const py::object& save_checkpoints_secs, int keep_checkpoint_max,
                        double keep_checkpoint_every_n_hours, int64_t log_step_count_steps,
                        bool start_over_if_checkpoints_corrupt, int intra_op_threads) {
  RunConfig config;
  config.model_dir = std::move(model_dir);
  config.tf_random_seed = OptionalInt(tf_random_seed);
  config.save_summary_steps = save_summary_steps;
  config.save_checkpoints_steps = OptionalInt(save_checkpoints_steps);
  config.save_checkpoints_secs = OptionalDouble(save_checkpoints_secs);
  config.keep_checkpoint_max = keep_checkpoint_max;
  config.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours;
  config.log_step_count_steps = log_step_count_steps;
  config.start_over_if_checkpoints_corrupt = start_over_if_checkpoints_corrupt;
  config.session_config.intra_op_threads = intra_op_threads;
  ValidateRunConfig(config);
  return config;
}

EstimatorSpec MakeEstimatorSpec(
    const std::string& mode, std::map<std::string, Output> predictions, std::optional<Output> loss,
    Node* train_op, const std::map<std::string, std::pair<Output, Node*>>& eval_metric_ops,
    const std::map<std::string, std::map<std::string, Output>>& export_outputs,
    const py::object& training_hooks, const py::object& training_chief_hooks,
    const py::object& evaluation_hooks, const py::object& prediction_hooks, Node* init_op,
    std::optional<Output> summary_op) {
  EstimatorSpec spec;
  spec.mode = ParseMode(mode);
  spec.predictions = std::move(predictions);
  if (loss) spec.loss = *loss;
  if (train_op != nullptr) spec.train_op = Operation(train_op);
  for (const auto& [name, ops] : eval_metric_ops) {
    spec.eval_metric_ops[name] = MetricOps(ops.first, Operation(ops.second));
  }
  for (const auto& [name, outputs] : export_outputs) {
    spec.export_outputs[name] = PredictOutput(outputs);
  }
  spec.training_hooks = ToHookList(training_hooks);
  spec.training_chief_hooks = ToHookList(training_chief_hooks);
  spec.evaluation_hooks = ToHookList(evaluation_hooks);
  spec.prediction_hooks = ToHookList(prediction_hooks);
  if (init_op != nullptr || summary_op) {
    spec.scaffold = std::make_shared<train::Scaffold>();
    if (init_op != nullptr) spec.scaffold->init_op = Operation(init_op);
    if (summary_op) spec.scaffold->summary_op = *summary_op;
  }
  return spec;
}

// A Python tf.estimator.Exporter subclass as a C++ Exporter: export() calls the adapter
// (estimator._ExporterAdapter) with the GIL held; it returns the directory written or None.
class PyExporter : public Exporter {
 public:
  PyExporter(std::string name, py::object adapter)
      : name_(std::move(name)), adapter_(std::move(adapter)) {}
  const std::string& name() const override { return name_; }
  std::optional<std::string> Export(Estimator& estimator, const std::string& export_path,
                                    const std::string& checkpoint_path,
                                    const EvalResult& eval_result,
                                    bool is_the_final_export) override {
    py::gil_scoped_acquire gil;
    py::object written =
        adapter_.get()(export_path, checkpoint_path, eval_result, is_the_final_export);
    if (written.is_none()) return std::nullopt;
    return written.cast<std::string>();
  }

 private:
  std::string name_;
  PyRef adapter_;
};

// BestExporter's compare_fn: None is TF's _loss_smaller, else a Python callable
// (best_eval_result, current_eval_result) -> bool called with the GIL held.
CompareFn ToCompareFn(const py::object& compare_fn) {
  if (compare_fn.is_none()) return LossSmaller;
  return [fn = PyRef(compare_fn)](const EvalResult& best, const EvalResult& current) {
    py::gil_scoped_acquire gil;
    return py::bool_(fn.get()(best, current)).cast<bool>();
  };
}

// Predict's generator: each next() runs (at most) one batch with the GIL released.
class PredictionIterator {
 public:
  explicit PredictionIterator(PredictionRange range) : range_(std::move(range)) {}
  py::dict Next() {
    std::optional<Prediction> next = WithoutGil([&] { return range_.Next(); });
    if (!next) throw py::stop_iteration();
    py::dict result;
    for (const auto& [key, value] : *next) result[py::str(key)] = ToNumpy(value);
    return result;
  }

 private:
  PredictionRange range_;
};

// None, or (ckpt_to_initialize_from, vars_to_warm_start, {new name: name in checkpoint}).
std::optional<WarmStartSettings> ToWarmStart(const py::object& warm_start) {
  if (warm_start.is_none()) return std::nullopt;
  auto t = warm_start.cast<py::tuple>();
  WarmStartSettings settings;
  settings.ckpt_to_initialize_from = t[0].cast<std::string>();
  settings.vars_to_warm_start = t[1].cast<std::string>();
  settings.var_name_to_prev_var_name = t[2].cast<std::map<std::string, std::string>>();
  return settings;
}

OptimizerSpec ToOptimizerSpec(const py::object& optimizer) {
  if (optimizer.is_none()) return {};
  if (py::isinstance<py::str>(optimizer)) return OptimizerSpec(optimizer.cast<std::string>());
  auto [name, learning_rate] = optimizer.cast<std::pair<std::string, double>>();
  return OptimizerSpec(name, learning_rate);
}

// A canned DNN's activation_fn by the name estimator.py gives TF's tf.nn function.
layers::Activation ToActivation(const std::string& name) {
  if (name == "relu") return Relu;
  if (name == "tanh") return Tanh;
  if (name == "sigmoid") return Sigmoid;
  if (name == "elu") return Elu;
  if (name == "relu6") return Relu6;
  if (name == "softplus") return Softplus;
  if (name == "leaky_relu") return layers::LeakyReluActivation();
  throw InvalidArgument("activation_fn '", name,
                        "' is not one of relu, tanh, sigmoid, elu, relu6, softplus, leaky_relu");
}

// A canned estimator's loss_reduction (a tf.losses.Reduction value): any but NONE, as
// TF's heads check.
losses::Reduction ToCannedReduction(const std::string& reduction) {
  losses::Reduction r = ToReduction(reduction);
  if (r == losses::Reduction::kNone) {
    throw InvalidArgument("Invalid loss_reduction: ", reduction,
                          "; a canned estimator's training loss must be a scalar (use SUM or "
                          "SUM_OVER_BATCH_SIZE)");
  }
  return r;
}

// A linear model's sparse_combiner by TF's name.
feature_column::Combiner ToSparseCombiner(const std::string& combiner) {
  if (combiner == "sum") return feature_column::Combiner::kSum;
  if (combiner == "mean") return feature_column::Combiner::kMean;
  if (combiner == "sqrtn") return feature_column::Combiner::kSqrtN;
  throw InvalidArgument("linear_sparse_combiner '", combiner, "' must be 'sum', 'mean' or 'sqrtn'");
}

// The Estimator methods, shared by the canned estimators through inheritance.
void BindEstimatorMethods(py::class_<Estimator>& cls) {
  cls.def(
         "train",
         [](Estimator& e, const py::object& input_fn, const py::object& steps,
            const py::object& max_steps, const py::object& hooks, bool restart_input,
            std::vector<std::shared_ptr<CheckpointSaverListener>> saving_listeners) {
           TrainOptions options;
           options.hooks = ToHookList(hooks);
           options.saving_listeners = std::move(saving_listeners);
           options.steps = OptionalInt(steps);
           options.max_steps = OptionalInt(max_steps);
           options.restart_input = restart_input;
           InputFn fn = ToInputFn(input_fn);
           return WithoutGil([&] {
             TrainResult result = e.Train(fn, std::move(options));
             return std::make_tuple(result.final_loss, result.global_step, result.steps_run,
                                    result.stop_signal);
           });
         },
         py::arg("input_fn"), py::arg("steps") = py::none(), py::arg("max_steps") = py::none(),
         py::arg("hooks") = py::none(), py::arg("restart_input") = false,
         py::arg("saving_listeners") = std::vector<std::shared_ptr<CheckpointSaverListener>>{})
      .def(
          "evaluate",
          [](Estimator& e, const py::object& input_fn, const py::object& steps,
             const py::object& hooks, std::string checkpoint_path, std::string name) {
            EvaluateOptions options;
            options.steps = OptionalInt(steps);
            options.hooks = ToHookList(hooks);
            options.checkpoint_path = std::move(checkpoint_path);
            options.name = std::move(name);
            InputFn fn = ToInputFn(input_fn);
            return WithoutGil([&] { return e.Evaluate(fn, std::move(options)); });
          },
          py::arg("input_fn"), py::arg("steps") = py::none(), py::arg("hooks") = py::none(),
          py::arg("checkpoint_path") = "", py::arg("name") = "")
      .def(
          "predict",
          [](Estimator& e, const py::object& input_fn, std::vector<std::string> predict_keys,
             const py::object& hooks, std::string checkpoint_path, bool yield_single_examples) {
            PredictOptions options;
            options.predict_keys = std::move(predict_keys);
            options.hooks = ToHookList(hooks);
            options.checkpoint_path = std::move(checkpoint_path);
            options.yield_single_examples = yield_single_examples;
            return PredictionIterator(e.Predict(ToInputFn(input_fn), std::move(options)));
          },
          py::arg("input_fn"), py::arg("predict_keys") = std::vector<std::string>{},
          py::arg("hooks") = py::none(), py::arg("checkpoint_path") = "",
          py::arg("yield_single_examples") = true)
      .def(
          "export_saved_model",
          [](Estimator& e, const std::string& export_dir_base, const py::object& serving_fn,
             std::string checkpoint_path) {
            ServingInputReceiverFn fn = ToServingFn(serving_fn);
            return WithoutGil([&] {
              return e.ExportSavedModel(export_dir_base, fn,
                                        {.checkpoint_path = std::move(checkpoint_path)});
            });
          },
          py::arg("export_dir_base"), py::arg("serving_input_receiver_fn"),
          py::arg("checkpoint_path") = "")
      .def_property_readonly("model_dir", &Estimator::model_dir)
      .def("latest_checkpoint", &Estimator::LatestCheckpoint)
      .def("get_variable_names", &Estimator::GetVariableNames)
      .def(
          "get_variable_value",
          [](const Estimator& e, const std::string& name) {
            return ToNumpy(e.GetVariableValue(name));
          },
          py::arg("name"))
      .def_property_readonly("model_fn_calls", &Estimator::model_fn_calls);
}

void BindCanned(py::module_& m) {
  py::class_<DNNClassifier, Estimator>(m, "DNNClassifier")
      .def(py::init([](std::vector<int64_t> hidden_units,
                       const std::vector<ColumnHandle>& feature_columns, int64_t n_classes,
                       std::string weight_column, std::vector<std::string> label_vocabulary,
                       const py::object& optimizer, std::optional<double> dropout, bool batch_norm,
                       RunConfig config, const py::object& warm_start,
                       const std::string& activation_fn, const std::string& loss_reduction) {
             DNNClassifierOptions options;
             options.loss_reduction = ToCannedReduction(loss_reduction);
             options.activation_fn = ToActivation(activation_fn);
             options.hidden_units = std::move(hidden_units);
             options.feature_columns = DenseColumns(feature_columns, "DNNClassifier");
             options.n_classes = n_classes;
             options.weight_column = std::move(weight_column);
             options.label_vocabulary = std::move(label_vocabulary);
             options.optimizer = ToOptimizerSpec(optimizer);
             options.dropout = dropout;
             options.batch_norm = batch_norm;
             return std::make_unique<DNNClassifier>(std::move(options), std::move(config),
                                                    ToWarmStart(warm_start));
           }),
           py::arg("hidden_units"), py::arg("feature_columns"), py::arg("n_classes"),
           py::arg("weight_column"), py::arg("label_vocabulary"), py::arg("optimizer"),
           py::arg("dropout"), py::arg("batch_norm"), py::arg("config"),
           py::arg("warm_start_from") = py::none(), py::arg("activation_fn") = "relu",
           py::arg("loss_reduction") = "weighted_sum_over_batch_size");
  py::class_<DNNRegressor, Estimator>(m, "DNNRegressor")
      .def(py::init([](std::vector<int64_t> hidden_units,
                       const std::vector<ColumnHandle>& feature_columns, int64_t label_dimension,
                       std::string weight_column, const py::object& optimizer,
                       std::optional<double> dropout, bool batch_norm, RunConfig config,
                       const py::object& warm_start, const std::string& activation_fn,
                       const std::string& loss_reduction) {
             DNNRegressorOptions options;
             options.loss_reduction = ToCannedReduction(loss_reduction);
             options.activation_fn = ToActivation(activation_fn);
             options.hidden_units = std::move(hidden_units);
             options.feature_columns = DenseColumns(feature_columns, "DNNRegressor");
             options.label_dimension = label_dimension;
             options.weight_column = std::move(weight_column);
             options.optimizer = ToOptimizerSpec(optimizer);
             options.dropout = dropout;
             options.batch_norm = batch_norm;
             return std::make_unique<DNNRegressor>(std::move(options), std::move(config),
                                                   ToWarmStart(warm_start));
           }),
           py::arg("hidden_units"), py::arg("feature_columns"), py::arg("label_dimension"),
           py::arg("weight_column"), py::arg("optimizer"), py::arg("dropout"),
           py::arg("batch_norm"), py::arg("config"), py::arg("warm_start_from") = py::none(),
           py::arg("activation_fn") = "relu",
           py::arg("loss_reduction") = "weighted_sum_over_batch_size");
  py::class_<LinearClassifier, Estimator>(m, "LinearClassifier")
      .def(py::init([](const std::vector<ColumnHandle>& feature_columns, int64_t n_classes,
                       std::string weight_column, std::vector<std::string> label_vocabulary,
                       const py::object& optimizer, RunConfig config, const py::object& warm_start,
                       const std::string& loss_reduction) {
             LinearClassifierOptions options;
             options.loss_reduction = ToCannedReduction(loss_reduction);
             options.feature_columns = AnyColumns(feature_columns);
             options.n_classes = n_classes;
             options.weight_column = std::move(weight_column);
             options.label_vocabulary = std::move(label_vocabulary);
             options.optimizer = ToOptimizerSpec(optimizer);
             return std::make_unique<LinearClassifier>(std::move(options), std::move(config),
                                                       ToWarmStart(warm_start));
           }),
           py::arg("feature_columns"), py::arg("n_classes"), py::arg("weight_column"),
           py::arg("label_vocabulary"), py::arg("optimizer"), py::arg("config"),
           py::arg("warm_start_from") = py::none(),
           py::arg("loss_reduction") = "weighted_sum_over_batch_size");
  py::class_<LinearRegressor, Estimator>(m, "LinearRegressor")
      .def(py::init([](const std::vector<ColumnHandle>& feature_columns, int64_t label_dimension,
                       std::string weight_column, const py::object& optimizer, RunConfig config,
                       const py::object& warm_start, const std::string& loss_reduction) {
             LinearRegressorOptions options;
             options.loss_reduction = ToCannedReduction(loss_reduction);
             options.feature_columns = AnyColumns(feature_columns);
             options.label_dimension = label_dimension;
             options.weight_column = std::move(weight_column);
             options.optimizer = ToOptimizerSpec(optimizer);
             return std::make_unique<LinearRegressor>(std::move(options), std::move(config),
                                                      ToWarmStart(warm_start));
           }),
           py::arg("feature_columns"), py::arg("label_dimension"), py::arg("weight_column"),
           py::arg("optimizer"), py::arg("config"), py::arg("warm_start_from") = py::none(),
           py::arg("loss_reduction") = "weighted_sum_over_batch_size");
  py::class_<DNNLinearCombinedClassifier, Estimator>(m, "DNNLinearCombinedClassifier")
      .def(py::init([](const std::vector<ColumnHandle>& linear_feature_columns,
                       const py::object& linear_optimizer,
                       const std::vector<ColumnHandle>& dnn_feature_columns,
                       const py::object& dnn_optimizer, std::vector<int64_t> dnn_hidden_units,
                       std::optional<double> dnn_dropout, int64_t n_classes,
                       std::string weight_column, std::vector<std::string> label_vocabulary,
                       bool batch_norm, const std::string& linear_sparse_combiner, RunConfig config,
                       const py::object& warm_start, const std::string& dnn_activation_fn,
                       const std::string& loss_reduction) {
             DNNLinearCombinedClassifierOptions options;
             options.loss_reduction = ToCannedReduction(loss_reduction);
             options.dnn_activation_fn = ToActivation(dnn_activation_fn);
             options.linear_feature_columns = AnyColumns(linear_feature_columns);
             options.linear_optimizer = ToOptimizerSpec(linear_optimizer);
             options.dnn_feature_columns =
                 DenseColumns(dnn_feature_columns, "DNNLinearCombinedClassifier");
             options.dnn_optimizer = ToOptimizerSpec(dnn_optimizer);
             options.dnn_hidden_units = std::move(dnn_hidden_units);
             options.dnn_dropout = dnn_dropout;
             options.n_classes = n_classes;
             options.weight_column = std::move(weight_column);
             options.label_vocabulary = std::move(label_vocabulary);
             options.batch_norm = batch_norm;
             options.linear_sparse_combiner = ToSparseCombiner(linear_sparse_combiner);
             return std::make_unique<DNNLinearCombinedClassifier>(
                 std::move(options), std::move(config), ToWarmStart(warm_start));
           }),
           py::arg("linear_feature_columns"), py::arg("linear_optimizer"),
           py::arg("dnn_feature_columns"), py::arg("dnn_optimizer"), py::arg("dnn_hidden_units"),
           py::arg("dnn_dropout"), py::arg("n_classes"), py::arg("weight_column"),
           py::arg("label_vocabulary"), py::arg("batch_norm"), py::arg("linear_sparse_combiner"),
           py::arg("config"), py::arg("warm_start_from") = py::none(),
           py::arg("dnn_activation_fn") = "relu",
           py::arg("loss_reduction") = "weighted_sum_over_batch_size");
  py::class_<DNNLinearCombinedRegressor, Estimator>(m, "DNNLinearCombinedRegressor")
      .def(py::init([](const std::vector<ColumnHandle>& linear_feature_columns,
                       const py::object& linear_optimizer,
                       const std::vector<ColumnHandle>& dnn_feature_columns,
                       const py::object& dnn_optimizer, std::vector<int64_t> dnn_hidden_units,
                       std::optional<double> dnn_dropout, int64_t label_dimension,
                       std::string weight_column, bool batch_norm,
                       const std::string& linear_sparse_combiner, RunConfig config,
                       const py::object& warm_start, const std::string& dnn_activation_fn,
                       const std::string& loss_reduction) {
             DNNLinearCombinedRegressorOptions options;
             options.loss_reduction = ToCannedReduction(loss_reduction);
             options.dnn_activation_fn = ToActivation(dnn_activation_fn);
             options.linear_feature_columns = AnyColumns(linear_feature_columns);
             options.linear_optimizer = ToOptimizerSpec(linear_optimizer);
             options.dnn_feature_columns =
                 DenseColumns(dnn_feature_columns, "DNNLinearCombinedRegressor");
             options.dnn_optimizer = ToOptimizerSpec(dnn_optimizer);
             options.dnn_hidden_units = std::move(dnn_hidden_units);
             options.dnn_dropout = dnn_dropout;
             options.label_dimension = label_dimension;
             options.weight_column = std::move(weight_column);
             options.batch_norm = batch_norm;
             options.linear_sparse_combiner = ToSparseCombiner(linear_sparse_combiner);
             return std::make_unique<DNNLinearCombinedRegressor>(
                 std::move(options), std::move(config), ToWarmStart(warm_start));
           }),
           py::arg("linear_feature_columns"), py::arg("linear_optimizer"),
           py::arg("dnn_feature_columns"), py::arg("dnn_optimizer"), py::arg("dnn_hidden_units"),
           py::arg("dnn_dropout"), py::arg("label_dimension"), py::arg("weight_column"),
           py::arg("batch_norm"), py::arg("linear_sparse_combiner"), py::arg("config"),
           py::arg("warm_start_from") = py::none(), py::arg("dnn_activation_fn") = "relu",
           py::arg("loss_reduction") = "weighted_sum_over_batch_size");
}

}  // namespace

void BindEstimator(py::module_& m) {
  py::class_<RunConfig>(m, "RunConfig")
      .def(py::init(&MakeRunConfig), py::arg("model_dir") = "",
           py::arg("tf_random_seed") = py::none(), py::arg("save_summary_steps") = 100,
           py::arg("save_checkpoints_steps") = py::none(),
           py::arg("save_checkpoints_secs") = py::none(), py::arg("keep_checkpoint_max") = 5,
           py::arg("keep_checkpoint_every_n_hours") = 10000.0,
           py::arg("log_step_count_steps") = 100,
           py::arg("start_over_if_checkpoints_corrupt") = false, py::arg("intra_op_threads") = 0)
      .def_readonly("model_dir", &RunConfig::model_dir)
      .def_readonly("tf_random_seed", &RunConfig::tf_random_seed)
      .def_readonly("save_summary_steps", &RunConfig::save_summary_steps)
      .def_readonly("save_checkpoints_steps", &RunConfig::save_checkpoints_steps)
      .def_readonly("save_checkpoints_secs", &RunConfig::save_checkpoints_secs)
      .def_readonly("keep_checkpoint_max", &RunConfig::keep_checkpoint_max)
      .def_readonly("keep_checkpoint_every_n_hours", &RunConfig::keep_checkpoint_every_n_hours)
      .def_readonly("log_step_count_steps", &RunConfig::log_step_count_steps)
      .def_property_readonly("intra_op_threads",
                             [](const RunConfig& c) { return c.session_config.intra_op_threads; })
      .def_property_readonly("is_chief", &RunConfig::is_chief)
      .def_property_readonly("num_worker_replicas", &RunConfig::num_worker_replicas)
      .def_property_readonly("task_id", &RunConfig::task_id);

  // Named (bugprone-unused-raii), though only registering the type matters: Python holds
  // an EstimatorSpec or InputFn opaquely.
  py::class_<EstimatorSpec> estimator_spec_class(m, "EstimatorSpec");
  m.def("make_estimator_spec", &MakeEstimatorSpec, py::arg("mode"),
        py::arg("predictions") = std::map<std::string, Output>{}, py::arg("loss") = py::none(),
        py::arg("train_op") = static_cast<Node*>(nullptr),
        py::arg("eval_metric_ops") = std::map<std::string, std::pair<Output, Node*>>{},
        py::arg("export_outputs") = std::map<std::string, std::map<std::string, Output>>{},
        py::arg("training_hooks") = py::none(), py::arg("training_chief_hooks") = py::none(),
        py::arg("evaluation_hooks") = py::none(), py::arg("prediction_hooks") = py::none(),
        py::arg("init_op") = static_cast<Node*>(nullptr), py::arg("summary_op") = py::none());

  py::class_<InputFnResult>(m, "InputFnResult")
      .def(py::init([](data::Dataset dataset, const py::object& label_key) {
             std::optional<std::string> key;
             if (!label_key.is_none()) key = label_key.cast<std::string>();
             return InputFnResult(std::move(dataset), std::move(key));
           }),
           py::arg("dataset"), py::arg("label_key") = py::none())
      .def(py::init([](std::map<std::string, Output> features, std::optional<Output> labels) {
             return InputFnResult(Features(std::move(features)), labels.value_or(Output()));
           }),
           py::arg("features"), py::arg("labels") = py::none());

  py::class_<InputFnHandle> input_fn_class(m, "InputFn");
  // Runs a C++ input function in the graph Python is building (a numpy_input_fn called
  // from the user's own input_fn, e.g. a lambda).
  m.def(
      "call_input_fn",
      [](const InputFnHandle& input_fn, Graph& graph, const std::string& prefix) {
        Scope scope = MakeScope(graph, prefix);
        return input_fn.fn(scope);
      },
      py::arg("input_fn"), py::arg("graph"), py::arg("prefix"));
  // TF's numpy_input_fn over tensors that view the caller's arrays.
  m.def(
      "array_input_fn",
      [](const py::dict& x, const py::object& y, int64_t batch_size, const py::object& num_epochs,
         bool shuffle, const py::object& seed, int64_t queue_capacity) {
        ArrayInputOptions options;
        for (auto [key, value] : x) {
          std::string name = key.cast<std::string>();
          options.x[name] = ToTensor(value, DType::kInvalid, "numpy_input_fn x['" + name + "']");
        }
        if (!y.is_none()) options.y = ToTensor(y, DType::kInvalid, "numpy_input_fn y");
        options.batch_size = batch_size;
        options.num_epochs = OptionalInt(num_epochs);
        options.shuffle = shuffle;
        if (!seed.is_none()) options.seed = seed.cast<uint64_t>();
        options.shuffle_buffer_size = queue_capacity;
        return InputFnHandle{ArrayInputFn(std::move(options))};
      },
      py::arg("x"), py::arg("y") = py::none(), py::arg("batch_size") = 128,
      py::arg("num_epochs") = 1, py::arg("shuffle") = py::none(), py::arg("seed") = py::none(),
      py::arg("queue_capacity") = 0);

  py::class_<PredictionIterator>(m, "PredictionIterator")
      .def("__iter__", [](PredictionIterator& it) -> PredictionIterator& { return it; })
      .def("__next__", &PredictionIterator::Next);

  py::class_<Estimator> estimator(m, "Estimator");
  estimator.def(
      py::init([](const py::object& model_fn, RunConfig config, const py::object& warm_start) {
        SimpleModelFn fn = [fn = PyRef(model_fn)](Scope& scope, const Features& features,
                                                  Output labels, Mode mode) {
          py::gil_scoped_acquire gil;
          py::object py_labels = labels.valid() ? py::cast(labels) : py::object(py::none());
          return fn
              .get()(GraphOf(scope), scope.prefix(),
                     py::cast(std::map<std::string, Output>(features.begin(), features.end())),
                     py_labels, std::string(ModeName(mode)))
              .cast<EstimatorSpec>();
        };
        return std::make_unique<Estimator>(std::move(fn), std::move(config), Params{},
                                           ToWarmStart(warm_start));
      }),
      py::arg("model_fn"), py::arg("config"), py::arg("warm_start_from") = py::none());
  BindEstimatorMethods(estimator);
  BindCanned(m);

  py::class_<TrainSpec>(m, "TrainSpec")
      .def(py::init([](const py::object& input_fn, const py::object& max_steps,
                       const py::object& hooks) {
             return TrainSpec{.input_fn = ToInputFn(input_fn),
                              .max_steps = OptionalInt(max_steps),
                              .hooks = ToHookList(hooks)};
           }),
           py::arg("input_fn"), py::arg("max_steps") = py::none(), py::arg("hooks") = py::none());
  py::class_<Exporter, std::shared_ptr<Exporter>>(m, "Exporter")
      .def_property_readonly("name", &Exporter::name);
  py::class_<LatestExporter, Exporter, std::shared_ptr<LatestExporter>>(m, "LatestExporter")
      .def(py::init([](std::string name, const py::object& serving_fn, int exports_to_keep) {
             return std::make_shared<LatestExporter>(std::move(name), ToServingFn(serving_fn),
                                                     exports_to_keep);
           }),
           py::arg("name"), py::arg("serving_input_receiver_fn"), py::arg("exports_to_keep") = 5);
  py::class_<BestExporter, Exporter, std::shared_ptr<BestExporter>>(m, "BestExporter")
      .def(py::init([](std::string name, const py::object& serving_fn, const py::object& compare_fn,
                       int exports_to_keep) {
             return std::make_shared<BestExporter>(std::move(name), ToServingFn(serving_fn),
                                                   ToCompareFn(compare_fn), exports_to_keep);
           }),
           py::arg("name"), py::arg("serving_input_receiver_fn"),
           py::arg("compare_fn") = py::none(), py::arg("exports_to_keep") = 5)
      .def_property_readonly("best", &BestExporter::best);
  py::class_<FinalExporter, Exporter, std::shared_ptr<FinalExporter>>(m, "FinalExporter")
      .def(py::init([](std::string name, const py::object& serving_fn) {
             return std::make_shared<FinalExporter>(std::move(name), ToServingFn(serving_fn));
           }),
           py::arg("name"), py::arg("serving_input_receiver_fn"));
  py::class_<PyExporter, Exporter, std::shared_ptr<PyExporter>>(m, "PyExporter")
      .def(py::init<std::string, py::object>(), py::arg("name"), py::arg("adapter"));

  py::class_<EvalSpec>(m, "EvalSpec")
      .def(py::init([](const py::object& input_fn, const py::object& steps, std::string name,
                       const py::object& hooks, double start_delay_secs, double throttle_secs,
                       std::vector<std::shared_ptr<Exporter>> exporters) {
             return EvalSpec{.input_fn = ToInputFn(input_fn),
                             .steps = OptionalInt(steps),
                             .name = std::move(name),
                             .hooks = ToHookList(hooks),
                             .exporters = std::move(exporters),
                             .start_delay_secs = start_delay_secs,
                             .throttle_secs = throttle_secs};
           }),
           py::arg("input_fn"), py::arg("steps") = 100, py::arg("name") = "",
           py::arg("hooks") = py::none(), py::arg("start_delay_secs") = 120.0,
           py::arg("throttle_secs") = 600.0,
           py::arg("exporters") = std::vector<std::shared_ptr<Exporter>>{});
  m.def(
      "train_and_evaluate",
      [](Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec) {
        return WithoutGil([&] {
          TrainAndEvaluateResult result = TrainAndEvaluate(estimator, train_spec, eval_spec);
          return std::make_tuple(result.eval_result, result.export_results, result.stop_signal);
        });
      },
      py::arg("estimator"), py::arg("train_spec"), py::arg("eval_spec"));

  py::class_<SavedModelPredictor>(m, "SavedModelPredictor")
      .def(py::init([](const std::string& export_dir) {
             return WithoutGil([&] { return SavedModelPredictor::Load(export_dir); });
           }),
           py::arg("export_dir"))
      .def(
          "predict",
          [](SavedModelPredictor& p, const py::dict& inputs, const std::string& signature) {
            const auto& signatures = p.signatures();
            const auto sig = signatures.find(signature);
            std::map<std::string, Tensor> feeds;
            for (auto [key, value] : inputs) {
              const auto name = key.cast<std::string>();
              DType dtype = DType::kInvalid;
              if (sig != signatures.end()) {
                if (auto in = sig->second.inputs.find(name); in != sig->second.inputs.end()) {
                  dtype = in->second.dtype;
                }
              }
              feeds[name] = ToTensor(value, dtype, "predictor input '" + name + "'");
            }
            std::map<std::string, Tensor> outputs =
                WithoutGil([&] { return p.Predict(feeds, signature); });
            py::dict result;
            for (auto& [key, value] : outputs) result[py::str(key)] = ToNumpy(std::move(value));
            return result;
          },
          py::arg("inputs"), py::arg("signature") = "serving_default")
      .def_property_readonly("signature_keys",
                             [](const SavedModelPredictor& p) {
                               std::vector<std::string> keys;
                               for (const auto& [key, sig] : p.signatures()) keys.push_back(key);
                               return keys;
                             })
      .def(
          "signature_inputs",
          [](const SavedModelPredictor& p, const std::string& signature) {
            std::vector<std::string> keys;
            auto it = p.signatures().find(signature);
            if (it == p.signatures().end()) {
              throw NotFound("the SavedModel has no signature '", signature, "'");
            }
            for (const auto& [key, info] : it->second.inputs) keys.push_back(key);
            return keys;
          },
          py::arg("signature"))
      .def_property_readonly("global_step", &SavedModelPredictor::global_step);

  BindModelParts(m);
}

}  // namespace loom::python
