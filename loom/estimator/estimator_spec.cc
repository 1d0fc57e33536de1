#include "loom/estimator/estimator_spec.h"

#include <vector>

#include "loom/base/strcat.h"
#include "loom/graph/graph.h"

namespace loom {
namespace {

std::string ModeText(Mode mode) { return std::string(ModeName(mode)); }

// Every tensor in a spec must come from the graph the model function was given.
void CheckGraph(const Graph& graph, const Node* node, const std::string& what, Mode mode) {
  if (node != nullptr && node->graph() != &graph) {
    throw InvalidArgument("EstimatorSpec (mode ", ModeText(mode), "): ", what, " (", node->name(),
                          ") belongs to another graph; build every op with "
                          "the Scope the model function receives");
  }
}

[[noreturn]] void ThrowMissingFeature(const std::map<std::string, Output>& features,
                                      const std::string& key) {
  std::vector<std::string> keys;
  keys.reserve(features.size());
  for (const auto& [name, output] : features) keys.push_back("'" + name + "'");
  throw InvalidArgument(
      "features.at(\"", key, "\"): no feature named '", key, "'; the ", "input_fn gave ",
      keys.empty() ? std::string("no features") : StrCat("these: ", StrJoin(keys, ", ")),
      " (a label component is not among the features)");
}

}  // namespace

Output& Features::at(const std::string& key) {
  auto it = find(key);
  if (it == end()) ThrowMissingFeature(*this, key);
  return it->second;
}

const Output& Features::at(const std::string& key) const {
  auto it = find(key);
  if (it == end()) ThrowMissingFeature(*this, key);
  return it->second;
}

ExportOutput PredictOutput(std::map<std::string, Output> outputs) {
  return {.outputs = std::move(outputs), .method_name = "tensorflow/serving/predict"};
}

ExportOutput ClassificationOutput(Output scores, Output classes) {
  ExportOutput out{.method_name = "tensorflow/serving/classify"};
  if (scores.valid()) out.outputs["scores"] = scores;
  if (classes.valid()) out.outputs["classes"] = classes;
  if (out.outputs.empty()) {
    throw InvalidArgument("ClassificationOutput: at least one of scores and classes is required");
  }
  return out;
}

ExportOutput RegressionOutput(Output value) {
  if (!value.valid()) throw InvalidArgument("RegressionOutput: the value is required");
  return {.outputs = {{"outputs", value}}, .method_name = "tensorflow/serving/regress"};
}

void ValidateEstimatorSpec(const EstimatorSpec& spec, Mode mode, const Graph& graph) {
  const std::string m = ModeText(mode);
  if (spec.mode != mode) {
    throw InvalidArgument("model_fn was called with mode '", m,
                          "' but returned an EstimatorSpec with mode '", ModeText(spec.mode),
                          "'; return {.mode = mode, ...}");
  }
  const bool needs_loss = mode == Mode::kTrain || mode == Mode::kEval;
  if (needs_loss && !spec.loss.valid()) {
    throw InvalidArgument("EstimatorSpec (mode ", m, "): missing loss; mode ", m,
                          " needs a scalar loss");
  }
  if (spec.loss.valid()) {
    CheckGraph(graph, spec.loss.node, "loss", mode);
    const Shape& shape = spec.loss.shape();
    // TF's rule: one element ([], [1], [1, 1] ...; the Estimator reshapes it to []). A
    // shape with unknown dims, which TF accepts and fails at its run-time reshape once a
    // batch holds more than one example, is rejected here.
    const bool scalar = shape.fully_defined() && shape.num_elements() == 1;
    if (!scalar) {
      throw InvalidArgument("EstimatorSpec (mode ", m, "): loss must be a scalar, given ",
                            spec.loss.name(), " of shape ", shape.ToString(),
                            "; reduce it (e.g. Mean) before returning it");
    }
    if (spec.loss.dtype() != DType::kFloat32 && spec.loss.dtype() != DType::kFloat64) {
      throw InvalidArgument("EstimatorSpec (mode ", m, "): loss ", spec.loss.name(),
                            " must be float32 or float64, given ", DTypeName(spec.loss.dtype()));
    }
  }
  if (mode == Mode::kTrain && !spec.train_op.valid()) {
    throw InvalidArgument(
        "EstimatorSpec (mode train): missing train_op; return the op of "
        "Optimizer::Minimize(scope, loss, train::GlobalStep(scope))");
  }
  CheckGraph(graph, spec.train_op.node, "train_op", mode);
  if (mode == Mode::kPredict && spec.predictions.empty()) {
    throw InvalidArgument(
        "EstimatorSpec (mode infer): missing predictions; mode infer needs "
        "at least one named prediction tensor");
  }
  for (const auto& [key, output] : spec.predictions) {
    if (!output.valid()) {
      throw InvalidArgument("EstimatorSpec (mode ", m, "): prediction '", key, "' is not a tensor");
    }
    CheckGraph(graph, output.node, "prediction '" + key + "'", mode);
  }
  for (const auto& [name, metric] : spec.eval_metric_ops) {
    if (!metric.value.valid() || !metric.update_op.valid()) {
      throw InvalidArgument("EstimatorSpec (mode ", m, "): eval_metric_ops['", name,
                            "'] needs both a value tensor and an update op");
    }
    CheckGraph(graph, metric.value.node, "eval_metric_ops['" + name + "'].value", mode);
    CheckGraph(graph, metric.update_op.node, "eval_metric_ops['" + name + "'].update_op", mode);
    const Shape& shape = metric.value.shape();
    if (!shape.rank_known() || shape.rank() != 0) {
      throw InvalidArgument("EstimatorSpec (mode ", m, "): eval_metric_ops['", name,
                            "'].value must be a scalar, given shape ", shape.ToString());
    }
  }
  for (const auto& [signature, output] : spec.export_outputs) {
    if (output.outputs.empty()) {
      throw InvalidArgument("EstimatorSpec: export_outputs['", signature, "'] has no outputs");
    }
    for (const auto& [key, o] : output.outputs) {
      if (!o.valid()) {
        throw InvalidArgument("EstimatorSpec: export_outputs['", signature, "']['", key,
                              "'] is not a tensor");
      }
      CheckGraph(graph, o.node, StrCat("export_outputs['", signature, "']['", key, "']"), mode);
    }
  }
  auto check_hooks = [&](const train::HookList& hooks, const char* what) {
    for (const auto& hook : hooks) {
      if (hook == nullptr) throw InvalidArgument("EstimatorSpec: a null hook in ", what);
    }
  };
  check_hooks(spec.training_hooks, "training_hooks");
  check_hooks(spec.evaluation_hooks, "evaluation_hooks");
  check_hooks(spec.prediction_hooks, "prediction_hooks");
  check_hooks(spec.training_chief_hooks, "training_chief_hooks");
}

std::map<std::string, ExportOutput> ExportSignatures(const EstimatorSpec& spec) {
  std::map<std::string, ExportOutput> signatures = spec.export_outputs;
  const std::string default_key(kDefaultServingSignature);
  if (signatures.empty()) {
    if (spec.predictions.empty()) {
      throw InvalidArgument(
          "ExportSavedModel: the model_fn returned neither export_outputs "
          "nor predictions in mode infer");
    }
    signatures[default_key] = PredictOutput(spec.predictions);
  } else if (signatures.size() == 1 && !signatures.count(default_key)) {
    signatures[default_key] = signatures.begin()->second;
  }
  return signatures;
}

}  // namespace loom
