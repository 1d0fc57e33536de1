// Estimator::ExportSavedModel (TF's export_saved_model): the kPredict graph fed by the
// serving input receiver, with a checkpoint's variables, written by WriteSavedModel.
#include "loom/base/logging.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/train/global_step.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

TensorInfo InfoOf(const Output& output) {
  return {.name = output.name(), .dtype = output.dtype(), .shape = output.shape()};
}

}  // namespace

ServingModel EstimatorInternals::BuildServingModel(Estimator& estimator,
                                                   const ServingInputReceiverFn& serving_input_fn,
                                                   const ExportOptions& options,
                                                   std::string_view what) {
  if (!serving_input_fn) throw InvalidArgument(what, ": serving_input_fn is required");
  const RunConfig& config = estimator.config_;
  ServingModel model;
  model.checkpoint = ResolveCheckpoint(estimator, options.checkpoint_path, what);
  GraphOptions graph_options;
  if (config.tf_random_seed) graph_options.seed = *config.tf_random_seed;
  model.graph = std::make_unique<Graph>(graph_options);
  Graph& graph = *model.graph;
  Scope root(graph);
  train::GlobalStep(root);
  ServingInputReceiver receiver = serving_input_fn(root);
  if (receiver.receiver_tensors.empty()) {
    throw InvalidArgument(what,
                          ": the serving input receiver has no receiver_tensors "
                          "(the inputs a client feeds)");
  }
  for (const auto& [key, output] : receiver.receiver_tensors) {
    if (!output.valid() || output.node->graph() != &graph) {
      throw InvalidArgument(what, ": receiver tensor '", key,
                            "' is not a tensor of the graph the serving input_fn was given");
    }
  }
  ++estimator.model_fn_calls_;
  EstimatorSpec spec = estimator.model_fn_(root, receiver.features, Output(), Mode::kPredict,
                                           estimator.params_, config);
  ValidateEstimatorSpec(spec, Mode::kPredict, graph);

  for (const auto& [name, export_output] : ExportSignatures(spec)) {
    SignatureDef& sig = model.signatures[name];
    sig.method_name = export_output.method_name;
    for (const auto& [key, output] : receiver.receiver_tensors) sig.inputs[key] = InfoOf(output);
    for (const auto& [key, output] : export_output.outputs) sig.outputs[key] = InfoOf(output);
  }

  auto scaffold = VariablesOnlyScaffold(spec, estimator.env());
  scaffold->Finalize(graph);
  model.session = std::make_unique<Session>(graph, config.session_config);
  scaffold->saver->Restore(*model.session, model.checkpoint, {.restore_iterators = false});
  if (scaffold->local_init_op.valid()) model.session->Run({}, {}, {scaffold->local_init_op});
  model.global_step = CheckpointGlobalStep(estimator.env(), model.checkpoint);
  return model;
}

std::string Estimator::ExportSavedModel(const std::string& export_dir_base,
                                        const ServingInputReceiverFn& serving_input_fn,
                                        const ExportOptions& options) {
  ServingModel model =
      EstimatorInternals::BuildServingModel(*this, serving_input_fn, options, "ExportSavedModel");
  std::string export_dir = NewExportDir(env(), export_dir_base);
  env()->CreateDirs(export_dir_base);
  WriteSavedModel(
      env(), export_dir, *model.graph, *model.session, model.signatures,
      {{"global_step", std::to_string(model.global_step)}, {"checkpoint", model.checkpoint}});
  LOOM_LOG(INFO) << "SavedModel written to: " << export_dir;
  return export_dir;
}

}  // namespace loom
