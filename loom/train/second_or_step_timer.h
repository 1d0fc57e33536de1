#ifndef LOOM_TRAIN_SECOND_OR_STEP_TIMER_H_
#define LOOM_TRAIN_SECOND_OR_STEP_TIMER_H_

// SecondOrStepTimer: TF's tf.train.SecondOrStepTimer, the one timer that drives every
// periodic hook (checkpoints, summaries, step counting, logging, profiling, early
// stopping). It triggers every `every_steps` steps or every `every_secs` seconds:
//
//   SecondOrStepTimer timer({.every_steps = 100});
//   if (timer.ShouldTriggerForStep(step)) {
//     auto [secs, steps] = timer.UpdateLastTriggeredStep(step);  // since the last trigger
//     ...
//   }
//
// The first call always triggers; the same step never triggers twice in a row. The clock
// is the Env's (NowMicros), so tests can drive it. Not thread-safe.
#include <cstdint>
#include <optional>

#include "loom/base/env.h"

namespace loom::train {

struct SecondOrStepTimerOptions {
  // Trigger when this many seconds have passed since the last trigger. Exactly one of
  // every_secs / every_steps must be set (unless `never` is set). Default: unset.
  std::optional<double> every_secs;
  // Trigger when the step is at least this far past the last trigger. Default: unset.
  std::optional<int64_t> every_steps;
  // A timer that never triggers (TF's NeverTriggerTimer). Default: false.
  bool never = false;
  // The clock. Default: Env::Default().
  Env* env = nullptr;
};

// What passed between two triggers; unset at the first trigger.
struct TimerElapsed {
  std::optional<double> secs;
  std::optional<int64_t> steps;
};

class SecondOrStepTimer {
 public:
  // Throws InvalidArgument unless exactly one of every_secs / every_steps is set (or
  // `never`), or when it is not positive.
  explicit SecondOrStepTimer(SecondOrStepTimerOptions options);

  // Forgets the last trigger: the next ShouldTriggerForStep is true.
  void Reset();
  bool ShouldTriggerForStep(int64_t step) const;
  // Records a trigger at `step` now; returns what passed since the previous one.
  TimerElapsed UpdateLastTriggeredStep(int64_t step);
  std::optional<int64_t> last_triggered_step() const { return last_step_; }

 private:
  double NowSecs() const;

  SecondOrStepTimerOptions options_;
  std::optional<int64_t> last_step_;
  double last_time_ = 0;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_SECOND_OR_STEP_TIMER_H_
