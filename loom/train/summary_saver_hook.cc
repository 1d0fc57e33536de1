#include "loom/io/event_file_proto.h"
#include "loom/train/basic_hooks.h"

namespace loom::train {

SummarySaverHook::SummarySaverHook(SummarySaverOptions options)
    : options_(std::move(options)),
      timer_({.every_secs = options_.save_secs,
              .every_steps = options_.save_steps,
              .env = options_.env}) {
  if (static_cast<bool>(options_.scaffold) == options_.summary_op.valid()) {
    throw InvalidArgument("SummarySaverHook: pass exactly one of scaffold and summary_op");
  }
  if (!options_.summary_writer) {
    if (options_.output_dir.empty()) {
      throw InvalidArgument("SummarySaverHook: pass output_dir or summary_writer");
    }
    options_.summary_writer = SharedFileWriter(options_.output_dir, options_.env);
  }
}

Output SummarySaverHook::summary_op() const {
  return options_.scaffold ? options_.scaffold->summary_op : options_.summary_op;
}

void SummarySaverHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "SummarySaverHook");
  next_step_.reset();
}

SessionRunArgs SummarySaverHook::BeforeRun(SessionRunContext&) {
  request_summary_ = !next_step_ || timer_.ShouldTriggerForStep(*next_step_);
  SessionRunArgs args{.fetches = {global_step_}};
  if (request_summary_ && summary_op().valid()) args.fetches.push_back(summary_op());
  return args;
}

void SummarySaverHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  // TF adds 1 to a global step it fetched before the step's increment; Loom fetches a
  // variable after the step (session.cc reads fetched variables last), so the fetched
  // value is the step just completed. Adding 1 here made next_step_ run one ahead each
  // step and wrote summaries at 1, 100, 199, ... instead of TF's 1, 101, 201.
  int64_t step = StepValue(values.results[0]);
  if (!next_step_ || request_summary_) step = StepValue(context.session().Eval(global_step_));
  if (!next_step_) {
    proto::SessionLog log;
    log.set_status(proto::SessionLog::START);
    options_.summary_writer->AddSessionLog(log, step);
  }
  if (request_summary_) {
    timer_.UpdateLastTriggeredStep(step);
    if (values.results.size() > 1) {
      options_.summary_writer->AddSummary(values.results[1].scalar<std::string>(), step);
    }
  }
  next_step_ = step + 1;
}

void SummarySaverHook::End(Session&) { options_.summary_writer->Flush(); }

}  // namespace loom::train
