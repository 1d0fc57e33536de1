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

}  // namespace loom
