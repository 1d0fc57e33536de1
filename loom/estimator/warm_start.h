#ifndef LOOM_ESTIMATOR_WARM_START_H_
#define LOOM_ESTIMATOR_WARM_START_H_

// Warm start: initialize some variables of a new model from another model's checkpoint,
// TF1's tf.estimator.WarmStartSettings. The Estimator applies it in Train when model_dir
// has no checkpoint yet (after the initializers, before the first step); once a
// checkpoint exists, training resumes from it instead, as in TF.
//
//   loom::Estimator estimator(ModelFn, {.model_dir = "runs/2"}, {},
//       loom::WarmStartSettings{.ckpt_to_initialize_from = "runs/1",
//                               .vars_to_warm_start = "dense/.*",
//                               .var_name_to_prev_var_name = {{"dense/w", "old/w"}}});
#include <map>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/runtime/session.h"

namespace loom {

struct WarmStartSettings {
  // A checkpoint path (with or without ".safetensors") or a directory (its newest
  // checkpoint). A checkpoint written by TensorFlow works too: its prefix
  // ("tf_dir/model.ckpt-1000"), its .index file, or a directory holding TF checkpoints
  // only (the newest one its `checkpoint` file names). Required.
  std::string ckpt_to_initialize_from;
  // A regular expression matched at the start of variable names (TF's re.match).
  // Default: ".*", every candidate variable.
  std::string vars_to_warm_start = ".*";
  // Candidates are the trainable variables; true adds the other non-local variables
  // (optimizer slots, global step). Default: false, as TF with a regex.
  bool include_non_trainable = false;
  // New variable name -> its name in the checkpoint, for variables that were renamed.
  // Default: identity.
  std::map<std::string, std::string> var_name_to_prev_var_name;
};

// The variables of `graph` that `settings` selects, in graph order.
std::vector<std::string> WarmStartVariables(const Graph& graph, const WarmStartSettings& settings);

// Overwrites the selected variables in `session` with the checkpoint's values and logs
// each. Throws NotFound naming the checkpoint when it (or a selected variable in it) is
// missing, InvalidArgument for a shape or dtype mismatch, naming both names.
void WarmStart(Session& session, const WarmStartSettings& settings, Env* env = nullptr);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_WARM_START_H_
