// MonitoredTrainingSession: the default hooks, in TF's order, around a MonitoredSession.
#include "loom/train/basic_hooks.h"
#include "loom/train/monitored_session.h"

namespace loom::train {

std::unique_ptr<MonitoredSession> MonitoredTrainingSession(Graph& graph,
                                                           MonitoredTrainingSessionOptions o) {
  Env* env = o.env != nullptr ? o.env : Env::Default();
  // TF's USE_DEFAULT: neither given means every 100 steps / every 600 seconds.
  if (!o.save_summaries_steps && !o.save_summaries_secs) o.save_summaries_steps = 100;
  if (!o.save_checkpoint_steps && !o.save_checkpoint_secs) o.save_checkpoint_secs = 600;
  auto positive = [](const auto& v) { return v.has_value() && *v > 0; };
  auto only_positive = [](auto v) { return v.has_value() && *v > 0 ? v : decltype(v)(); };
  auto scaffold = o.scaffold ? o.scaffold : std::make_shared<Scaffold>();
  if (scaffold->saver_options.env == nullptr) scaffold->saver_options.env = env;

  HookList hooks;
  if (o.is_chief) {
    hooks.insert(hooks.end(), o.chief_only_hooks.begin(), o.chief_only_hooks.end());
    const std::string summary_dir = o.summary_dir.empty() ? o.checkpoint_dir : o.summary_dir;
    std::shared_ptr<FileWriter> writer;
    if (!summary_dir.empty()) {
      writer = SharedFileWriter(summary_dir, env);
      if (o.log_step_count_steps > 0) {
        hooks.push_back(std::make_shared<StepCounterHook>(StepCounterOptions{
            .every_n_steps = o.log_step_count_steps, .summary_writer = writer, .env = env}));
      }
      if (positive(o.save_summaries_steps) || positive(o.save_summaries_secs)) {
        auto steps = only_positive(o.save_summaries_steps);
        hooks.push_back(std::make_shared<SummarySaverHook>(SummarySaverOptions{
            .save_steps = steps,
            .save_secs = steps ? std::nullopt : only_positive(o.save_summaries_secs),
            .summary_writer = writer,
            .scaffold = scaffold,
            .env = env}));
      }
    }
    if (!o.checkpoint_dir.empty() &&
        (positive(o.save_checkpoint_steps) || positive(o.save_checkpoint_secs))) {
      auto steps = only_positive(o.save_checkpoint_steps);
      hooks.push_back(std::make_shared<CheckpointSaverHook>(
          o.checkpoint_dir,
          CheckpointSaverOptions{
              .save_secs = steps ? std::nullopt : only_positive(o.save_checkpoint_secs),
              .save_steps = steps,
              .scaffold = scaffold,
              .summary_writer = summary_dir == o.checkpoint_dir ? writer : nullptr,
              .save_graph_def = o.save_graph_def,
              .env = env}));
    }
  }
  hooks.insert(hooks.end(), o.hooks.begin(), o.hooks.end());
  auto creator = NewSessionCreator(
      graph, {.scaffold = scaffold,
              .checkpoint_dir = o.checkpoint_dir,
              .start_over_if_checkpoints_corrupt = o.start_over_if_checkpoints_corrupt,
              .session_options = o.session_options});
  return std::make_unique<MonitoredSession>(
      std::move(creator), std::move(hooks),
      MonitoredSessionOptions{.should_recover = o.should_recover});
}

}  // namespace loom::train
