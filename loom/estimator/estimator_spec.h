#ifndef LOOM_ESTIMATOR_ESTIMATOR_SPEC_H_
#define LOOM_ESTIMATOR_ESTIMATOR_SPEC_H_

// EstimatorSpec: what a model function returns, TF1's tf.estimator.EstimatorSpec — the ops
// that train, evaluate or predict with the model it built. Every Output and Operation in
// it belongs to the graph the model function was given. Per mode (ValidateEstimatorSpec):
//   kTrain    loss and train_op are required;
//   kEval     loss is required; eval_metric_ops are optional;
//   kPredict  predictions are required (export_outputs default to them).
// loss must be a floating scalar (shape [] or [1]) in every mode that has it.
//
//   if (mode == loom::Mode::kPredict) return {.mode = mode, .predictions = predictions};
//   return {.mode = mode, .loss = loss, .train_op = train_op};
#include <any>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "loom/base/error.h"
#include "loom/estimator/mode.h"
#include "loom/graph/graph.h"
#include "loom/train/scaffold.h"
#include "loom/train/session_run_hook.h"

namespace loom {

// Model inputs by name ("x", ...), as the input function produced them. A std::map whose
// at() throws InvalidArgument naming the missing key and the keys there are (a wrong key
// in a model_fn is a user error, not a bare std::out_of_range).
class Features : public std::map<std::string, Output> {
 public:
  using Base = std::map<std::string, Output>;
  using Base::Base;
  Features() = default;
  Features(Base features) : Base(std::move(features)) {}

  Output& at(const std::string& key);
  const Output& at(const std::string& key) const;
};
// Named prediction tensors; each has the batch as its first dimension.
using Predictions = std::map<std::string, Output>;
// The Estimator's hyperparameters, passed to the model function unchanged (TF's params).
using Params = std::map<std::string, std::any>;

// params.at(key) as T. Throws InvalidArgument naming the key when it is absent or holds
// another type.
template <typename T>
T GetParam(const Params& params, const std::string& key);

// A streaming metric as the Estimator uses it: `value` reads the metric, `update_op`
// folds one batch into it (TF's (metric_tensor, update_op) pair). Converts from any struct
// with those two members (the metrics library's Metric).
struct MetricOps {
  Output value;
  Operation update_op;

  MetricOps() = default;
  MetricOps(Output v, Operation u) : value(v), update_op(u) {}
  template <typename M>
  requires(!std::is_same_v<std::decay_t<M>, MetricOps> &&
           requires(const M& m) {
             Output(m.value);
             Operation(m.update_op);
           }) MetricOps(const M& metric)
      : value(metric.value), update_op(metric.update_op) {}
};

// A serving signature's outputs (TF's ExportOutput). method_name is TF Serving's:
// "tensorflow/serving/predict", ".../classify" or ".../regress".
struct ExportOutput {
  std::map<std::string, Output> outputs;
  std::string method_name = "tensorflow/serving/predict";
};
ExportOutput PredictOutput(std::map<std::string, Output> outputs);
// Outputs "scores" and/or "classes" (either may be invalid).
ExportOutput ClassificationOutput(Output scores, Output classes = Output());
// Output "outputs".
ExportOutput RegressionOutput(Output value);
// The signature key used when the model names none: "serving_default".
inline constexpr std::string_view kDefaultServingSignature = "serving_default";

struct EstimatorSpec {
  Mode mode = Mode::kTrain;
  Predictions predictions;
  Output loss;
  Operation train_op;
  std::map<std::string, MetricOps> eval_metric_ops;
  // Signature name -> outputs, for ExportSavedModel. Default: empty, meaning
  // {"serving_default": PredictOutput(predictions)}.
  std::map<std::string, ExportOutput> export_outputs;
  train::HookList training_hooks;
  train::HookList evaluation_hooks;
  train::HookList prediction_hooks;
  train::HookList training_chief_hooks;
  // Init ops, saver and summary op (train::Scaffold). Default: nullptr, a new Scaffold.
  std::shared_ptr<train::Scaffold> scaffold;
};

// Checks `spec` for a model function called with `mode` on `graph` (see the list above).
// Throws InvalidArgument naming the missing or wrong field, what it is, and the mode.
void ValidateEstimatorSpec(const EstimatorSpec& spec, Mode mode, const Graph& graph);

// The signatures to export: spec.export_outputs, or predictions as "serving_default"; a
// single signature also becomes the default one (as TF does). Throws InvalidArgument
// when there is nothing to export.
std::map<std::string, ExportOutput> ExportSignatures(const EstimatorSpec& spec);

template <typename T>
T GetParam(const Params& params, const std::string& key) {
  auto it = params.find(key);
  if (it == params.end()) throw InvalidArgument("params: no entry named '", key, "'");
  if (const T* value = std::any_cast<T>(&it->second)) return *value;
  throw InvalidArgument("params: entry '", key, "' holds a ", it->second.type().name(),
                        ", not the type asked for (", typeid(T).name(), ")");
}

}  // namespace loom

#endif  // LOOM_ESTIMATOR_ESTIMATOR_SPEC_H_
