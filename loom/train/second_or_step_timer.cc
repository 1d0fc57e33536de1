#include "loom/train/second_or_step_timer.h"

#include "loom/base/error.h"

namespace loom::train {

SecondOrStepTimer::SecondOrStepTimer(SecondOrStepTimerOptions options) : options_(options) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (options_.never) return;
  if (options_.every_secs.has_value() == options_.every_steps.has_value()) {
    throw InvalidArgument("SecondOrStepTimer: set exactly one of every_secs and every_steps");
  }
  if (options_.every_secs && *options_.every_secs <= 0) {
    throw InvalidArgument("SecondOrStepTimer: every_secs must be positive, got ",
                          *options_.every_secs);
  }
  if (options_.every_steps && *options_.every_steps <= 0) {
    throw InvalidArgument("SecondOrStepTimer: every_steps must be positive, got ",
                          *options_.every_steps);
  }
}

void SecondOrStepTimer::Reset() {
  last_step_.reset();
  last_time_ = 0;
}

double SecondOrStepTimer::NowSecs() const { return options_.env->NowMicros() * 1e-6; }

bool SecondOrStepTimer::ShouldTriggerForStep(int64_t step) const {
  if (options_.never) return false;
  if (!last_step_) return true;
  if (*last_step_ == step) return false;
  if (options_.every_secs && NowSecs() >= last_time_ + *options_.every_secs) return true;
  if (options_.every_steps && step >= *last_step_ + *options_.every_steps) return true;
  return false;
}

TimerElapsed SecondOrStepTimer::UpdateLastTriggeredStep(int64_t step) {
  const double now = NowSecs();
  TimerElapsed elapsed;
  if (last_step_) {
    elapsed.secs = now - last_time_;
    elapsed.steps = step - *last_step_;
  }
  last_time_ = now;
  last_step_ = step;
  return elapsed;
}

}  // namespace loom::train
