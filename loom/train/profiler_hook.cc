#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

#include "loom/base/logging.h"
#include "loom/train/basic_hooks.h"

namespace loom::train {

std::string StepStatsToChromeTrace(const RunMetadata& metadata) {
  int64_t origin = INT64_MAX;
  for (const auto& s : metadata.step_stats) origin = std::min(origin, s.start_micros);
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args", {{"name", "Loom Session::Run"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "kernels"}}}});
  for (const auto& s : metadata.step_stats) {
    events.push_back({{"name", s.node_name},
                      {"cat", s.op},
                      {"ph", "X"},
                      {"ts", s.start_micros - origin},
                      {"dur", std::max<int64_t>(s.end_micros - s.start_micros, 0)},
                      {"pid", 0},
                      {"tid", 0},
                      {"args", {{"name", s.node_name}, {"op", s.op}}}});
  }
  nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump(1);
}

ProfilerHook::ProfilerHook(ProfilerOptions options)
    : options_(std::move(options)),
      timer_({.every_secs = options_.save_secs,
              .every_steps = options_.save_steps,
              .env = options_.env}) {
  if (options_.env == nullptr) options_.env = Env::Default();
  if (options_.output_dir.empty()) throw InvalidArgument("ProfilerHook: output_dir is required");
}

void ProfilerHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "ProfilerHook");
  next_step_.reset();
}

SessionRunArgs ProfilerHook::BeforeRun(SessionRunContext&) {
  request_trace_ = next_step_ && timer_.ShouldTriggerForStep(*next_step_);
  return {.fetches = {global_step_}, .trace = request_trace_};
}

void ProfilerHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t stale_step = StepValue(values.results[0]);
  if (!next_step_) timer_.UpdateLastTriggeredStep(stale_step);
  int64_t step = stale_step + 1;
  if (request_trace_ && values.run_metadata != nullptr) {
    step = StepValue(context.session().Eval(global_step_));
    timer_.UpdateLastTriggeredStep(step);
    const std::string path = JoinPath(options_.output_dir, StrCat("timeline-", step, ".json"));
    options_.env->CreateDirs(options_.output_dir);
    WriteFileAtomically(options_.env, path, StepStatsToChromeTrace(*values.run_metadata));
    LOOM_LOG(INFO) << "Saved a trace of step " << step << " to " << path;
  }
  next_step_ = step + 1;
}

}  // namespace loom::train
