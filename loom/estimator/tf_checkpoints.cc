#include "loom/estimator/tf_checkpoints.h"

#include <algorithm>
#include <charconv>
#include <mutex>

#include "loom/base/logging.h"
#include "loom/graph/op_def.h"
#include "loom/graph/resource.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

// The step after the last '-' of a prefix ("model.ckpt-999" -> 999), -1 without one.
int64_t StepOfPrefix(std::string_view prefix) {
  const size_t dash = prefix.rfind('-');
  if (dash == std::string_view::npos) return -1;
  int64_t step = -1;
  auto [ptr, ec] = std::from_chars(prefix.data() + dash + 1, prefix.data() + prefix.size(), step);
  return ec == std::errc() && ptr == prefix.data() + prefix.size() ? step : -1;
}

}  // namespace

std::optional<std::string> LatestTfCheckpoint(Env* env, const std::string& dir) {
  if (!env->IsDirectory(dir)) return std::nullopt;
  try {
    if (auto state = train::ReadCheckpointState(env, dir)) {
      std::vector<std::string> candidates = {state->model_checkpoint_path};
      candidates.insert(candidates.end(), state->all_model_checkpoint_paths.rbegin(),
                        state->all_model_checkpoint_paths.rend());
      for (const std::string& c : candidates) {
        if (!c.empty() && IsTfCheckpoint(env, c)) return c;
      }
    }
  } catch (const Error& e) {
    LOOM_LOG(WARNING) << "ignoring the checkpoint state file in '" << dir << "': " << e.what();
  }
  std::optional<std::string> best;
  int64_t best_step = -1;
  for (const std::string& name : env->GetChildren(dir)) {
    if (!name.ends_with(".index")) continue;
    const std::string prefix = JoinPath(dir, name.substr(0, name.size() - 6));
    const int64_t step = StepOfPrefix(prefix);
    if (step > best_step) {
      best_step = step;
      best = prefix;
    }
  }
  return best;
}

void RestoreFromTfCheckpoint(Session& session, const std::string& prefix,
                             const std::vector<std::string>& names,
                             const std::map<std::string, std::string>& name_map, Env* env) {
  auto reader = TfCheckpointReader::Open(env, prefix);
  const Graph& graph = session.graph();
  for (const std::string& name : names) {
    auto mapped = name_map.find(name);
    const std::string& key = mapped == name_map.end() ? name : mapped->second;
    if (!reader->Contains(key)) {
      throw NotFound("TF checkpoint '", reader->prefix(), "' has no tensor '", key,
                     "' for variable '", name,
                     "'; map it with WarmStartSettings::var_name_to_prev_var_name (the "
                     "checkpoint's names are listed by Estimator::GetVariableNames or "
                     "loom::TfCheckpointReader::names)");
    }
    Node* node = graph.FindNode(name);
    if (node == nullptr || node->op_def().role != OpRole::kVariable) {
      throw NotFound("restoring from TF checkpoint '", reader->prefix(), "': no variable named '",
                     name, "' in the graph");
    }
    const TfCheckpointEntry& entry = reader->Entry(key);
    if (entry.dtype != node->output_dtype(0) ||
        !entry.shape.IsCompatibleWith(node->output_shape(0))) {
      throw InvalidArgument("restoring from TF checkpoint '", reader->prefix(), "': tensor '", key,
                            "' is ",
                            entry.dtype == DType::kInvalid ? StrCat("TF dtype ", entry.tf_dtype)
                                                           : std::string(DTypeName(entry.dtype)),
                            entry.shape, " but variable '", name, "' is ",
                            DTypeName(node->output_dtype(0)), node->output_shape(0));
    }
    Tensor value = reader->Get(key);
    session.resources().LookupOrCreate<VariableResource>(name)->Write(std::move(value));
  }
}

}  // namespace loom
