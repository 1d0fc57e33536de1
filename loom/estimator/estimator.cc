// Estimator: construction, the model graph every mode builds, checkpoint helpers.
// Train, Evaluate, Predict and ExportSavedModel live in estimator_train.cc,
// estimator_evaluate.cc, estimator_predict.cc and export.cc.
#include "loom/estimator/estimator.h"

#include <tuple>

#include "loom/base/logging.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/io/safetensors.h"
#include "loom/train/global_step.h"
#include "loom/train/saver.h"

namespace loom {

Estimator::Estimator(ModelFn model_fn, RunConfig config, Params params,
                     std::optional<WarmStartSettings> warm_start_from)
    : model_fn_(std::move(model_fn)),
      config_(std::move(config)),
      params_(std::move(params)),
      warm_start_(std::move(warm_start_from)),
      caches_(std::make_unique<Caches>()) {
  if (!model_fn_) throw InvalidArgument("Estimator: model_fn is required");
  ValidateRunConfig(config_);
  if (config_.env == nullptr) config_.env = Env::Default();
  if (config_.model_dir.empty()) {
    Env* env = config_.env;
    config_.model_dir =
        JoinPath("/tmp", StrCat("loom_estimator_", env->ProcessId(), "_", env->NowMicros()));
    LOOM_LOG(WARNING) << "Using temporary folder as model directory: " << config_.model_dir;
  }
  if (warm_start_ && warm_start_->ckpt_to_initialize_from.empty()) {
    throw InvalidArgument("Estimator: WarmStartSettings::ckpt_to_initialize_from is required");
  }
}

Estimator::Estimator(SimpleModelFn model_fn, RunConfig config, Params params,
                     std::optional<WarmStartSettings> warm_start_from)
    : Estimator(model_fn ? ModelFn([fn = std::move(model_fn)](
                                       Scope& s, const Features& f, Output l, Mode m, const Params&,
                                       const RunConfig&) { return fn(s, f, l, m); })
                         : ModelFn(),
                std::move(config), std::move(params), std::move(warm_start_from)) {}

Estimator::~Estimator() = default;

std::optional<std::string> Estimator::LatestCheckpoint() const {
  return train::LatestValidCheckpoint(env(), config_.model_dir);
}

std::vector<std::string> Estimator::GetVariableNames() const {
  std::optional<std::string> ckpt = LatestCheckpoint();
  if (!ckpt) throw FailedPrecondition("GetVariableNames: no checkpoint in '", model_dir(), "'");
  std::vector<std::string> names;
  for (const auto& entry : train::ListVariables(env(), train::CheckpointFilePath(*ckpt))) {
    if (!entry.is_iterator_state) names.push_back(entry.name);
  }
  return names;
}

Tensor Estimator::GetVariableValue(const std::string& name) const {
  std::optional<std::string> ckpt = LatestCheckpoint();
  if (!ckpt) throw FailedPrecondition("GetVariableValue: no checkpoint in '", model_dir(), "'");
  return train::LoadVariable(env(), train::CheckpointFilePath(*ckpt), name);
}

void ResetIterator(Session& session, const std::string& resource, const data::Dataset& dataset) {
  auto make = [&] {
    try {
      return dataset.MakeIterator();
    } catch (const Error& e) {
      throw WithContext(e,
                        "input_fn returned a Dataset the Estimator cannot iterate (a dataset "
                        "over placeholders must be iterated by the input_fn itself: return "
                        "iterator.GetNext() and initialize it in a hook)");
    }
  };
  auto* r = session.resources().LookupOrCreate<data::IteratorResource>(resource);
  std::string pending, source;
  {
    std::lock_guard<std::mutex> lock(r->mu);
    pending.swap(r->pending_restore);
    source.swap(r->pending_source);
  }
  std::unique_ptr<data::Iterator> iterator = make();
  if (!pending.empty()) {
    try {
      iterator->Restore(pending);
    } catch (const Error& e) {
      // A damaged state is not a changed pipeline: never silently start over from it.
      if (e.code() == ErrorCode::kDataLoss) {
        throw WithContext(e, "restoring iterator state from ", source);
      }
      // The checkpoint's position belongs to another input pipeline (input_fn changed
      // between Train calls): start this one from its beginning, as TF always does.
      LOOM_LOG(WARNING) << "The checkpoint's input position does not fit this input_fn's "
                        << "dataset; starting it from the beginning (" << e.message() << ")";
      iterator = make();
    }
  }
  r->Reset(std::move(iterator));
}

void DatasetInitializerHook::AfterCreateSession(Session& session) {
  ResetIterator(session, resource_, dataset_);
}

ModelGraph EstimatorInternals::BuildModelGraph(Estimator& est, const InputFn& input_fn, Mode mode) {
  ModelGraph m;
  GraphOptions graph_options;
  if (est.config_.tf_random_seed) graph_options.seed = *est.config_.tf_random_seed;
  m.graph = std::make_unique<Graph>(graph_options);
  Scope root(*m.graph);
  m.global_step = train::GlobalStep(root);

  const int nodes_before = m.graph->num_nodes();
  InputFnResult input = input_fn(root);
  Features features;
  Output labels;
  if (input.is_dataset()) {
    m.input_built_nodes = m.graph->num_nodes() != nodes_before;
    m.dataset = input.dataset();
    m.input_spec = input.dataset().spec();
    auto iterator = data::GraphIterator::FromStructure(root, m.input_spec);
    m.iterator_resource = StrCat(data::kIteratorResourcePrefix, iterator.resource_name());
    std::tie(features, labels) = input.Split(iterator.GetNext());
  } else {
    m.input_built_nodes = true;
    std::tie(features, labels) = input.FeaturesAndLabels();
    for (const auto& [name, output] : features) {
      if (!output.valid() || output.node->graph() != m.graph.get()) {
        throw InvalidArgument("input_fn: feature '", name, "' is not a tensor of the graph ",
                              "being built; build it with the Scope input_fn receives");
      }
    }
    if (labels.valid() && labels.node->graph() != m.graph.get()) {
      throw InvalidArgument("input_fn: the labels are not a tensor of the graph being built");
    }
  }
  if (mode == Mode::kPredict) labels = Output();

  ++est.model_fn_calls_;
  m.spec = est.model_fn_(root, features, labels, mode, est.params_, est.config_);
  ValidateEstimatorSpec(m.spec, mode, *m.graph);
  return m;
}

std::optional<data::Dataset> EstimatorInternals::ProbeDataset(const Estimator& est,
                                                              const InputFn& input_fn) {
  Graph scratch;
  Scope root(scratch);
  InputFnResult input = input_fn(root);
  if (!input.is_dataset() || scratch.num_nodes() != 0) return std::nullopt;
  return input.dataset();
}

std::string EstimatorInternals::ResolveCheckpoint(const Estimator& est, const std::string& path,
                                                  std::string_view what) {
  Env* env = est.env();
  if (!path.empty()) {
    if (!env->FileExists(train::CheckpointFilePath(path))) {
      throw NotFound(what, ": checkpoint_path '", path, "' does not exist");
    }
    return path;
  }
  std::optional<std::string> latest = est.LatestCheckpoint();
  if (!latest) {
    throw FailedPrecondition(what, ": could not find a trained model in model_dir '",
                             est.model_dir(), "' (no checkpoint); train first or pass ",
                             "checkpoint_path");
  }
  return *latest;
}

std::shared_ptr<train::Scaffold> VariablesOnlyScaffold(const EstimatorSpec& spec, Env* env) {
  auto scaffold = spec.scaffold ? spec.scaffold : std::make_shared<train::Scaffold>();
  if (!scaffold->saver) {
    scaffold->saver_options.save_iterators = false;
    if (scaffold->saver_options.env == nullptr) scaffold->saver_options.env = env;
  }
  return scaffold;
}

void PrepareCachedSession(const ModelGraph& model, train::Scaffold& scaffold,
                          std::unique_ptr<Session>& session, std::string& stamp,
                          const data::Dataset& dataset, const std::string& checkpoint,
                          const RunConfig& config) {
  if (!session) {
    scaffold.Finalize(*model.graph);
    session = std::make_unique<Session>(*model.graph, config.session_config);
  }
  const std::string current = CheckpointStamp(config.env, checkpoint);
  if (current != stamp) {
    stamp.clear();  // a failed restore leaves the session holding no known checkpoint
    scaffold.saver->Restore(*session, checkpoint, {.restore_iterators = false});
    stamp = current;
  }
  if (scaffold.local_init_op.valid()) session->Run({}, {}, {scaffold.local_init_op});
  ResetIterator(*session, model.iterator_resource, dataset);
}

std::string CheckpointStamp(Env* env, const std::string& path) {
  SafetensorsIndex index = ReadSafetensorsIndex(env, train::CheckpointFilePath(path));
  auto it = index.metadata.find("wall_time");
  return StrCat(path, "@", it == index.metadata.end() ? "" : it->second, "#", index.file_size);
}

int64_t CheckpointGlobalStep(Env* env, const std::string& path) {
  return train::StepValue(train::LoadVariable(env, train::CheckpointFilePath(path), "global_step"));
}

bool SpecsCompatible(const data::ElementSpec& built, const data::ElementSpec& other) {
  // Exact equality: the cached graph's shapes were inferred from `built`.
  return built == other;
}

double ScalarToDouble(const Tensor& t) {
  return SwitchNumeric(t.dtype(), "a scalar result", [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(t.data<T>()[0]);
  });
}

}  // namespace loom
