#ifndef LOOM_TRAIN_STOP_SIGNALS_H_
#define LOOM_TRAIN_STOP_SIGNALS_H_

// Graceful stop on SIGTERM, SIGINT and SIGUSR1 (what a cluster scheduler sends before it
// preempts a job; Slurm's --signal sends SIGUSR1). While a ScopedStopSignals lives:
//   - the first of these signals only sets a flag (async-signal-safe: one atomic store and
//     a write(2) of a fixed message to stderr). StopSignalHook sees the flag after the
//     step in flight (AfterRun) or before the next one (BeforeRun, cancelling it) and
//     requests a stop, so the step finishes, every hook's End runs (the final checkpoint
//     and summaries are written) and the training call returns;
//   - a second signal (of any of the three) restores the default action and re-raises
//     itself: the process dies of that signal at once, End or no End.
// A signal whose disposition was SIG_IGN when the scope began (nohup, a background job's
// SIGINT) stays ignored. The destructor restores every previous disposition.
//
// Signal dispositions are process-wide, so this is the one piece of process-global state
// in the train layer: scopes may nest or overlap (two trainers on two threads); the first
// installs the handlers, the last restores them, and a signal stops every trainer in the
// process. Thread-safe.
//
//   ScopedStopSignals signals;
//   hooks.push_back(signals.NewHook());
//   ... train ...
//   if (signals.received() != 0) return 128 + signals.received();
#include <memory>

#include "loom/train/session_run_hook.h"

namespace loom::train {

class ScopedStopSignals {
 public:
  ScopedStopSignals();
  ~ScopedStopSignals();
  ScopedStopSignals(const ScopedStopSignals&) = delete;
  ScopedStopSignals& operator=(const ScopedStopSignals&) = delete;

  // The first stop signal received while some scope was alive (SIGTERM, SIGINT or
  // SIGUSR1), or 0. Stays set until the last scope ends.
  int received() const;
  // A hook that requests a stop once received() != 0.
  std::shared_ptr<SessionRunHook> NewHook() const;
};

// "SIGTERM", "SIGINT", "SIGUSR1", else "a signal".
const char* StopSignalName(int signal);

}  // namespace loom::train

#endif  // LOOM_TRAIN_STOP_SIGNALS_H_
