// Hooks that decide when training stops or waits: StopAtStepHook, NanTensorHook,
// GlobalStepWaiterHook, EarlyStoppingHook; and FinalOpsHook.
#include <chrono>
#include <cmath>
#include <thread>

#include "loom/base/logging.h"
#include "loom/io/event_file_proto.h"
#include "loom/train/basic_hooks.h"

namespace loom::train {

StopAtStepHook::StopAtStepHook(StopAtStepOptions options) : options_(options) {
  if (options_.num_steps.has_value() == options_.last_step.has_value()) {
    throw InvalidArgument("StopAtStepHook: set exactly one of num_steps and last_step");
  }
  last_step_ = options_.last_step;
}

void StopAtStepHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "StopAtStepHook");
}

void StopAtStepHook::AfterCreateSession(Session& session) {
  const int64_t step = StepValue(session.Eval(global_step_));
  // Counted from the first session only: a recovered session keeps the same last step.
  if (!last_step_) last_step_ = step + *options_.num_steps;
  reached_at_start_ = step >= *last_step_;
}

SessionRunArgs StopAtStepHook::BeforeRun(SessionRunContext& context) {
  if (reached_at_start_) {
    context.RequestStop();  // cancels the step (see session_run_hook.h)
    return {};
  }
  return {.fetches = {global_step_}};
}

void StopAtStepHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  if (values.results.empty()) return;
  // The fetched value may predate this step's increment: check the current one.
  if (StepValue(values.results[0]) + 1 >= *last_step_ &&
      StepValue(context.session().Eval(global_step_)) >= *last_step_) {
    context.RequestStop();
  }
}

NanTensorHook::NanTensorHook(Output loss, bool fail_on_nan_loss)
    : loss_(loss), fail_(fail_on_nan_loss) {}

SessionRunArgs NanTensorHook::BeforeRun(SessionRunContext&) { return {.fetches = {loss_}}; }

void NanTensorHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const Tensor& loss = values.results[0];
  bool nan = false;
  SwitchFloat(loss.dtype(), "NanTensorHook", [&](auto tag) {
    for (auto v : loss.flat<decltype(tag)>()) nan = nan || std::isnan(v);
    return 0;
  });
  if (!nan) return;
  const std::string message = StrCat("Model diverged with loss = NaN (", loss_.name(), ")");
  if (fail_) {
    LOOM_LOG(ERROR) << message;
    throw InvalidArgument(message, "; NaN loss during training");
  }
  LOOM_LOG(WARNING) << message << "; stopping";
  context.RequestStop();
}

void FinalOpsHook::End(Session& session) {
  try {
    values_ = session.Run(feeds_, final_ops_);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kOutOfRange) throw;
    LOOM_LOG(WARNING) << "FinalOpsHook: an OutOfRange error was raised while evaluating the "
                      << "final ops (an input they depend on is exhausted): " << e.message();
  }
}

void GlobalStepWaiterHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "GlobalStepWaiterHook");
}

SessionRunArgs GlobalStepWaiterHook::BeforeRun(SessionRunContext& context) {
  if (started_) return {};
  if (wait_until_step_ <= 0) {
    started_ = true;
    return {};
  }
  LOOM_LOG(INFO) << "Waiting for global step " << wait_until_step_ << " before starting training.";
  int64_t last_logged = 0;
  for (;;) {
    const int64_t step = StepValue(context.session().Eval(global_step_));
    if (step >= wait_until_step_) break;
    if (step - last_logged > 1000) {
      LOOM_LOG(INFO) << "Waiting for global step " << wait_until_step_
                     << " before starting training. Current step is " << step << ".";
      last_logged = step;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_secs_));
  }
  started_ = true;
  return {};
}

namespace {
SecondOrStepTimerOptions EarlyStoppingTimer(const EarlyStoppingOptions& o) {
  SecondOrStepTimerOptions t{
      .every_secs = o.run_every_secs, .every_steps = o.run_every_steps, .env = o.env};
  if (!t.every_secs && !t.every_steps) t.every_secs = 60;
  return t;
}
}  // namespace

EarlyStoppingHook::EarlyStoppingHook(EarlyStoppingOptions options)
    : options_(std::move(options)), timer_(EarlyStoppingTimer(options_)) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (options_.max_steps_without_improvement <= 0) {
    throw InvalidArgument("EarlyStoppingHook: max_steps_without_improvement must be positive");
  }
  if (!options_.read_metrics && (options_.eval_dir.empty() || options_.metric_name.empty())) {
    throw InvalidArgument("EarlyStoppingHook: set eval_dir and metric_name, or read_metrics");
  }
}

void EarlyStoppingHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "EarlyStoppingHook");
}

SessionRunArgs EarlyStoppingHook::BeforeRun(SessionRunContext& context) {
  // Hooks after this one (the Estimator's checkpoint saver, whose listener evaluates in
  // TrainAndEvaluate) may have written an evaluation after this hook's AfterRun checked:
  // look again before the next step, and cancel it when that evaluation decides. TF runs
  // the saver first, so it stops at that same global step.
  if (recheck_before_next_run_) {
    recheck_before_next_run_ = false;
    if (ShouldStop()) {
      LOOM_LOG(INFO) << "Requesting early stopping at global step " << last_step_;
      context.RequestStop();  // cancels the step: training ends at last_step_
      return {};
    }
  }
  return {.fetches = {global_step_}};
}

void EarlyStoppingHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  if (values.results.empty()) return;
  const int64_t step = StepValue(values.results[0]) + 1;
  last_step_ = step;
  if (!timer_.ShouldTriggerForStep(step)) return;
  timer_.UpdateLastTriggeredStep(step);
  if (ShouldStop()) {
    LOOM_LOG(INFO) << "Requesting early stopping at global step " << step;
    context.RequestStop();
  } else {
    recheck_before_next_run_ = true;
  }
}

bool EarlyStoppingHook::ShouldStop() {
  const std::map<int64_t, double> metrics =
      options_.read_metrics ? options_.read_metrics()
                            : ReadEvalMetric(options_.env, options_.eval_dir, options_.metric_name);
  std::optional<double> best;
  int64_t best_step = 0;
  for (const auto& [step, value] : metrics) {  // ascending steps
    if (step < options_.min_steps) continue;
    if (!best || (options_.higher_is_better ? value > *best : value < *best)) {
      best = value;
      best_step = step;
    }
    if (step - best_step >= options_.max_steps_without_improvement) {
      LOOM_LOG(INFO) << "No " << (options_.higher_is_better ? "increase" : "decrease")
                     << " in metric \"" << options_.metric_name << "\" for " << step - best_step
                     << " steps, which is greater than or equal to max steps ("
                     << options_.max_steps_without_improvement
                     << ") configured for early stopping.";
      return true;
    }
  }
  return false;
}

std::map<int64_t, double> EarlyStoppingHook::ReadEvalMetric(Env* env, const std::string& eval_dir,
                                                            const std::string& metric_name) {
  std::map<int64_t, double> out;
  if (!env->IsDirectory(eval_dir)) return out;
  for (const std::string& path : env->Glob(JoinPath(eval_dir, "events.out.tfevents.*"))) {
    // The evaluator may still be writing: a cut-off last record is the end, not an error.
    auto reader = EventFileReader::Open(env, path, {.truncated_record_is_eof = true});
    while (auto event = reader->Next()) {
      if (!event->has_summary()) continue;
      for (const auto& value : event->summary().value()) {
        if (value.tag() != metric_name) continue;
        if (auto v = ScalarValue(value)) out[event->step()] = *v;
      }
    }
  }
  return out;
}

}  // namespace loom::train
