#ifndef LOOM_ESTIMATOR_TF_CHECKPOINTS_H_
#define LOOM_ESTIMATOR_TF_CHECKPOINTS_H_

// Checkpoints written by TensorFlow (V2 tensor bundles, loom/io/tf_checkpoint.h) as a
// source of variable values for the Estimator: warm start from one (WarmStartSettings), and
// GetVariableNames / GetVariableValue on a model_dir that holds TF checkpoints only. Loom
// never writes this format; training in such a model_dir is the caller's decision.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/runtime/session.h"

namespace loom {

// The newest TF checkpoint in `dir` (its prefix), or nullopt when there is none: the
// state file's model_checkpoint_path, then its all_model_checkpoint_paths newest first,
// taking the first whose .index exists (TF's state file often lists checkpoints already
// deleted); without a usable state file, the "<name>-<step>.index" file of highest step.
std::optional<std::string> LatestTfCheckpoint(Env* env, const std::string& dir);

// Copies the variables `names` of the session's graph from the TF checkpoint `prefix`,
// each from the tensor name_map[name] (default: its own name). Throws NotFound naming the
// checkpoint and both names when the tensor is absent, InvalidArgument for a dtype or shape
// mismatch, and what TfCheckpointReader throws (DataLoss for damage).
void RestoreFromTfCheckpoint(Session& session, const std::string& prefix,
                             const std::vector<std::string>& names,
                             const std::map<std::string, std::string>& name_map, Env* env);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_TF_CHECKPOINTS_H_
