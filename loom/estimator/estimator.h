#ifndef LOOM_ESTIMATOR_ESTIMATOR_H_
#define LOOM_ESTIMATOR_ESTIMATOR_H_

// Estimator: TF1's tf.estimator.Estimator. It owns the loop around a model function —
// building the graph, creating, restoring and checkpointing the session, hooks, summaries
// and exports — for training, evaluation and prediction.
//
//   loom::Estimator estimator(ModelFn, {.model_dir = "runs/1", .tf_random_seed = 42});
//   estimator.Train(train_input_fn, {.max_steps = 10000});
//   auto metrics = estimator.Evaluate(eval_input_fn);   // {"loss", "global_step", ...}
//   for (const auto& p : estimator.Predict(predict_input_fn)) Use(p.at("classes"));
//
// Train, in order:
//   0. the lock on model_dir is taken (model_dir/train.lock, held until Train returns; a
//      second trainer on the same model_dir, in any process, gets FailedPrecondition
//      naming the holder's pid and host);
//   1. max_steps already reached by the newest checkpoint: logged, nothing else happens;
//   2. a fresh Graph (seed: tf_random_seed), the global step, input_fn, model_fn(kTrain),
//      ValidateEstimatorSpec, a "loss" scalar summary;
//   3. a MonitoredSession restored from the newest checkpoint in model_dir (else
//      initialized, then warm-started), with the hooks in this order:
//        the stop-signal hook, dataset initializer, options.hooks, StopAtStepHook
//        (steps / max_steps),
//        NanTensorHook, LoggingTensorHook (loss, step), spec.training_hooks,
//        CheckpointSaverHook (with saving_listeners), spec.training_chief_hooks,
//        StepCounterHook, SummarySaverHook.
//      From here until Train returns, SIGTERM / SIGINT / SIGUSR1 are handled
//      (train/stop_signals.h): the first stops training after the step in flight, with
//      every End and the final checkpoint (TrainResult::stop_signal says which signal);
//      a second kills the process at once.
//      (TF runs chief hooks first; here the iterator is initialized — and a restored
//      position applied — before the first checkpoint is taken, so every checkpoint holds
//      the input position.)
//   4. train_op and loss run until a stop request or end of input; the final loss is logged.
// With RunConfig::train_distribute (data-parallel over MPI, distribution.h), each replica
// takes its rows of every global batch, only the chief runs the chief-only hooks
// (CheckpointSaver, SummarySaver, StepCounter, LoggingTensor, training_chief_hooks), and
// the distribution's hooks run first (broadcast of the chief's state, right after the
// dataset initializer) and last (stop agreement). Train's Dataset is iterated as
// data::ShardGlobalBatches (data/global_batches.h): the ranks' shards, or in one process
// the one shard of one, so the input position in a checkpoint is global and resumes on
// any number of ranks; Train's steps and max_steps must be the same on every replica
// (FailedPrecondition naming both otherwise), and Train returns on every replica only
// after the chief's last checkpoint save.
// Evaluate and Predict are not collective: on every replica they run the whole input over
// the newest checkpoint of that replica's model_dir; a non-chief returns its metrics
// without writing model_dir/eval.
// Evaluate and Predict restore a checkpoint (the newest in model_dir unless given; none is
// FailedPrecondition), never the input position. Unlike TF1, when the call has no hooks
// and input_fn returns a Dataset, the graph and session are cached per mode and reused:
// a call with a Dataset of the same spec only resets the iterator and the metrics, and a
// newer checkpoint is restored into the cached session instead of rebuilding it.
// Thread-safety: an Estimator is used from one thread at a time.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/estimator/estimator_spec.h"
#include "loom/estimator/input_fn.h"
#include "loom/estimator/mode.h"
#include "loom/estimator/prediction_range.h"
#include "loom/estimator/run_config.h"
#include "loom/estimator/saved_model.h"
#include "loom/estimator/warm_start.h"
#include "loom/train/basic_hooks.h"

namespace loom {

// The hook types under loom::, as tf.estimator re-exports them (tf.estimator.SessionRunHook).
using train::CheckpointSaverListener;
using train::HookList;
using train::SessionRunArgs;
using train::SessionRunContext;
using train::SessionRunHook;
using train::SessionRunValues;

using ModelFn =
    std::function<EstimatorSpec(Scope& scope, const Features& features, Output labels, Mode mode,
                                const Params& params, const RunConfig& config)>;
// The short form without params and config.
using SimpleModelFn =
    std::function<EstimatorSpec(Scope& scope, const Features& features, Output labels, Mode mode)>;

struct TrainOptions {
  HookList hooks;
  // Train this many steps beyond the current global step... Default: unset.
  std::optional<int64_t> steps;
  // ...or until the global step reaches this (at most one of the two; neither trains
  // until input_fn's data ends). Default: unset.
  std::optional<int64_t> max_steps;
  // Called around every checkpoint (before/after save, at the end).
  std::vector<std::shared_ptr<CheckpointSaverListener>> saving_listeners;
  // Start input_fn's dataset from its beginning instead of the input position saved in
  // the checkpoint. Needed to resume with another pipeline (batch size, shuffle buffer,
  // files, ...): restoring a position into it is an error naming the checkpoint and what
  // changed. Default: false.
  bool restart_input = false;
};

struct TrainResult {
  // The loss of the last step run; unset when no step ran.
  std::optional<double> final_loss;
  // The global step at the end (that of the checkpoint when training was skipped).
  int64_t global_step = 0;
  // Steps run by this call.
  int64_t steps_run = 0;
  // The signal (SIGTERM, SIGINT, SIGUSR1) that stopped training early, 0 when none. The
  // step in flight finished and every hook's End ran (the final checkpoint is written).
  int stop_signal = 0;
};

struct EvaluateOptions {
  // Evaluate this many batches. Default: unset, until input_fn's data ends.
  std::optional<int64_t> steps;
  HookList hooks;
  // Evaluate this checkpoint. Default: "", the newest in model_dir.
  std::string checkpoint_path;
  // Results go to model_dir/eval_<name> ("eval" when empty). Default: "".
  std::string name;
};

struct PredictOptions {
  // Only these predictions. Default: empty, all.
  std::vector<std::string> predict_keys;
  HookList hooks;
  // Default: "", the newest checkpoint in model_dir.
  std::string checkpoint_path;
  // Yield one example at a time (each tensor without the batch dim) instead of batches.
  // Default: true.
  bool yield_single_examples = true;
};

struct ExportOptions {
  // Default: "", the newest checkpoint in model_dir.
  std::string checkpoint_path;
};

class Estimator {
 public:
  Estimator(ModelFn model_fn, RunConfig config = {}, Params params = {},
            std::optional<WarmStartSettings> warm_start_from = std::nullopt);
  Estimator(SimpleModelFn model_fn, RunConfig config = {}, Params params = {},
            std::optional<WarmStartSettings> warm_start_from = std::nullopt);
  ~Estimator();
  Estimator(const Estimator&) = delete;
  Estimator& operator=(const Estimator&) = delete;

  // See the header comment. Throws InvalidArgument for steps and max_steps together or
  // either <= 0, FailedPrecondition when model_dir holds TensorFlow checkpoints and no
  // Loom one (TF's state file is never rewritten; warm-start from it instead), and
  // whatever the model function, input or hooks throw.
  TrainResult Train(const InputFn& input_fn, TrainOptions options = {});

  // The eval_metric_ops' values plus "loss" (mean over batches) and "global_step" (the
  // checkpoint's), also written as scalar summaries at that step to model_dir/eval[_name].
  // Throws FailedPrecondition when there is no checkpoint, InvalidArgument when a metric
  // is named "loss" or steps <= 0.
  std::map<std::string, double> Evaluate(const InputFn& input_fn, EvaluateOptions options = {});

  // A lazy range of predictions (see PredictionRange), like TF's predict generator:
  // nothing runs in this call (no input_fn, model_fn, session, checkpoint lookup, hook
  // Begin / AfterCreateSession) until the first element is requested; then the graph runs
  // batch by batch as the range is iterated. The first request throws FailedPrecondition
  // when there is no checkpoint, InvalidArgument for an unknown predict key.
  // REQUIRES: the Estimator outlives the first request (once iteration has started the
  // range owns what it runs); a range first used after its Estimator is gone throws
  // FailedPrecondition.
  PredictionRange Predict(const InputFn& input_fn, PredictOptions options = {});

  // Writes export_dir_base/<unix seconds>/ (saved_model.h) from the model in mode
  // kPredict fed by serving_input_fn, with the variables of the checkpoint. Returns the
  // directory. Throws FailedPrecondition when there is no checkpoint.
  std::string ExportSavedModel(const std::string& export_dir_base,
                               const ServingInputReceiverFn& serving_input_fn,
                               const ExportOptions& options = {});

  const std::string& model_dir() const { return config_.model_dir; }
  const RunConfig& config() const { return config_; }
  const Params& params() const { return params_; }
  // The newest valid checkpoint in model_dir (path without extension).
  std::optional<std::string> LatestCheckpoint() const;
  // Variable names and values of the newest checkpoint (TF's get_variable_names/value).
  // When model_dir holds no Loom checkpoint, its newest TF checkpoint (tf_checkpoints.h)
  // answers: every tensor it holds, by TF's names.
  std::vector<std::string> GetVariableNames() const;
  Tensor GetVariableValue(const std::string& name) const;
  // How many times the model function has been called (each builds a graph).
  int64_t model_fn_calls() const { return model_fn_calls_; }

 private:
  struct Caches;
  friend struct EstimatorInternals;

  Env* env() const { return config_.env; }
  // What Predict defers to the first request: the source of the range's batches.
  std::unique_ptr<PredictionSource> StartPredict(const InputFn& input_fn,
                                                 const PredictOptions& options);
  ModelFn model_fn_;
  RunConfig config_;
  Params params_;
  std::optional<WarmStartSettings> warm_start_;
  int64_t model_fn_calls_ = 0;
  // The per-mode graph caches and eval FileWriters. Shared only so that a lazy
  // PredictionRange can tell (through a weak_ptr) whether the Estimator still exists.
  std::shared_ptr<Caches> caches_;
};

}  // namespace loom

#endif  // LOOM_ESTIMATOR_ESTIMATOR_H_
