#ifndef LOOM_ESTIMATOR_RUN_CONFIG_H_
#define LOOM_ESTIMATOR_RUN_CONFIG_H_

// RunConfig: TF1's tf.estimator.RunConfig, how an Estimator runs — where it keeps
// checkpoints and summaries, how often it writes them, the graph seed and the Session's
// options. A value type with TF's defaults; Estimator validates it at construction.
//
//   loom::Estimator estimator(ModelFn, {.model_dir = "runs/1", .tf_random_seed = 42,
//                                       .save_checkpoints_steps = 500});
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "loom/base/env.h"
#include "loom/estimator/distribution.h"
#include "loom/graph/precision.h"
#include "loom/runtime/session.h"

namespace loom {

struct RunConfig {
  // Checkpoints, event files and eval/ directories go here. Default: "", a new temporary
  // directory (with a warning), as in TF.
  std::string model_dir;
  // The graph-level seed of every graph the Estimator builds (Graph::seed). Default: unset,
  // random ops without a seed of their own are nondeterministic.
  std::optional<int64_t> tf_random_seed;
  // Write the merged summaries (the "loss" scalar and any the model adds) every N steps;
  // <= 0 disables. Default: 100.
  int64_t save_summary_steps = 100;
  // Checkpoint every N steps or every N seconds: at most one may be set. When neither is
  // set, every 600 seconds (TF's default). A value <= 0 disables checkpoints.
  std::optional<int64_t> save_checkpoints_steps;
  std::optional<double> save_checkpoints_secs;
  // Checkpoints kept; older ones are deleted. 0 keeps all. Default: 5.
  int keep_checkpoint_max = 5;
  // Additionally keep one checkpoint per this many hours. Default: 10000 (never).
  double keep_checkpoint_every_n_hours = 10000;
  // Log "loss = ..., step = ..." and write global_step/sec every N steps; <= 0 disables.
  // Default: 100.
  int64_t log_step_count_steps = 100;
  // Train when model_dir has checkpoints but none loads (all corrupt, or the state file
  // names files that are gone): false throws DataLoss naming them; true starts over from
  // step 0, keeping the invalid files (never pruned; one about to be overwritten is
  // renamed to "<file>.invalid"). Not in TF, which silently starts over. Default: false.
  bool start_over_if_checkpoints_corrupt = false;
  // The precision policy of the model's matrix products (loom/graph/precision.h, Keras's
  // mixed_bfloat16). The model function receives it (its `config`) and passes it to its
  // layers (DenseOptions::precision, ...): the canned estimators put every Dense layer of
  // their DNN part under it, in every graph they build (training, evaluation, prediction,
  // export). Variables, optimizer slots and the loss stay float32. Not in TF.
  // Default: kFloat32.
  Precision precision = Precision::kFloat32;
  // Options of every Session the Estimator creates (TF's session_config).
  SessionOptions session_config;
  // The file system for checkpoints, summaries and exports. Default: nullptr,
  // Env::Default().
  Env* env = nullptr;
  // Data-parallel training (TF's train_distribute; distribution.h): set by
  // distribute::DataParallelRunConfig for an `mpirun` launch. Default: nullptr, one
  // process.
  std::shared_ptr<TrainDistribution> train_distribute;

  // TF's RunConfig properties: the chief is replica 0 (always, in one process), and
  // num_worker_replicas counts the replicas.
  bool is_chief() const { return train_distribute == nullptr || train_distribute->is_chief(); }
  int num_worker_replicas() const {
    return train_distribute == nullptr ? 1 : train_distribute->num_replicas();
  }
  int task_id() const { return train_distribute == nullptr ? 0 : train_distribute->replica_id(); }
  // For an input_fn that shards its own input (see distribution.h).
  InputContext input_context() const {
    return train_distribute == nullptr ? InputContext{} : train_distribute->input_context();
  }
};

// `optimizer`, made to average across replicas when config trains distributed: what a
// model function calls on the optimizer it builds (canned estimators do).
std::unique_ptr<train::Optimizer> DistributeOptimizer(const RunConfig& config,
                                                      std::unique_ptr<train::Optimizer> optimizer);

// Throws InvalidArgument naming the fields when both save_checkpoints_steps and
// save_checkpoints_secs are set, or keep_checkpoint_max / keep_checkpoint_every_n_hours
// is negative.
void ValidateRunConfig(const RunConfig& config);

// The checkpoint schedule after TF's defaulting: exactly one of the two is set when
// checkpoints are enabled, neither when disabled.
struct CheckpointSchedule {
  std::optional<int64_t> steps;
  std::optional<double> secs;
  bool enabled() const { return steps.has_value() || secs.has_value(); }
};
CheckpointSchedule EffectiveCheckpointSchedule(const RunConfig& config);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_RUN_CONFIG_H_
