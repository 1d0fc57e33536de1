// Estimator: construction, the model graph every mode builds, checkpoint helpers.
// Train, Evaluate, Predict and ExportSavedModel live in estimator_train.cc,
// estimator_evaluate.cc, estimator_predict.cc and export.cc.
#include "loom/estimator/estimator.h"

#include <ctime>
#include <tuple>

#include "loom/base/logging.h"
#include "loom/data/global_batches.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/estimator/tf_checkpoints.h"
#include "loom/io/safetensors.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/ops/array.h"
#include "loom/train/global_step.h"
#include "loom/train/saver.h"

namespace loom {

Estimator::Estimator(ModelFn model_fn, RunConfig config, Params params,
                     std::optional<WarmStartSettings> warm_start_from)
    : model_fn_(std::move(model_fn)),
      config_(std::move(config)),
      params_(std::move(params)),
      warm_start_(std::move(warm_start_from)),
      caches_(std::make_shared<Caches>()) {
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

ModelDirLock::ModelDirLock(Estimator& estimator) : estimator_(estimator) {
  auto& caches = EstimatorInternals::caches(estimator_);
  // Only the chief writes model_dir, so only the chief locks it (the other replicas of a
  // distributed job may share the directory).
  if (caches.model_dir_lock_depth++ > 0 || !estimator.config().is_chief()) return;
  try {
    Env* env = estimator.config().env;
    const std::string& dir = estimator.model_dir();
    if (env->FileExists(dir) && !env->IsDirectory(dir)) {
      throw FailedPrecondition("model_dir '", dir, "' is a file, not a directory; move the file ",
                               "away or train into another model_dir");
    }
    env->CreateDirs(dir);
    const std::string path = JoinPath(dir, kTrainLockFile);
    const uint64_t now = env->NowMicros();
    const std::time_t secs = static_cast<std::time_t>(now / 1000000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char started[32];
    std::strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
    const std::string holder = StrCat("pid ", env->ProcessId(), " on host ", env->HostName(),
                                      " (training since ", started, ")\n");
    try {
      caches.model_dir_lock = env->LockFile(path, holder);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kFailedPrecondition) throw;
      // FailedPrecondition is also what a lock file that cannot be created gives (EACCES,
      // EROFS): only a held lock names its holder (env.h).
      if (e.message().find(" is locked by ") == std::string::npos) {
        throw FailedPrecondition("model_dir '", dir, "' is not writable: ", e.message(),
                                 "; make it writable or train into another model_dir");
      }
      throw FailedPrecondition("model_dir '", dir, "' is in use by another trainer: ", e.message(),
                               ". Two trainers on one model_dir would overwrite each other's "
                               "checkpoints; wait for that one to finish (or stop it), or "
                               "train into another model_dir");
    }
  } catch (...) {
    --caches.model_dir_lock_depth;
    throw;
  }
}

ModelDirLock::~ModelDirLock() {
  auto& caches = EstimatorInternals::caches(estimator_);
  if (--caches.model_dir_lock_depth == 0) caches.model_dir_lock.reset();
}

std::optional<std::string> Estimator::LatestCheckpoint() const {
  return train::LatestValidCheckpoint(env(), config_.model_dir);
}

std::vector<std::string> Estimator::GetVariableNames() const {
  std::optional<std::string> ckpt = LatestCheckpoint();
  if (!ckpt) {
    if (auto tf = LatestTfCheckpoint(env(), model_dir())) {
      return TfCheckpointReader::Open(env(), *tf)->names();
    }
    throw FailedPrecondition("GetVariableNames: no checkpoint in '", model_dir(), "'");
  }
  std::vector<std::string> names;
  for (const auto& entry : train::ListVariables(env(), train::CheckpointFilePath(*ckpt))) {
    if (!entry.is_iterator_state && !entry.is_random_stream) names.push_back(entry.name);
  }
  return names;
}

Tensor Estimator::GetVariableValue(const std::string& name) const {
  std::optional<std::string> ckpt = LatestCheckpoint();
  if (!ckpt) {
    if (auto tf = LatestTfCheckpoint(env(), model_dir())) {
      return TfCheckpointReader::Open(env(), *tf)->Get(name);
    }
    throw FailedPrecondition("GetVariableValue: no checkpoint in '", model_dir(), "'");
  }
  return train::LoadVariable(env(), train::CheckpointFilePath(*ckpt), name);
}

void ResetIterator(Session& session, const std::string& resource, const data::Dataset& dataset,
                   bool restart_input) {
  const std::string_view shared_name = std::string_view(resource).substr(
      resource.starts_with(data::kIteratorResourcePrefix) ? data::kIteratorResourcePrefix.size()
                                                          : 0);
  const std::optional<uint64_t> seed = data::IteratorSeed(session.graph(), shared_name);
  auto make = [&] {
    try {
      return dataset.MakeIterator(seed);
    } catch (const Error& e) {
      throw WithContext(e,
                        "input_fn returned a Dataset the Estimator cannot iterate (a dataset "
                        "over placeholders must be iterated by the input_fn itself: return "
                        "iterator.GetNext() and initialize it in a hook)");
    }
  };
  auto* r = session.resources().LookupOrCreate<data::IteratorResource>(resource);
  auto [pending, origin] = r->TakePendingRestore();
  std::unique_ptr<data::Iterator> iterator = make();
  if (!pending.empty() && restart_input) {
    LOOM_LOG(WARNING) << "Not restoring the input position saved in '" << origin
                      << "' (TrainOptions::restart_input): the input starts from its beginning";
  } else if (!pending.empty()) {
    try {
      iterator->Restore(pending);
    } catch (const Error& e) {
      // A damaged state is not a changed pipeline: name the checkpoint, never start over.
      if (e.code() == ErrorCode::kDataLoss) {
        throw WithContext(e, "restoring the input position saved in '", origin, "'");
      }
      // One process, a position saved before input positions were global (by a plain
      // iterator over the same pipeline): it resumes in that iterator, as it was saved.
      if (auto global = data::SingleShardSource(dataset)) {
        std::unique_ptr<data::Iterator> plain = global->MakeIterator(seed);
        bool fits = true;
        try {
          plain->Restore(pending);
        } catch (const Error&) {
          fits = false;
        }
        if (fits) {
          LOOM_LOG(WARNING) << "The input position in '" << origin
                            << "' was saved by an older Loom, per pipeline rather than "
                               "global: training resumes it in one process and keeps "
                               "saving it that way; to train this model_dir under mpirun, "
                               "relaunch once with --restart-input (TrainOptions::"
                               "restart_input)";
          r->Reset(std::move(plain));
          return;
        }
      }
      // A position restored into another pipeline would silently mean something else
      // (another batch size: other examples at each global step); starting over silently
      // would break the global step -> input position relation. Say so instead.
      throw WithContext(e, "the checkpoint '", origin,
                        "' holds the input position of another input pipeline than the one "
                        "input_fn builds now (changed batch size, shuffle buffer, files, ...?); "
                        "train with the input_fn it was saved with to resume exactly, or pass "
                        "TrainOptions::restart_input (loom train --restart-input) to start "
                        "the new input from its beginning");
    }
  }
  r->Reset(std::move(iterator));
}

void DatasetInitializerHook::AfterCreateSession(Session& session) {
  ResetIterator(session, resource_, dataset_, restart_input_);
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
  const TrainDistribution* distribution =
      mode == Mode::kTrain ? est.config_.train_distribute.get() : nullptr;
  if (distribution != nullptr && !input.is_dataset()) {
    throw InvalidArgument("input_fn: distributed training (", distribution->num_replicas(),
                          " replicas) needs input_fn to return a Dataset, so that the "
                          "Estimator can shard it and agree on its end; this one built "
                          "its own tensors");
  }
  if (input.is_dataset()) {
    m.input_built_nodes = m.graph->num_nodes() != nodes_before;
    // Training in one process takes the pipeline N ranks take (as the one shard of one),
    // so that its saved input position is global and resumes under `mpirun -np N` too.
    if (distribution != nullptr) {
      m.dataset = distribution->ReplicaInput(input.dataset());
    } else if (mode == Mode::kTrain) {
      m.dataset = data::ShardGlobalBatches(input.dataset(), 1, 0);
    } else {
      m.dataset = input.dataset();
    }
    m.input_spec = m.dataset->spec();
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
  try {
    m.spec = est.model_fn_(root, features, labels, mode, est.params_, est.config_);
  } catch (const Error& e) {
    if (labels.valid() || mode == Mode::kPredict) throw;
    // The usual cause of an error in a model_fn without labels is the missing labels.
    throw Error(e.code(), StrCat(e.message(), " [model_fn in mode ", ModeName(mode),
                                 " got no labels: the input_fn returned no label component; "
                                 "name one \"label\" (or set label_key), or return "
                                 "(features, labels)]"));
  }
  ValidateEstimatorSpec(m.spec, mode, *m.graph);
  if (m.spec.loss.valid() && m.spec.loss.shape().rank() != 0) {
    // A one-element loss of another shape ([1], [1, 1]) becomes a scalar, as in TF's
    // EstimatorSpec, for the hooks, summaries and metrics that read it.
    m.spec.loss = Reshape(root.WithOpName(m.graph->UniqueName("loss_as_scalar")), m.spec.loss,
                          std::vector<int64_t>{});
  }
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
    // Why there is none: the usual mistakes are another path given for the model_dir
    // (a checkpoint file, an export directory, a typo).
    const std::string& dir = est.model_dir();
    std::string why = "it holds no checkpoint (model.ckpt-N.safetensors)";
    if (!env->FileExists(dir)) {
      why = "it does not exist";
    } else if (!env->IsDirectory(dir)) {
      why = "it is a file, not a directory (a checkpoint file is passed as checkpoint_path)";
    } else if (env->FileExists(JoinPath(dir, "saved_model.json")) ||
               env->FileExists(JoinPath(dir, "saved_model.pb"))) {
      why =
          "it is a SavedModel (an export), not a model_dir; give the model_dir it was "
          "exported from";
    }
    throw FailedPrecondition(what, ": could not find a trained model in model_dir '", dir,
                             "': ", why, "; train into it first (Train, loom train JOB) or pass ",
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
