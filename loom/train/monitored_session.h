#ifndef LOOM_TRAIN_MONITORED_SESSION_H_
#define LOOM_TRAIN_MONITORED_SESSION_H_

// MonitoredSession: TF1's tf.train.MonitoredSession, a Session that runs hooks around each
// step (session_run_hook.h has the lifecycle), restores or initializes itself, ends
// cleanly at end of input, and recovers from Aborted / Unavailable errors.
//
//   auto session = MonitoredTrainingSession(graph, {
//       .checkpoint_dir = "runs/1",
//       .hooks = {std::make_shared<StopAtStepHook>(StopAtStepOptions{.last_step = 1000})}});
//   while (!session->ShouldStop()) session->RunTarget(train_op);
//   session->Close();   // runs every End (also run by the destructor on a clean exit)
//
// Construction, in order: every hook's Begin(graph); the Scaffold and then the graph are
// finalized; the Session is created and restored from the newest valid checkpoint in
// checkpoint_dir (or initialized: init_op with init_feeds, then init_fn; checkpoints
// that are all invalid are DataLoss unless start_over_if_checkpoints_corrupt), then
// local_init_op runs and every variable must be initialized (else FailedPrecondition
// naming them); every hook's AfterCreateSession.
// Run / RunStep:
//   - a stop request from a hook (or StepContext) makes ShouldStop() true after the step;
//   - OutOfRange (end of input) from anywhere in the step makes ShouldStop() true and the
//     call returns an empty vector: no try/catch needed to end an epoch;
//   - Aborted / Unavailable (with should_recover): the Session is dropped and recreated
//     (restored from the newest checkpoint), every AfterCreateSession runs again, and the
//     step is retried;
//   - any other error marks the session failed and propagates; End will not run.
// Close(): every hook's End(session) unless the session failed, then the Session is
// released. The destructor closes too, skipping End when an exception is unwinding.
// Thread-safety: one thread drives a MonitoredSession.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "loom/train/scaffold.h"
#include "loom/train/session_run_hook.h"

namespace loom::train {

// Creates a Session that is ready to run: restored or initialized.
class SessionCreator {
 public:
  virtual ~SessionCreator() = default;
  virtual Graph& graph() = 0;
  // Finalizes the scaffold and graph (first call), then creates and prepares a Session.
  virtual std::unique_ptr<Session> CreateSession() = 0;
};

struct SessionCreatorOptions {
  // Default: a new Scaffold with every default.
  std::shared_ptr<Scaffold> scaffold;
  // Restore the newest valid checkpoint here when there is one. Default: "" (none).
  std::string checkpoint_dir;
  // Restore exactly this checkpoint instead (path with or without ".safetensors").
  // Default: "".
  std::string checkpoint_filename_with_path;
  // checkpoint_dir has checkpoints but none is valid: initialize (start over from step 0,
  // keeping the invalid files) instead of throwing DataLoss (Saver::RestoreLatest).
  // Default: false.
  bool start_over_if_checkpoints_corrupt = false;
  SessionOptions session_options;
};

// TF's ChiefSessionCreator (and WorkerSessionCreator: in Loom every worker owns a full
// replica, so workers prepare their Session the same way; broadcasting the chief's
// values is the distribute layer's job, in a hook's AfterCreateSession).
std::unique_ptr<SessionCreator> NewSessionCreator(Graph& graph, SessionCreatorOptions options = {});

class MonitoredSession;

// What a RunStepFn gets: the raw session, a way to run a step with the hooks, and a stop
// request.
class StepContext {
 public:
  Session& session() const { return session_; }
  std::vector<Tensor> RunWithHooks(const FeedList& feeds, const std::vector<Output>& fetches,
                                   const std::vector<Operation>& targets = {});
  void RequestStop() { stop_requested_ = true; }

 private:
  friend class MonitoredSession;
  StepContext(MonitoredSession& owner, Session& session) : owner_(owner), session_(session) {}
  MonitoredSession& owner_;
  Session& session_;
  bool stop_requested_ = false;
};

using RunStepFn = std::function<std::vector<Tensor>(StepContext&)>;

struct MonitoredSessionOptions {
  // Recreate the session and retry the step on Aborted / Unavailable. Default: true.
  bool should_recover = true;
  // Recoveries allowed per Run call; -1 is unlimited, as in TF. Default: -1.
  int max_recoveries_per_run = -1;
};

class MonitoredSession {
 public:
  MonitoredSession(std::unique_ptr<SessionCreator> creator, HookList hooks,
                   MonitoredSessionOptions options = {});
  ~MonitoredSession();
  MonitoredSession(const MonitoredSession&) = delete;
  MonitoredSession& operator=(const MonitoredSession&) = delete;

  // One step: the hooks' BeforeRun, one Session::Run with their additions, AfterRun.
  // Returns the caller's fetches; empty at end of input. REQUIRES: !ShouldStop().
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<Output>& fetches,
                          const std::vector<Operation>& targets = {});
  void RunTarget(Operation target, const FeedList& feeds = {}) { Run(feeds, {}, {target}); }
  // Runs step_fn with recovery; step_fn may call context.RunWithHooks any number of times.
  std::vector<Tensor> RunStep(const RunStepFn& step_fn);

  bool ShouldStop() const { return should_stop_ || closed_; }
  // True when the stop came from end of input (OutOfRange).
  bool end_of_input() const { return end_of_input_; }
  void Close();

  // REQUIRES: not closed.
  Session& raw_session();
  Graph& graph() { return creator_->graph(); }

 private:
  friend class StepContext;
  void CreateSession();
  std::vector<Tensor> HookedRun(Session& session, const SessionRunArgs& args);
  std::vector<Tensor> RunWithRecovery(const std::function<std::vector<Tensor>(Session&)>& fn);

  std::unique_ptr<SessionCreator> creator_;
  HookList hooks_;
  MonitoredSessionOptions options_;
  std::unique_ptr<Session> session_;
  bool should_stop_ = false;
  bool end_of_input_ = false;
  bool failed_ = false;
  bool closed_ = false;
  int uncaught_at_construction_ = 0;
};

// TF's SingularMonitoredSession: a chief session without recovery.
std::unique_ptr<MonitoredSession> SingularMonitoredSession(Graph& graph, HookList hooks = {},
                                                           SessionCreatorOptions options = {});

struct MonitoredTrainingSessionOptions {
  // The chief restores, initializes and gets the default hooks below. Default: true.
  bool is_chief = true;
  // Where checkpoints are restored from and saved to. Default: "" (no checkpoints).
  std::string checkpoint_dir;
  // Default: a new Scaffold.
  std::shared_ptr<Scaffold> scaffold;
  // Hooks for every worker, run after the default and chief-only hooks.
  HookList hooks;
  // Hooks for the chief only, run first.
  HookList chief_only_hooks;
  // Checkpoint every N seconds or steps. Neither set: every 600 s. A value <= 0 disables.
  std::optional<double> save_checkpoint_secs;
  std::optional<int64_t> save_checkpoint_steps;
  // Write the summary op every N steps or seconds. Neither set: every 100 steps. A value
  // <= 0 disables.
  std::optional<int64_t> save_summaries_steps;
  std::optional<double> save_summaries_secs;
  // Log and write global_step/sec every N steps; <= 0 disables. Default: 100.
  int64_t log_step_count_steps = 100;
  // Where summaries go. Default: "" (checkpoint_dir).
  std::string summary_dir;
  // Write the graph's structure to the event file and graph.pbtxt. Default: true.
  bool save_graph_def = true;
  SessionOptions session_options;
  // Default: Env::Default().
  Env* env = nullptr;
  // Default: true.
  bool should_recover = true;
  // See SessionCreatorOptions. Default: false.
  bool start_over_if_checkpoints_corrupt = false;
};

// TF's tf.train.MonitoredTrainingSession. On the chief, hooks run in TF's order:
//   1. chief_only_hooks;
//   2. StepCounterHook (log_step_count_steps, into summary_dir);
//   3. SummarySaverHook (save_summaries_*, the scaffold's summary op, into summary_dir);
//   4. CheckpointSaverHook (save_checkpoint_*, into checkpoint_dir);
//   5. hooks.
// The default hooks share one FileWriter for summary_dir. A non-chief gets only `hooks`.
std::unique_ptr<MonitoredSession> MonitoredTrainingSession(
    Graph& graph, MonitoredTrainingSessionOptions options = {});

}  // namespace loom::train

#endif  // LOOM_TRAIN_MONITORED_SESSION_H_
