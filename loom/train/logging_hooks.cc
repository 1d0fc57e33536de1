// Hooks that report progress: StepCounterHook and LoggingTensorHook.
#include <cstdio>

#include "loom/base/logging.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/summary.h"

namespace loom::train {
namespace {

SecondOrStepTimerOptions StepCounterTimer(const StepCounterOptions& o) {
  SecondOrStepTimerOptions t{.every_secs = o.every_n_secs, .every_steps = o.every_n_steps,
                             .env = o.env};
  if (!t.every_secs && !t.every_steps) t.every_steps = 100;
  return t;
}

SecondOrStepTimerOptions LoggingTimer(const LoggingTensorOptions& o) {
  if (o.at_end && !o.every_n_iter && !o.every_n_secs) return {.never = true, .env = o.env};
  return {.every_secs = o.every_n_secs, .every_steps = o.every_n_iter, .env = o.env};
}

}  // namespace

StepCounterHook::StepCounterHook(StepCounterOptions options)
    : options_(std::move(options)), timer_(StepCounterTimer(options_)) {
  if (!options_.summary_writer && !options_.output_dir.empty()) {
    options_.summary_writer =
        std::make_shared<FileWriter>(options_.output_dir, FileWriterOptions{.env = options_.env});
  }
}

void StepCounterHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "StepCounterHook");
  tag_ = global_step_.node->name() + "/sec";
}

SessionRunArgs StepCounterHook::BeforeRun(SessionRunContext&) { return {.fetches = {global_step_}}; }

void StepCounterHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t stale_step = StepValue(values.results[0]);
  if (timer_.ShouldTriggerForStep(stale_step + 1)) {
    // The fetched value may predate this step's increment; read the current one.
    const int64_t step = StepValue(context.session().Eval(global_step_));
    if (timer_.ShouldTriggerForStep(step)) {
      const TimerElapsed elapsed = timer_.UpdateLastTriggeredStep(step);
      if (elapsed.secs && *elapsed.secs > 0) {
        const double steps_per_sec = *elapsed.steps / *elapsed.secs;
        LOOM_LOG(INFO) << tag_ << ": " << steps_per_sec;
        if (options_.summary_writer) {
          options_.summary_writer->AddSummary(ScalarSummaryProto(tag_, steps_per_sec), step);
        }
      }
    }
  }
  // A global step that never moves usually means the train op does not increment it.
  if (last_global_step_ && stale_step == *last_global_step_) {
    if (++steps_without_increase_ == 20) {
      LOOM_LOG(WARNING) << "It seems that the global step has not been increased for 20 steps "
                        << "(current value " << stale_step << "); pass it to Minimize / "
                        << "ApplyGradients so the train op increments it.";
    }
  } else {
    steps_without_increase_ = 0;
  }
  last_global_step_ = stale_step;
}

LoggingTensorHook::LoggingTensorHook(std::vector<std::pair<std::string, Output>> tensors,
                                     LoggingTensorOptions options)
    : tensors_(std::move(tensors)), options_(std::move(options)), timer_(LoggingTimer(options_)) {}

namespace {
std::vector<std::pair<std::string, Output>> TagByName(const std::vector<Output>& tensors) {
  std::vector<std::pair<std::string, Output>> out;
  for (const Output& t : tensors) out.emplace_back(t.name(), t);
  return out;
}
}  // namespace

LoggingTensorHook::LoggingTensorHook(const std::vector<Output>& tensors,
                                     LoggingTensorOptions options)
    : LoggingTensorHook(TagByName(tensors), std::move(options)) {}

void LoggingTensorHook::Begin(Graph&) {
  timer_.Reset();
  iter_count_ = 0;
}

SessionRunArgs LoggingTensorHook::BeforeRun(SessionRunContext&) {
  should_trigger_ = timer_.ShouldTriggerForStep(iter_count_);
  if (!should_trigger_) return {};
  SessionRunArgs args;
  for (const auto& [tag, t] : tensors_) args.fetches.push_back(t);
  return args;
}

void LoggingTensorHook::AfterRun(SessionRunContext&, const SessionRunValues& values) {
  if (should_trigger_) Log(values.results);
  ++iter_count_;
}

void LoggingTensorHook::End(Session& session) {
  if (!options_.at_end) return;
  std::vector<Output> fetches;
  for (const auto& [tag, t] : tensors_) fetches.push_back(t);
  Log(session.Run({}, fetches));
}

void LoggingTensorHook::Log(const std::vector<Tensor>& values) {
  const TimerElapsed elapsed = timer_.UpdateLastTriggeredStep(iter_count_);
  if (options_.formatter) {
    std::map<std::string, Tensor> by_tag;
    for (size_t i = 0; i < tensors_.size(); ++i) by_tag[tensors_[i].first] = values[i];
    LOOM_LOG(INFO) << options_.formatter(by_tag);
    return;
  }
  std::string line;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (i > 0) line += ", ";
    line += tensors_[i].first + " = " + values[i].DebugString();
  }
  if (elapsed.secs) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (%.3f sec)", *elapsed.secs);
    line += buf;
  }
  LOOM_LOG(INFO) << line;
}

}  // namespace loom::train
