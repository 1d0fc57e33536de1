#include "loom/estimator/run_config.h"

#include "loom/base/error.h"

namespace loom {

void ValidateRunConfig(const RunConfig& config) {
  if (config.save_checkpoints_steps && config.save_checkpoints_secs) {
    throw InvalidArgument("RunConfig: save_checkpoints_steps (", *config.save_checkpoints_steps,
                          ") and save_checkpoints_secs (", *config.save_checkpoints_secs,
                          ") are mutually exclusive; set at most one");
  }
  if (config.keep_checkpoint_max < 0) {
    throw InvalidArgument("RunConfig: keep_checkpoint_max must be >= 0 (0 keeps all), got ",
                          config.keep_checkpoint_max);
  }
  if (config.keep_checkpoint_every_n_hours <= 0) {
    throw InvalidArgument("RunConfig: keep_checkpoint_every_n_hours must be > 0, got ",
                          config.keep_checkpoint_every_n_hours);
  }
}

CheckpointSchedule EffectiveCheckpointSchedule(const RunConfig& config) {
  CheckpointSchedule schedule;
  if (config.save_checkpoints_steps) {
    if (*config.save_checkpoints_steps > 0) schedule.steps = config.save_checkpoints_steps;
  } else if (config.save_checkpoints_secs) {
    if (*config.save_checkpoints_secs > 0) schedule.secs = config.save_checkpoints_secs;
  } else {
    schedule.secs = 600;
  }
  return schedule;
}

std::unique_ptr<train::Optimizer> DistributeOptimizer(const RunConfig& config,
                                                      std::unique_ptr<train::Optimizer> optimizer) {
  if (config.train_distribute == nullptr) return optimizer;
  return config.train_distribute->WrapOptimizer(std::move(optimizer));
}

int64_t InputContext::GetPerReplicaBatchSize(int64_t global_batch_size) const {
  if (num_replicas_in_sync <= 0 || global_batch_size % num_replicas_in_sync != 0) {
    throw InvalidArgument("the global batch size ", global_batch_size, " is not divisible by ",
                          "the ", num_replicas_in_sync, " replicas in sync; make it a multiple");
  }
  return global_batch_size / num_replicas_in_sync;
}

}  // namespace loom
