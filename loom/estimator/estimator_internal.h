#ifndef LOOM_ESTIMATOR_ESTIMATOR_INTERNAL_H_
#define LOOM_ESTIMATOR_ESTIMATOR_INTERNAL_H_

// Shared by estimator*.cc and export.cc; not part of the public API.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "loom/data/dataset.h"
#include "loom/estimator/estimator.h"
#include "loom/ops/state.h"
#include "loom/train/file_writer.h"
#include "loom/train/scaffold.h"

namespace loom {

// A graph built by input_fn and model_fn for one mode.
struct ModelGraph {
  std::unique_ptr<Graph> graph;
  EstimatorSpec spec;
  Variable global_step;
  // Set when input_fn returned a Dataset: the Estimator's iterator over it (a
  // reinitializable one, reset on the host by DatasetInitializerHook or the cache).
  std::optional<data::Dataset> dataset;
  data::ElementSpec input_spec;
  std::string iterator_resource;  // the IteratorResource's name in the Session
  // input_fn added nodes itself (an iterator of its own, placeholders): the graph is
  // specific to that call and cannot be reused for another input.
  bool input_built_nodes = false;
};

// TF's _DatasetInitializerHook: (re)starts the Estimator's iterator over the dataset in
// AfterCreateSession, so a position restored from a checkpoint is applied then.
class DatasetInitializerHook : public train::SessionRunHook {
 public:
  DatasetInitializerHook(data::Dataset dataset, std::string resource, bool restart_input = false)
      : dataset_(std::move(dataset)),
        resource_(std::move(resource)),
        restart_input_(restart_input) {}
  void AfterCreateSession(Session& session) override;

 private:
  data::Dataset dataset_;
  std::string resource_;
  bool restart_input_;
};

// Replaces the iterator named `resource` in the session by a fresh one over `dataset`
// (seeded from the graph seed, data::IteratorSeed), applying a restored position pending
// there. A pending position of another pipeline is an error naming the checkpoint and what
// changed, unless `restart_input` (TrainOptions::restart_input) drops it.
void ResetIterator(Session& session, const std::string& resource, const data::Dataset& dataset,
                   bool restart_input = false);

// An evaluation graph: the model in kEval plus the metrics.
struct EvalGraph {
  ModelGraph model;
  // The spec's metrics plus "loss" (the mean of the loss over batches).
  std::map<std::string, Output> metric_values;
  Operation update_op;
  // The batches evaluated (float64; the count behind "loss").
  Output batches;
  std::shared_ptr<train::Scaffold> scaffold;
  // When cached: the session and the checkpoint it holds (CheckpointStamp).
  std::unique_ptr<Session> session;
  std::string checkpoint_stamp;
};

// A prediction graph (model in kPredict); cached like EvalGraph.
struct PredictGraph {
  ModelGraph model;
  std::shared_ptr<train::Scaffold> scaffold;
  std::unique_ptr<Session> session;
  std::string checkpoint_stamp;
  ~PredictGraph() { session.reset(); }  // the session before the graph it runs
};

struct Estimator::Caches {
  std::unique_ptr<EvalGraph> eval;
  // Shared with a live PredictionRange while one iterates it.
  std::shared_ptr<PredictGraph> predict;
  // One FileWriter per eval directory (TF's FileWriterCache).
  std::map<std::string, std::shared_ptr<train::FileWriter>> eval_writers;
  // The trainer's lock on model_dir while Train / TrainAndEvaluate runs (ModelDirLock).
  std::unique_ptr<FileLock> model_dir_lock;
  int model_dir_lock_depth = 0;
};

// The lock file a trainer holds in model_dir.
inline constexpr std::string_view kTrainLockFile = "train.lock";

// Holds the Estimator's exclusive lock on model_dir (kTrainLockFile, through Env::LockFile)
// while alive, so that two trainers never write one model_dir. Guards nest within one
// Estimator (TrainAndEvaluate around its Train): the outermost takes the lock, the
// others share it. Creates model_dir if needed. Throws FailedPrecondition naming the
// holder (pid, host, start time) when another trainer, in this process or another,
// holds it; the lock of a killed process is released by the OS.
class ModelDirLock {
 public:
  explicit ModelDirLock(Estimator& estimator);
  ~ModelDirLock();
  ModelDirLock(const ModelDirLock&) = delete;
  ModelDirLock& operator=(const ModelDirLock&) = delete;

 private:
  Estimator& estimator_;
};

// The kPredict graph fed by a serving input receiver, with a checkpoint's variables
// restored into a session: what ExportSavedModel writes and ExportOnnx converts.
struct ServingModel {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Session> session;  // after graph, so destroyed before it
  std::map<std::string, SignatureDef> signatures;
  std::string checkpoint;
  int64_t global_step = 0;
};

struct EstimatorInternals {
  // export.cc: builds the ServingModel (model_fn in kPredict) from options.checkpoint_path
  // or the newest checkpoint. Errors are prefixed with `what` (the calling export):
  // FailedPrecondition without a checkpoint, InvalidArgument for a receiver without
  // tensors or with tensors of another graph.
  static ServingModel BuildServingModel(Estimator& estimator,
                                        const ServingInputReceiverFn& serving_input_fn,
                                        const ExportOptions& options, std::string_view what);
  // A fresh graph: global step, input_fn (a Dataset gets a reinitializable iterator),
  // model_fn(mode), ValidateEstimatorSpec. Labels are dropped in kPredict.
  static ModelGraph BuildModelGraph(Estimator& estimator, const InputFn& input_fn, Mode mode);
  // `path`, or the newest checkpoint in model_dir; FailedPrecondition naming `what` when
  // there is none, NotFound when `path` does not exist.
  static std::string ResolveCheckpoint(const Estimator& estimator, const std::string& path,
                                       std::string_view what);
  // The Train hooks, in the order estimator.h documents. *shared_writer is set to the
  // FileWriter they share for model_dir's event file (null when no hook writes one).
  static train::HookList TrainingHooks(const Estimator& estimator, const ModelGraph& model,
                                       const TrainOptions& options,
                                       const std::shared_ptr<train::Scaffold>& scaffold,
                                       std::shared_ptr<train::FileWriter>* shared_writer);
  // Calls input_fn in a scratch graph: the Dataset when it returns one without building
  // nodes (so a cached graph can be reused), else nullopt.
  static std::optional<data::Dataset> ProbeDataset(const Estimator& estimator,
                                                   const InputFn& input_fn);
  static Estimator::Caches& caches(Estimator& estimator) { return *estimator.caches_; }
};

// A Scaffold whose default Saver restores variables only (not input positions): what
// Evaluate, Predict and exports use.
std::shared_ptr<train::Scaffold> VariablesOnlyScaffold(const EstimatorSpec& spec, Env* env);

// Identifies a checkpoint's contents: its path and the wall time in its header.
std::string CheckpointStamp(Env* env, const std::string& path);
// The cached Evaluate / Predict path: makes the Session on first use, restores `checkpoint`
// into it unless `stamp` says it already holds it, runs the local init op and resets the
// model's iterator over `dataset`. `session` and `stamp` are the cache's (EvalGraph,
// PredictGraph).
void PrepareCachedSession(const ModelGraph& model, train::Scaffold& scaffold,
                          std::unique_ptr<Session>& session, std::string& stamp,
                          const data::Dataset& dataset, const std::string& checkpoint,
                          const RunConfig& config);
// The global step stored in a checkpoint.
int64_t CheckpointGlobalStep(Env* env, const std::string& path);
// True when an iterator made for `built` can iterate a dataset of spec `other`.
bool SpecsCompatible(const data::ElementSpec& built, const data::ElementSpec& other);
// A scalar tensor's value as a double (any real dtype).
double ScalarToDouble(const Tensor& t);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_ESTIMATOR_INTERNAL_H_
