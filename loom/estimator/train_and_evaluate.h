#ifndef LOOM_ESTIMATOR_TRAIN_AND_EVALUATE_H_
#define LOOM_ESTIMATOR_TRAIN_AND_EVALUATE_H_

// TrainAndEvaluate: TF1's tf.estimator.train_and_evaluate in local mode. Trains to
// TrainSpec::max_steps; after each checkpoint (except the one saved before the first
// step) it evaluates — at most once per throttle_secs and not before start_delay_secs
// have passed since training started — and runs the exporters on each evaluated
// checkpoint; the last checkpoint is always evaluated and exported (the final export).
// Evaluations run inside training (a CheckpointSaverListener) on the same thread, with
// their own graph (cached across evaluations, estimator.h). In a data-parallel job
// (RunConfig::train_distribute) the chief evaluates and exports, between its saves; the
// other ranks wait for it at the next step's all-reduce and return no evaluations.
// A stop signal ends training as in Estimator::Train (estimator.h), skipping the final
// evaluation and exports (TrainAndEvaluateResult::stop_signal).
//
//   auto result = loom::TrainAndEvaluate(estimator, {.input_fn = train_fn, .max_steps = 10000},
//       {.input_fn = eval_fn, .steps = 100, .throttle_secs = 60,
//        .exporters = {std::make_shared<loom::BestExporter>("best", serving_fn)}});
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/estimator/estimator.h"

namespace loom {

using EvalResult = std::map<std::string, double>;

// Writes exports of evaluated checkpoints (TF's Exporter).
class Exporter {
 public:
  virtual ~Exporter() = default;
  // Its directory under model_dir/export/.
  virtual const std::string& name() const = 0;
  // Exports (or not) the checkpoint just evaluated into export_path/<timestamp>; returns
  // the directory written, or nullopt.
  virtual std::optional<std::string> Export(Estimator& estimator, const std::string& export_path,
                                            const std::string& checkpoint_path,
                                            const EvalResult& eval_result,
                                            bool is_the_final_export) = 0;
};

// Exports every evaluated checkpoint and keeps the newest exports_to_keep (0 keeps all).
// After each export it removes the temp-<seconds> directory of an export that a killed
// run left unfinished in its directory (so does BestExporter).
class LatestExporter : public Exporter {
 public:
  LatestExporter(std::string name, ServingInputReceiverFn serving_input_fn,
                 int exports_to_keep = 5);
  const std::string& name() const override { return name_; }
  std::optional<std::string> Export(Estimator& estimator, const std::string& export_path,
                                    const std::string& checkpoint_path,
                                    const EvalResult& eval_result,
                                    bool is_the_final_export) override;

 private:
  std::string name_;
  ServingInputReceiverFn serving_input_fn_;
  int exports_to_keep_;
};

// compare_fn(best, current) is true when current is better.
using CompareFn = std::function<bool(const EvalResult& best, const EvalResult& current)>;
// TF's _loss_smaller: current["loss"] < best["loss"].
bool LossSmaller(const EvalResult& best, const EvalResult& current);

// Exports when an evaluation beats the best so far (initially the best in the event files
// of model_dir/eval[_<eval name>], so a restarted job keeps its record). Keeps the newest
// exports_to_keep exports.
class BestExporter : public Exporter {
 public:
  BestExporter(std::string name, ServingInputReceiverFn serving_input_fn,
               CompareFn compare_fn = LossSmaller, int exports_to_keep = 5);
  const std::string& name() const override { return name_; }
  std::optional<std::string> Export(Estimator& estimator, const std::string& export_path,
                                    const std::string& checkpoint_path,
                                    const EvalResult& eval_result,
                                    bool is_the_final_export) override;
  // The eval directory to seed the best result from ("" : none). Set by TrainAndEvaluate.
  void set_eval_dir(std::string eval_dir) { eval_dir_ = std::move(eval_dir); }
  const std::optional<EvalResult>& best() const { return best_; }

 private:
  std::string name_;
  ServingInputReceiverFn serving_input_fn_;
  CompareFn compare_fn_;
  int exports_to_keep_;
  std::string eval_dir_;
  bool seeded_ = false;
  std::optional<EvalResult> best_;
};

// Exports only the final checkpoint.
class FinalExporter : public Exporter {
 public:
  FinalExporter(std::string name, ServingInputReceiverFn serving_input_fn);
  const std::string& name() const override { return name_; }
  std::optional<std::string> Export(Estimator& estimator, const std::string& export_path,
                                    const std::string& checkpoint_path,
                                    const EvalResult& eval_result,
                                    bool is_the_final_export) override;

 private:
  std::string name_;
  ServingInputReceiverFn serving_input_fn_;
};

struct TrainSpec {
  InputFn input_fn;
  // Train until this global step. Default: unset, until input_fn's data ends.
  std::optional<int64_t> max_steps;
  HookList hooks;
};

struct EvalSpec {
  InputFn input_fn;
  // Batches per evaluation; unset evaluates until the input ends. Default: 100 (TF's).
  std::optional<int64_t> steps = 100;
  // Results go to model_dir/eval_<name> ("eval" when empty). Default: "".
  std::string name;
  HookList hooks;
  std::vector<std::shared_ptr<Exporter>> exporters;
  // No evaluation before this many seconds of training (except the final one).
  // Default: 120.
  double start_delay_secs = 120;
  // At least this many seconds between the starts of two evaluations (except the final
  // one). Must be > 0. Default: 600.
  double throttle_secs = 600;
};

struct TrainAndEvaluateResult {
  // The last evaluation's metrics (empty when none ran).
  EvalResult eval_result;
  // Directories written by the exporters over the whole run.
  std::vector<std::string> export_results;
  int64_t evaluations = 0;
  // The global step training ended at (TrainResult::global_step).
  int64_t global_step = 0;
  // The signal (SIGTERM, SIGINT, SIGUSR1) that stopped training early, 0 when none
  // (TrainResult::stop_signal). The final checkpoint is written, but neither evaluated
  // nor exported: a preempted job has time for the one, not the others; the job run
  // again resumes and evaluates its next checkpoints.
  int stop_signal = 0;
};

// Throws InvalidArgument for throttle_secs <= 0, a missing input_fn, duplicate exporter
// names, and whatever training or evaluation throws.
TrainAndEvaluateResult TrainAndEvaluate(Estimator& estimator, const TrainSpec& train_spec,
                                        const EvalSpec& eval_spec);

}  // namespace loom

#endif  // LOOM_ESTIMATOR_TRAIN_AND_EVALUATE_H_
