#include "loom/estimator/warm_start.h"

#include <regex>

#include "loom/base/logging.h"
#include "loom/estimator/tf_checkpoints.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/train/saver.h"

namespace loom {

std::vector<std::string> WarmStartVariables(const Graph& graph, const WarmStartSettings& settings) {
  std::regex pattern;
  try {
    pattern = std::regex(settings.vars_to_warm_start);
  } catch (const std::regex_error& e) {
    throw InvalidArgument("WarmStartSettings: vars_to_warm_start '", settings.vars_to_warm_start,
                          "' is not a valid regular expression: ", e.what());
  }
  std::vector<std::string> names;
  for (Node* var : graph.Variables()) {
    if (var->attrs().GetOr<bool>("local", false)) continue;
    if (!settings.include_non_trainable && !var->attrs().GetOr<bool>("trainable", false)) continue;
    if (std::regex_search(var->name(), pattern, std::regex_constants::match_continuous)) {
      names.push_back(var->name());
    }
  }
  for (const auto& [name, prev] : settings.var_name_to_prev_var_name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw InvalidArgument("WarmStartSettings: var_name_to_prev_var_name names '", name,
                            "', which is not among the variables to warm-start");
    }
  }
  return names;
}

void WarmStart(Session& session, const WarmStartSettings& settings, Env* env) {
  if (env == nullptr) env = Env::Default();
  if (settings.ckpt_to_initialize_from.empty()) {
    throw InvalidArgument("WarmStartSettings: ckpt_to_initialize_from is required");
  }
  std::string path = settings.ckpt_to_initialize_from;
  // A Loom checkpoint first; a checkpoint written by TensorFlow otherwise.
  bool tf = false;
  if (env->IsDirectory(path)) {
    std::optional<std::string> latest = train::LatestValidCheckpoint(env, path);
    if (!latest && (latest = LatestTfCheckpoint(env, path))) tf = true;
    if (!latest) {
      throw NotFound("warm start: no checkpoint in '", path,
                     "' (WarmStartSettings::ckpt_to_initialize_from)");
    }
    path = *latest;
  } else if (!env->FileExists(train::CheckpointFilePath(path))) {
    if (!IsTfCheckpoint(env, path)) {
      throw NotFound("warm start: checkpoint '", path,
                     "' does not exist: neither a Loom checkpoint (",
                     train::CheckpointFilePath(path), ") nor a TF one (",
                     TfCheckpointIndexPath(TfCheckpointPrefix(path)),
                     ") (WarmStartSettings::ckpt_to_initialize_from)");
    }
    tf = true;
    path = TfCheckpointPrefix(path);
  }
  const Graph& graph = session.graph();
  std::vector<std::string> names = WarmStartVariables(graph, settings);
  if (names.empty()) {
    LOOM_LOG(WARNING) << "warm start: no variable matches '" << settings.vars_to_warm_start << "'";
    return;
  }
  try {
    if (tf) {
      RestoreFromTfCheckpoint(session, path, names, settings.var_name_to_prev_var_name, env);
    } else {
      train::Saver saver(
          graph,
          {.var_list = names, .save_iterators = false, .save_random_streams = false, .env = env});
      saver.Restore(session, path,
                    {.variables = names,
                     .name_map = settings.var_name_to_prev_var_name,
                     .restore_iterators = false,
                     .restore_random_streams = false});
    }
  } catch (const Error& e) {
    // TF's init_from_checkpoint fails the same way; say which setting selected the variable.
    Error named = WithContext(e, "warm start from '", settings.ckpt_to_initialize_from,
                              "' (WarmStartSettings::ckpt_to_initialize_from)");
    if (e.code() != ErrorCode::kNotFound) throw named;
    throw Error(
        e.code(),
        StrCat(named.message(), ". vars_to_warm_start '", settings.vars_to_warm_start, "' selects ",
               names.size(), " variable(s): narrow it to leave out those the checkpoint lacks"));
  }
  for (const std::string& name : names) {
    auto it = settings.var_name_to_prev_var_name.find(name);
    LOOM_LOG(INFO) << "Warm-started variable " << name << " from "
                   << (it == settings.var_name_to_prev_var_name.end() ? name : it->second) << " in "
                   << path;
  }
}

}  // namespace loom
