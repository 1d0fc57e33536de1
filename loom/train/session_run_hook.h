#ifndef LOOM_TRAIN_SESSION_RUN_HOOK_H_
#define LOOM_TRAIN_SESSION_RUN_HOOK_H_

// SessionRunHook: TF1's tf.train.SessionRunHook, code that runs around every step of a
// MonitoredSession (monitored_session.h). The lifecycle, implemented in one place (the
// hook runner inside MonitoredSession), is TF's:
//
//   1. Begin(graph) on every hook, in order. The graph can still be extended here.
//   2. The Scaffold is finalized and the graph is finalized (read-only from now on).
//   3. The Session is created, then restored from the newest valid checkpoint or
//      initialized (init op, init feeds, init function), then the local init op runs.
//   4. AfterCreateSession(session) on every hook, in order.
//   5. For each step:
//      a. BeforeRun(context) on every hook, in order; each returns SessionRunArgs (extra
//         fetches, feeds and targets, and whether to trace this step);
//      b. ONE Session::Run with the caller's feeds/fetches/targets plus every hook's,
//         merged (a tensor fed twice, by the caller or any hook, is InvalidArgument);
//      c. AfterRun(context, values) on every hook, in order; values.results holds that
//         hook's own fetches. Any hook may call context.RequestStop().
//      A stop requested during 5a cancels the step: every BeforeRun still runs, then no
//      Session::Run and no AfterRun, and the caller gets an empty result (a Loom addition;
//      TF runs the step anyway. StopAtStepHook uses it so that a session restored at or
//      past last_step does not train one step too many).
//   6. On a clean stop (a stop request, end of input = OutOfRange, or Close() by the
//      caller), End(session) on every hook, in order.
//      On any other error End does NOT run and the error propagates to the caller.
//   7. Recovery (MonitoredSession only): when a step throws Aborted or Unavailable, the
//      Session is dropped, a new one is created and restored (step 3), every
//      AfterCreateSession runs again (step 4), and the step is retried from 5a.
//
// Hooks are shared with the caller (std::shared_ptr), who may keep one to read what it
// collected (FinalOpsHook). A hook is called from one thread at a time.
#include <string>
#include <vector>

#include "loom/runtime/session.h"

namespace loom::train {

// What a hook adds to the step's Session::Run.
struct SessionRunArgs {
  // Extra values to fetch; they come back, in order, in SessionRunValues::results.
  std::vector<Output> fetches;
  // Extra feeds. Feeding an output that the caller or another hook also feeds is an error.
  FeedList feeds;
  // Extra ops to run for their effect.
  std::vector<Operation> targets;
  // Record per-node timings of this step (RunOptions::trace). Default: false.
  bool trace = false;
};

// What the step produced for one hook.
struct SessionRunValues {
  // The hook's own fetches, in the order it asked for them.
  std::vector<Tensor> results;
  // The step's timings, when any hook asked to trace this step; nullptr otherwise.
  const RunMetadata* run_metadata = nullptr;
};

// The step as hooks see it. Created by the hook runner for each step.
class SessionRunContext {
 public:
  SessionRunContext(const SessionRunArgs& original_args, Session& session)
      : original_args_(original_args), session_(session) {}

  // What the caller passed to MonitoredSession::Run (feeds, fetches, targets).
  const SessionRunArgs& original_args() const { return original_args_; }
  // The raw Session. Hooks may run it (e.g. to read the global step) but not close it.
  Session& session() const { return session_; }
  // Ends training cleanly after this step: ShouldStop() becomes true and End runs.
  void RequestStop() { stop_requested_ = true; }
  bool stop_requested() const { return stop_requested_; }

 private:
  const SessionRunArgs& original_args_;
  Session& session_;
  bool stop_requested_ = false;
};

class SessionRunHook {
 public:
  virtual ~SessionRunHook() = default;

  // Before the graph is finalized: look up or create the ops the hook needs.
  virtual void Begin(Graph& graph) {}
  // The session exists and is restored or initialized. Runs again after each recovery.
  virtual void AfterCreateSession(Session& session) {}
  // Before each step. Return what to add to the step's run (default: nothing).
  virtual SessionRunArgs BeforeRun(SessionRunContext& context) { return {}; }
  // After each successful step, with this hook's fetched values.
  virtual void AfterRun(SessionRunContext& context, const SessionRunValues& values) {}
  // At a clean stop only (never after an error).
  virtual void End(Session& session) {}
};

using HookList = std::vector<std::shared_ptr<SessionRunHook>>;

// The step's value of a global step tensor as int64 (it may be int32 or int64).
int64_t StepValue(const Tensor& step);
// The graph's global step (global_step.h); throws FailedPrecondition naming `who` (the
// hook) when the graph has none.
Output RequireGlobalStep(const Graph& graph, std::string_view who);

}  // namespace loom::train

#endif  // LOOM_TRAIN_SESSION_RUN_HOOK_H_
