#include "loom/base/logging.h"
#include "loom/graph/graph_def.h"
#include "loom/io/event_file_proto.h"
#include "loom/train/basic_hooks.h"

namespace loom::train {

CheckpointSaverHook::CheckpointSaverHook(std::string checkpoint_dir, CheckpointSaverOptions options)
    : checkpoint_dir_(std::move(checkpoint_dir)),
      options_(std::move(options)),
      timer_({.every_secs = options_.save_secs,
              .every_steps = options_.save_steps,
              .env = options_.env}) {
  if (options_.saver && options_.scaffold) {
    throw InvalidArgument("CheckpointSaverHook: pass a saver or a scaffold, not both");
  }
  if (options_.env == nullptr) options_.env = Env::Default();
}

Saver& CheckpointSaverHook::saver() {
  if (options_.saver) return *options_.saver;
  LOOM_CHECK(options_.scaffold && options_.scaffold->saver)
      << "CheckpointSaverHook: the scaffold is not finalized";
  return *options_.scaffold->saver;
}

void CheckpointSaverHook::Begin(Graph& graph) {
  graph_ = &graph;
  global_step_ = RequireGlobalStep(graph, "CheckpointSaverHook");
  if (!options_.saver && !options_.scaffold) {
    options_.saver = std::make_shared<Saver>(graph, SaverOptions{.env = options_.env});
  }
  for (auto& listener : options_.listeners) listener->Begin();
}

void CheckpointSaverHook::AfterCreateSession(Session& session) {
  const int64_t step = StepValue(session.Eval(global_step_));
  if (options_.save_graph_def && !graph_written_) {
    // Structure only (large constants stripped): its size depends on the model, never
    // on the data.
    const std::string text = GraphToText(*graph_);
    options_.env->CreateDirs(checkpoint_dir_);
    WriteFileAtomically(options_.env, JoinPath(checkpoint_dir_, "graph.pbtxt"), text);
    if (options_.summary_writer) options_.summary_writer->AddGraph(*graph_, step);
    graph_written_ = true;
  }
  // The state at the start (also after a recovery), as TF does.
  Save(session, step);
  timer_.UpdateLastTriggeredStep(step);
}

SessionRunArgs CheckpointSaverHook::BeforeRun(SessionRunContext&) {
  return {.fetches = {global_step_}};
}

void CheckpointSaverHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t stale_step = StepValue(values.results[0]);
  if (!timer_.ShouldTriggerForStep(stale_step + 1)) return;
  // The fetched value may predate this step's increment; read the current one.
  const int64_t step = StepValue(context.session().Eval(global_step_));
  if (timer_.ShouldTriggerForStep(step)) {
    timer_.UpdateLastTriggeredStep(step);
    if (Save(context.session(), step)) context.RequestStop();
  }
}

void CheckpointSaverHook::End(Session& session) {
  const int64_t step = StepValue(session.Eval(global_step_));
  if (timer_.last_triggered_step() != step) Save(session, step);
  for (auto& listener : options_.listeners) listener->End(session, step);
  if (options_.summary_writer) options_.summary_writer->Flush();
}

bool CheckpointSaverHook::Save(Session& session, int64_t step) {
  const std::string prefix = JoinPath(checkpoint_dir_, options_.checkpoint_basename);
  LOOM_LOG(INFO) << "Saving checkpoints for " << step << " into " << prefix << ".";
  for (auto& listener : options_.listeners) listener->BeforeSave(session, step);
  const std::string path = saver().Save(session, prefix, step);
  if (options_.summary_writer) {
    proto::SessionLog log;
    log.set_status(proto::SessionLog::CHECKPOINT);
    log.set_checkpoint_path(path);
    options_.summary_writer->AddSessionLog(log, step);
  }
  bool stop = false;
  for (auto& listener : options_.listeners) {
    if (listener->AfterSave(session, step)) {
      LOOM_LOG(INFO) << "A CheckpointSaverListener requested that training be stopped.";
      stop = true;
    }
  }
  return stop;
}

}  // namespace loom::train
