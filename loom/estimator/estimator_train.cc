// Estimator::Train (TF's _train_model_default / _train_with_estimator_spec).
#include "loom/base/logging.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/estimator/tf_checkpoints.h"
#include "loom/estimator/warm_start.h"
#include "loom/graph/collections.h"
#include "loom/train/monitored_session.h"
#include "loom/train/saver.h"
#include "loom/train/stop_signals.h"
#include "loom/train/summary.h"

namespace loom {
namespace {

// A failed training step names the step it was (e.g. an optimizer's "NaN or Inf in the
// update of variable ..."): the step that would have made the global step `current + 1`.
Error WithTrainingStep(const Error& e, Session& session, const Output& global_step) {
  try {
    const int64_t current = train::StepValue(session.Eval(global_step));
    return Error(e.code(), StrCat(e.message(), " (at step ", current + 1,
                                  ", the training step after global step ", current, ")"));
  } catch (const Error&) {
    return e;
  }
}

}  // namespace

train::HookList EstimatorInternals::TrainingHooks(
    const Estimator& est, const ModelGraph& model, const TrainOptions& options,
    const std::shared_ptr<train::Scaffold>& scaffold,
    std::shared_ptr<train::FileWriter>* shared_writer) {
  const RunConfig& config = est.config_;
  Env* env = est.env();
  const EstimatorSpec& spec = model.spec;
  train::HookList hooks;
  if (model.dataset) {
    hooks.push_back(std::make_shared<DatasetInitializerHook>(
        *model.dataset, model.iterator_resource, options.restart_input));
  }
  const TrainDistribution* distribution = config.train_distribute.get();
  if (distribution != nullptr) {
    train::HookList first = distribution->StartHooks(
        distribution->shards_rows() ? model.iterator_resource : std::string());
    hooks.insert(hooks.end(), first.begin(), first.end());
  }
  hooks.insert(hooks.end(), options.hooks.begin(), options.hooks.end());
  if (options.steps) {
    hooks.push_back(std::make_shared<train::StopAtStepHook>(
        train::StopAtStepOptions{.num_steps = options.steps}));
  } else if (options.max_steps) {
    hooks.push_back(std::make_shared<train::StopAtStepHook>(
        train::StopAtStepOptions{.last_step = options.max_steps}));
  }
  hooks.push_back(std::make_shared<train::NanTensorHook>(spec.loss));
  if (config.log_step_count_steps > 0 && config.is_chief()) {
    hooks.push_back(std::make_shared<train::LoggingTensorHook>(
        std::vector<std::pair<std::string, Output>>{{"loss", spec.loss},
                                                    {"step", model.global_step}},
        train::LoggingTensorOptions{.every_n_iter = config.log_step_count_steps, .env = env}));
  }
  hooks.insert(hooks.end(), spec.training_hooks.begin(), spec.training_hooks.end());
  auto replica_hooks = [&] {
    if (distribution == nullptr) return;
    train::HookList last = distribution->EndHooks();
    hooks.insert(hooks.end(), last.begin(), last.end());
  };
  if (!config.is_chief()) {
    // Chief-only work: checkpoints, summaries, step counts, logs (no two processes write
    // the same file).
    replica_hooks();
    return hooks;
  }

  // One FileWriter for model_dir, shared with every hook that writes there (TF's cache).
  std::shared_ptr<train::FileWriter> writer;
  auto model_dir_writer = [&] {
    if (!writer) writer = train::SharedFileWriter(est.model_dir(), env);
    return writer;
  };
  bool user_saver = false;
  for (const auto* list : {&options.hooks, &spec.training_hooks, &spec.training_chief_hooks}) {
    for (const auto& hook : *list) {
      user_saver = user_saver || dynamic_cast<train::CheckpointSaverHook*>(hook.get()) != nullptr;
    }
  }
  const CheckpointSchedule schedule = EffectiveCheckpointSchedule(config);
  if (!options.saving_listeners.empty() && (user_saver || !schedule.enabled())) {
    throw InvalidArgument(
        "Train: saving_listeners need the Estimator's CheckpointSaverHook: ",
        user_saver ? "a hook passed in is a CheckpointSaverHook already; give it the listeners"
                   : "set RunConfig::save_checkpoints_steps or save_checkpoints_secs");
  }
  if (schedule.enabled() && !user_saver) {
    hooks.push_back(std::make_shared<train::CheckpointSaverHook>(
        est.model_dir(), train::CheckpointSaverOptions{.save_secs = schedule.secs,
                                                       .save_steps = schedule.steps,
                                                       .scaffold = scaffold,
                                                       .listeners = options.saving_listeners,
                                                       .summary_writer = model_dir_writer(),
                                                       .env = env}));
  }
  hooks.insert(hooks.end(), spec.training_chief_hooks.begin(), spec.training_chief_hooks.end());
  if (config.log_step_count_steps > 0) {
    hooks.push_back(std::make_shared<train::StepCounterHook>(
        train::StepCounterOptions{.every_n_steps = config.log_step_count_steps,
                                  .summary_writer = model_dir_writer(),
                                  .env = env}));
  }
  if (config.save_summary_steps > 0) {
    hooks.push_back(std::make_shared<train::SummarySaverHook>(
        train::SummarySaverOptions{.save_steps = config.save_summary_steps,
                                   .summary_writer = model_dir_writer(),
                                   .scaffold = scaffold,
                                   .env = env}));
  }
  replica_hooks();
  *shared_writer = writer;
  return hooks;
}

TrainResult Estimator::Train(const InputFn& input_fn, TrainOptions options) {
  if (options.steps && options.max_steps) {
    throw InvalidArgument("Train: steps (", *options.steps, ") and max_steps (", *options.max_steps,
                          ") cannot both be given: steps counts from the current global step, "
                          "max_steps is absolute");
  }
  if (options.steps && *options.steps <= 0) {
    throw InvalidArgument("Train: steps must be > 0, given ", *options.steps);
  }
  if (options.max_steps && *options.max_steps <= 0) {
    throw InvalidArgument("Train: max_steps must be > 0, given ", *options.max_steps);
  }
  for (const auto& hook : options.hooks) {
    if (hook == nullptr) throw InvalidArgument("Train: a null hook in options.hooks");
  }
  const ModelDirLock lock(*this);
  // Loom rewrites the `checkpoint` state file on every save, which would drop TF's entries.
  // (Silent: the session creator's restore warns about invalid checkpoints, once.)
  if (!train::ScanCheckpoints(env(), model_dir()).latest) {
    if (std::optional<std::string> tf = LatestTfCheckpoint(env(), model_dir())) {
      throw FailedPrecondition(
          "Train: model_dir '", model_dir(), "' holds TensorFlow checkpoints (newest ", *tf,
          ") and no Loom checkpoint; training there would rewrite TF's `checkpoint` file. "
          "Train in a new model_dir with WarmStartSettings{.ckpt_to_initialize_from = \"",
          model_dir(), "\"}");
    }
  }
  TrainResult result;
  const TrainDistribution* distribution = config_.train_distribute.get();
  if (distribution != nullptr) {
    // A replica that skipped training (max_steps reached) or stopped alone would leave
    // the others waiting in their next collective: the stop arguments must agree.
    distribution->CheckSameOnEveryReplica("Train's steps and max_steps",
                                          options.steps ? StrCat("steps=", *options.steps)
                                          : options.max_steps
                                              ? StrCat("max_steps=", *options.max_steps)
                                              : std::string("neither (until the input ends)"));
  }
  if (options.max_steps) {
    // Distributed: the chief's checkpoint decides for every replica (model_dir need not
    // be shared storage).
    int64_t step = -1;
    std::optional<std::string> ckpt;
    if (config_.is_chief()) {
      // Silent: the session creator's restore warns about invalid checkpoints, once.
      ckpt = train::ScanCheckpoints(env(), model_dir()).latest;
      if (ckpt) step = CheckpointGlobalStep(env(), *ckpt);
    }
    if (distribution != nullptr) step = distribution->BroadcastFromChief(step);
    if (step >= 0) {
      if (step >= *options.max_steps) {
        LOOM_LOG(INFO) << "Skipping training since max_steps has already saved: the checkpoint "
                       << ckpt.value_or("of the chief") << " is at global step " << step
                       << " >= max_steps " << *options.max_steps << "; nothing to do";
        result.global_step = step;
        return result;
      }
    }
  }

  ModelGraph model = EstimatorInternals::BuildModelGraph(*this, input_fn, Mode::kTrain);
  if (distribution != nullptr) {
    distribution->CheckTrainGraph(*model.graph, model.dataset ? &*model.dataset : nullptr);
  }
  Scope root(*model.graph);
  train::ScalarSummary(root, "loss", model.spec.loss);
  model.graph->collections().Add(GraphKeys::kLoss, model.spec.loss);
  auto scaffold = model.spec.scaffold ? model.spec.scaffold : std::make_shared<train::Scaffold>();
  if (!scaffold->saver) {
    scaffold->saver_options.max_to_keep = config_.keep_checkpoint_max;
    scaffold->saver_options.keep_checkpoint_every_n_hours = config_.keep_checkpoint_every_n_hours;
    if (scaffold->saver_options.env == nullptr) scaffold->saver_options.env = env();
  }
  if (warm_start_) {
    // Only when nothing is restored: a checkpoint in model_dir wins, as in TF.
    scaffold->init_fn = [previous = scaffold->init_fn, settings = *warm_start_,
                         env = env()](Session& session) {
      if (previous) previous(session);
      WarmStart(session, settings, env);
    };
  }
  std::shared_ptr<train::FileWriter> writer;
  train::HookList hooks =
      EstimatorInternals::TrainingHooks(*this, model, options, scaffold, &writer);
  const train::ScopedStopSignals stop_signals;
  hooks.insert(hooks.begin(), stop_signals.NewHook());

  double last_loss = 0;
  {
    train::MonitoredSession session(
        train::NewSessionCreator(*model.graph, {.scaffold = scaffold,
                                                .checkpoint_dir = config_.model_dir,
                                                .start_over_if_checkpoints_corrupt =
                                                    config_.start_over_if_checkpoints_corrupt,
                                                .session_options = config_.session_config}),
        hooks, {.should_recover = distribution == nullptr});
    while (!session.ShouldStop()) {
      std::vector<Tensor> values;
      try {
        values = session.Run({}, {model.spec.loss}, {model.spec.train_op});
      } catch (const Error& e) {
        throw WithTrainingStep(e, session.raw_session(), model.global_step);
      }
      if (values.empty()) break;  // end of input
      last_loss = ScalarToDouble(values[0]);
      ++result.steps_run;
    }
    result.global_step = train::StepValue(session.raw_session().Eval(model.global_step));
    session.Close();
  }
  // The chief saved its last checkpoint in Close: no replica returns before it exists, so
  // an Evaluate, Predict or export that follows on any replica reads that checkpoint.
  if (distribution != nullptr) distribution->Barrier();
  // The hooks' End flushed the event file; its close (a last sync) fails only rarely
  // (NFS reports write errors there), and then it is Train's error, not a log line of the
  // writer's destructor. A writer that a caller's hook still holds is theirs to close.
  hooks.clear();
  if (writer != nullptr && writer.use_count() == 1) writer->Close();
  result.stop_signal = stop_signals.received();
  if (result.stop_signal != 0) {
    LOOM_LOG(WARNING) << "Training stopped by " << train::StopSignalName(result.stop_signal)
                      << " at global step " << result.global_step;
  }
  if (result.steps_run == 0) {
    LOOM_LOG(WARNING) << "Training with estimator made no steps. Perhaps input is empty or "
                      << "misspecified.";
  } else {
    result.final_loss = last_loss;
    LOOM_LOG(INFO) << "Loss for final step: " << last_loss << " (global step " << result.global_step
                   << ").";
  }
  return result;
}

}  // namespace loom
