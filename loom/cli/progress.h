#ifndef LOOM_CLI_PROGRESS_H_
#define LOOM_CLI_PROGRESS_H_

// Training progress for the terminal. On a TTY one line is rewritten in place ("\r") with
// the step, loss, steps/s and an ETA when max_steps is known; otherwise a plain line is
// printed every `every_steps` steps. It fetches the global step and the loss the graph
// declares (GraphKeys::kLoss, which Estimator::Train fills) alongside each training step
// (both are computed by the step anyway).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "loom/train/session_run_hook.h"

namespace loom::cli {

struct ProgressOptions {
  bool tty = false;                  // Default: false, plain lines
  int64_t every_steps = 100;         // plain lines: print every N steps
  std::optional<int64_t> max_steps;  // for the ETA
  std::FILE* out = stderr;
};

std::shared_ptr<train::SessionRunHook> NewProgressHook(ProgressOptions options);

// `secs` as the progress line prints it: "4m07s", or "2h05m" from an hour on; rounded to
// the nearest second, and a negative or NaN duration reads "0m00s".
std::string FormatDuration(double secs);

}  // namespace loom::cli

#endif  // LOOM_CLI_PROGRESS_H_
