#ifndef LOOM_TRAIN_BASIC_HOOKS_H_
#define LOOM_TRAIN_BASIC_HOOKS_H_

// The built-in hooks, TF1's basic_session_run_hooks. Each periodic hook is driven by a
// SecondOrStepTimer (second_or_step_timer.h); options with "secs" and "steps" take exactly
// one of the two. Hooks that read the global step find it in Begin with GetGlobalStep
// (global_step.h) and throw FailedPrecondition when the graph has none.
//   StopAtStepHook        request a stop at last_step, or num_steps after the session starts
//                         (a session restored at or past last_step runs no step at all)
//   StepCounterHook       log and write "global_step/sec"
//   LoggingTensorHook     log named tensors every N iterations / seconds, or at the end
//   CheckpointSaverHook   save at the start, periodically and at the end (with listeners)
//   SummarySaverHook      write the summary op's output and a START session log
//   NanTensorHook         fail (or stop) when the loss is NaN
//   FeedFnHook            add feeds from a function to every step
//   FinalOpsHook          evaluate tensors in End and keep the values
//   GlobalStepWaiterHook  hold a worker back until the global step reaches a value
//   ProfilerHook          write a Chrome trace-event JSON of one step (Perfetto, chrome://tracing)
//   EarlyStoppingHook     stop when an eval metric has not improved for N steps
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loom/train/file_writer.h"
#include "loom/train/scaffold.h"
#include "loom/train/second_or_step_timer.h"
#include "loom/train/session_run_hook.h"

namespace loom::train {

struct StopAtStepOptions {
  // Stop after this many steps from the step at session creation... Default: unset.
  std::optional<int64_t> num_steps;
  // ...or when the global step reaches this. Exactly one must be set. Default: unset.
  std::optional<int64_t> last_step;
};

class StopAtStepHook : public SessionRunHook {
 public:
  explicit StopAtStepHook(StopAtStepOptions options);
  void Begin(Graph& graph) override;
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;

 private:
  StopAtStepOptions options_;
  std::optional<int64_t> last_step_;
  Output global_step_;
  bool reached_at_start_ = false;  // the session started at or past last_step
};

struct StepCounterOptions {
  // Default: 100 steps (when every_n_secs is unset).
  std::optional<int64_t> every_n_steps;
  std::optional<double> every_n_secs;
  // Write "global_step/sec" here (through SharedFileWriter: one event file per
  // directory, whoever else writes there) or to summary_writer.
  std::string output_dir;
  std::shared_ptr<FileWriter> summary_writer;
  // Default: Env::Default().
  Env* env = nullptr;
};

class StepCounterHook : public SessionRunHook {
 public:
  explicit StepCounterHook(StepCounterOptions options = {});
  void Begin(Graph& graph) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  // Flushes the summary writer (durably), so a failure to write the summaries reaches the
  // caller instead of a log line when the writer is destroyed.
  void End(Session& session) override;

 private:
  StepCounterOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::string tag_;
  std::optional<int64_t> last_global_step_;
  int steps_without_increase_ = 0;
};

struct LoggingTensorOptions {
  // Exactly one of these unless at_end. Default: unset.
  std::optional<int64_t> every_n_iter;
  std::optional<double> every_n_secs;
  // Log once, in End. Default: false.
  bool at_end = false;
  // Formats the values (by tag); default "tag = value, tag = value (0.123 sec)" with
  // each value as numpy's str() prints it, as TF does: "loss = 10.0, step = 1",
  // "w = [1.5  2.25]".
  std::function<std::string(const std::map<std::string, Tensor>&)> formatter;
  Env* env = nullptr;
};

// A value as numpy's str() prints it (TF's LoggingTensorHook logs numpy values): a float
// scalar as its shortest repr ("10.0", "0.6931472", "1e-05"), integers plainly ("1"),
// arrays in brackets with aligned elements ("[1.5  2.25]", "[[1 2]\n [3 4]]"). Tensors
// over 1000 elements fall back to Tensor::DebugString (numpy would elide with "...");
// long rows are not wrapped at 75 columns.
std::string FormatLikeNumpy(const Tensor& t);

class LoggingTensorHook : public SessionRunHook {
 public:
  // Tags and tensors, logged in this order.
  LoggingTensorHook(std::vector<std::pair<std::string, Output>> tensors,
                    LoggingTensorOptions options);
  // Tagged by tensor name ("loss:0").
  LoggingTensorHook(const std::vector<Output>& tensors, LoggingTensorOptions options);
  void Begin(Graph& graph) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(Session& session) override;

 private:
  void Log(const std::vector<Tensor>& values);

  std::vector<std::pair<std::string, Output>> tensors_;
  LoggingTensorOptions options_;
  SecondOrStepTimer timer_;
  int64_t iter_count_ = 0;
  bool should_trigger_ = false;
};

// Called around every checkpoint the CheckpointSaverHook writes.
class CheckpointSaverListener {
 public:
  virtual ~CheckpointSaverListener() = default;
  virtual void Begin() {}
  virtual void BeforeSave(Session& session, int64_t global_step) {}
  // Return true to request a stop (e.g. an evaluation found the model good enough).
  virtual bool AfterSave(Session& session, int64_t global_step) { return false; }
  virtual void End(Session& session, int64_t global_step) {}
};

struct CheckpointSaverOptions {
  // Exactly one. Default: unset.
  std::optional<double> save_secs;
  std::optional<int64_t> save_steps;
  // The saver, or a scaffold whose (finalized) saver is used. Default: a Saver over the
  // graph's non-local variables, made in Begin.
  std::shared_ptr<Saver> saver;
  std::shared_ptr<Scaffold> scaffold;
  // Default: "model.ckpt".
  std::string checkpoint_basename = "model.ckpt";
  std::vector<std::shared_ptr<CheckpointSaverListener>> listeners;
  // Where CHECKPOINT session logs and the graph go; End flushes it (durably), so a failure
  // to write them reaches the caller. Default: none.
  std::shared_ptr<FileWriter> summary_writer;
  // Write graph.pbtxt (structure only) and the graph to summary_writer. Default: true.
  bool save_graph_def = true;
  Env* env = nullptr;
};

// Saves in AfterCreateSession (the state at the start), whenever the timer triggers in
// AfterRun, and in End when the last step was not saved yet. For each save: every
// listener's BeforeSave, the save, a CHECKPOINT session log, every listener's AfterSave
// (any true requests a stop). End also calls every listener's End.
class CheckpointSaverHook : public SessionRunHook {
 public:
  CheckpointSaverHook(std::string checkpoint_dir, CheckpointSaverOptions options);
  void Begin(Graph& graph) override;
  void AfterCreateSession(Session& session) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(Session& session) override;

 private:
  // Returns true when a listener requests a stop.
  bool Save(Session& session, int64_t step);
  Saver& saver();

  std::string checkpoint_dir_;
  CheckpointSaverOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  Graph* graph_ = nullptr;
  bool graph_written_ = false;
};

struct SummarySaverOptions {
  // Exactly one. Default: unset.
  std::optional<int64_t> save_steps;
  std::optional<double> save_secs;
  // Write here (through SharedFileWriter, as StepCounterOptions) or to summary_writer.
  std::string output_dir;
  std::shared_ptr<FileWriter> summary_writer;
  // The summary op, or a scaffold whose summary_op is used (exactly one).
  std::shared_ptr<Scaffold> scaffold;
  Output summary_op;
  Env* env = nullptr;
};

class SummarySaverHook : public SessionRunHook {
 public:
  explicit SummarySaverHook(SummarySaverOptions options);
  void Begin(Graph& graph) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  void End(Session& session) override;

 private:
  Output summary_op() const;

  SummarySaverOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::optional<int64_t> next_step_;
  bool request_summary_ = false;
};

class NanTensorHook : public SessionRunHook {
 public:
  // fail_on_nan_loss: throw InvalidArgument ("Model diverged with loss = NaN"); else log
  // and request a stop.
  explicit NanTensorHook(Output loss, bool fail_on_nan_loss = true);
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;

 private:
  Output loss_;
  bool fail_;
};

class FeedFnHook : public SessionRunHook {
 public:
  explicit FeedFnHook(std::function<FeedList()> feed_fn) : feed_fn_(std::move(feed_fn)) {}
  SessionRunArgs BeforeRun(SessionRunContext&) override { return {.feeds = feed_fn_()}; }

 private:
  std::function<FeedList()> feed_fn_;
};

class FinalOpsHook : public SessionRunHook {
 public:
  explicit FinalOpsHook(std::vector<Output> final_ops, FeedList feeds = {})
      : final_ops_(std::move(final_ops)), feeds_(std::move(feeds)) {}
  // Runs the ops; an OutOfRange is logged and leaves the values empty.
  void End(Session& session) override;
  // Empty until End ran.
  const std::vector<Tensor>& final_ops_values() const { return values_; }

 private:
  std::vector<Output> final_ops_;
  FeedList feeds_;
  std::vector<Tensor> values_;
};

class GlobalStepWaiterHook : public SessionRunHook {
 public:
  explicit GlobalStepWaiterHook(int64_t wait_until_step, double poll_secs = 0.5)
      : wait_until_step_(wait_until_step), poll_secs_(poll_secs) {}
  void Begin(Graph& graph) override;
  // The first call blocks until the global step is >= wait_until_step.
  SessionRunArgs BeforeRun(SessionRunContext& context) override;

 private:
  int64_t wait_until_step_;
  double poll_secs_;
  bool started_ = false;
  Output global_step_;
};

struct ProfilerOptions {
  // Exactly one. Default: unset.
  std::optional<int64_t> save_steps;
  std::optional<double> save_secs;
  // Where "timeline-<global step>.json" files go.
  std::string output_dir;
  Env* env = nullptr;
};

// Traces one step each time the timer triggers and writes it as Chrome trace events:
// {"traceEvents": [{"name": node, "cat": op, "ph": "X", "ts": µs, "dur": µs, "pid": 0,
// "tid": 0, "args": {...}}, ...]}, with timestamps relative to the step's first node.
class ProfilerHook : public SessionRunHook {
 public:
  explicit ProfilerHook(ProfilerOptions options);
  void Begin(Graph& graph) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;

 private:
  ProfilerOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  std::optional<int64_t> next_step_;
  bool request_trace_ = false;
};

// Chrome trace-event JSON for one step's node timings (what ProfilerHook writes).
std::string StepStatsToChromeTrace(const RunMetadata& metadata);

struct EarlyStoppingOptions {
  // The metric's summary tag in eval_dir's event files ("loss", "accuracy").
  std::string metric_name;
  // Event files an evaluation writes (scalars tagged metric_name at global steps).
  std::string eval_dir;
  // Or any source of (global step -> metric value); used instead of eval_dir when set.
  std::function<std::map<int64_t, double>()> read_metrics;
  // Stop when the metric has not decreased (false) / increased (true). Default: false.
  bool higher_is_better = false;
  // Stop when the best value is this many steps old. Required (> 0).
  int64_t max_steps_without_improvement = 0;
  // Ignore evaluations before this step. Default: 0.
  int64_t min_steps = 0;
  // How often to check (exactly one; neither set: every 60 s).
  std::optional<double> run_every_secs;
  std::optional<int64_t> run_every_steps;
  Env* env = nullptr;
};

// TF's stop_if_no_decrease_hook / stop_if_no_increase_hook. Checks after a step when the
// timer says so (the step after global step 0 always), stopping at that step. When that
// check does not stop, it checks again before the next step, so that an evaluation written
// by a later hook in the same step (TrainAndEvaluate evaluates in the checkpoint saver,
// which the Estimator runs after user hooks) stops training at the step evaluated, as in
// TF, whose chief saver runs first; that stop cancels the next step (session_run_hook.h).
class EarlyStoppingHook : public SessionRunHook {
 public:
  explicit EarlyStoppingHook(EarlyStoppingOptions options);
  void Begin(Graph& graph) override;
  SessionRunArgs BeforeRun(SessionRunContext& context) override;
  void AfterRun(SessionRunContext& context, const SessionRunValues& values) override;
  // The metric's values by global step, read from eval_dir's event files.
  static std::map<int64_t, double> ReadEvalMetric(Env* env, const std::string& eval_dir,
                                                  const std::string& metric_name);

 private:
  bool ShouldStop();

  EarlyStoppingOptions options_;
  SecondOrStepTimer timer_;
  Output global_step_;
  int64_t last_step_ = 0;  // the global step after the last step run
  bool recheck_before_next_run_ = false;
};

}  // namespace loom::train

#endif  // LOOM_TRAIN_BASIC_HOOKS_H_
