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

std::string Estimator::ExportSavedModel(const std::string& export_dir_base,
                                        const ServingInputReceiverFn& serving_input_fn,
                                        ExportOptions options) {
  if (!serving_input_fn) throw InvalidArgument("ExportSavedModel: serving_input_fn is required");
  const std::string checkpoint =
      EstimatorInternals::ResolveCheckpoint(*this, options.checkpoint_path, "ExportSavedModel");
  GraphOptions graph_options;
  if (config_.tf_random_seed) graph_options.seed = *config_.tf_random_seed;
  Graph graph(graph_options);
  Scope root(graph);
  train::GlobalStep(root);
  ServingInputReceiver receiver = serving_input_fn(root);
  if (receiver.receiver_tensors.empty()) {
    throw InvalidArgument(
        "ExportSavedModel: the serving input receiver has no receiver_tensors "
        "(the inputs a client feeds)");
  }
  for (const auto& [key, output] : receiver.receiver_tensors) {
    if (!output.valid() || output.node->graph() != &graph) {
      throw InvalidArgument("ExportSavedModel: receiver tensor '", key,
                            "' is not a tensor of the graph the serving input_fn was given");
    }
  }
  ++model_fn_calls_;
  EstimatorSpec spec =
      model_fn_(root, receiver.features, Output(), Mode::kPredict, params_, config_);
  ValidateEstimatorSpec(spec, Mode::kPredict, graph);

  std::map<std::string, SignatureDef> signatures;
  for (const auto& [name, export_output] : ExportSignatures(spec)) {
    SignatureDef& sig = signatures[name];
    sig.method_name = export_output.method_name;
    for (const auto& [key, output] : receiver.receiver_tensors) sig.inputs[key] = InfoOf(output);
    for (const auto& [key, output] : export_output.outputs) sig.outputs[key] = InfoOf(output);
  }

  auto scaffold = VariablesOnlyScaffold(spec, env());
  scaffold->Finalize(graph);
  Session session(graph, config_.session_config);
  scaffold->saver->Restore(session, checkpoint, {.restore_iterators = false});
  if (scaffold->local_init_op.valid()) session.Run({}, {}, {scaffold->local_init_op});

  const std::string export_dir = NewExportDir(env(), export_dir_base);
  env()->CreateDirs(export_dir_base);
  WriteSavedModel(env(), export_dir, graph, session, signatures,
                  {{"global_step", std::to_string(CheckpointGlobalStep(env(), checkpoint))},
                   {"checkpoint", checkpoint}});
  LOOM_LOG(INFO) << "SavedModel written to: " << export_dir;
  return export_dir;
}

}  // namespace loom
