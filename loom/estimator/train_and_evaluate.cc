#include "loom/estimator/train_and_evaluate.h"

#include <algorithm>
#include <set>

#include "loom/base/logging.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/io/event_file_proto.h"
#include "loom/train/stop_signals.h"

namespace loom {
namespace {

double NowSecs(Env* env) { return static_cast<double>(env->NowMicros()) / 1e6; }

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Deletes all but the newest `keep` timestamped exports in export_path.
void GarbageCollectExports(Env* env, const std::string& export_path, int keep) {
  if (!env->IsDirectory(export_path)) return;
  std::vector<std::string> exports;
  for (const std::string& child : env->GetChildren(export_path)) {
    if (AllDigits(child)) exports.push_back(child);
    // An export writes temp-<seconds> and renames it, or removes it when it fails; one
    // that is still there after this exporter's export is a killed run's (the trainer
    // holds model_dir's lock), which nothing would ever delete.
    if (child.rfind("temp-", 0) == 0 && AllDigits(child.substr(5))) {
      LOOM_LOG(WARNING) << "removing '" << JoinPath(export_path, child)
                        << "', the unfinished export of an earlier run that was killed";
      env->DeleteRecursively(JoinPath(export_path, child));
    }
  }
  if (keep <= 0) return;
  // Numeric order without std::stoll, which throws std::out_of_range on a 20-digit name.
  auto digits = [](const std::string& s) {
    return std::string_view(s).substr(std::min(s.find_first_not_of('0'), s.size()));
  };
  std::sort(exports.begin(), exports.end(), [&](const std::string& a, const std::string& b) {
    const std::string_view x = digits(a), y = digits(b);
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  for (size_t i = 0; i + keep < exports.size(); ++i) {
    env->DeleteRecursively(JoinPath(export_path, exports[i]));
  }
}

// Scalar summaries of every event file in eval_dir, by global step.
std::map<int64_t, EvalResult> ReadEvalResults(Env* env, const std::string& eval_dir) {
  std::map<int64_t, EvalResult> results;
  if (!env->IsDirectory(eval_dir)) return results;
  for (const std::string& path : env->Glob(JoinPath(eval_dir, "events.out.tfevents.*"))) {
    auto reader = EventFileReader::Open(env, path, {.truncated_record_is_eof = true});
    while (std::optional<proto::Event> event = reader->Next()) {
      if (!event->has_summary()) continue;
      for (const auto& value : event->summary().value()) {
        if (std::optional<double> v = ScalarValue(value)) {
          results[event->step()][value.tag()] = *v;
          results[event->step()]["global_step"] = static_cast<double>(event->step());
        }
      }
    }
  }
  return results;
}

std::string EvalDir(const Estimator& estimator, const std::string& name) {
  return JoinPath(estimator.model_dir(), name.empty() ? "eval" : "eval_" + name);
}

// TF's _NewCheckpointListenerForEvaluate: evaluates and exports after checkpoints.
class EvaluateListener : public train::CheckpointSaverListener {
 public:
  EvaluateListener(Estimator& estimator, const TrainSpec& train_spec, const EvalSpec& eval_spec,
                   const train::ScopedStopSignals& signals, TrainAndEvaluateResult& result)
      : estimator_(estimator),
        train_spec_(train_spec),
        eval_spec_(eval_spec),
        signals_(signals),
        result_(result),
        env_(estimator.config().env) {}

  void Begin() override { train_start_ = NowSecs(env_); }

  bool AfterSave(Session&, int64_t global_step) override {
    if (StoppedBySignal(global_step)) return false;
    if (first_save_) {  // saved before the first step: the model is not trained yet
      first_save_ = false;
      return false;
    }
    const double now = NowSecs(env_);
    if (now - train_start_ < eval_spec_.start_delay_secs) return false;
    if (last_eval_start_ && now - *last_eval_start_ < eval_spec_.throttle_secs) {
      LOOM_LOG(INFO) << "Skipping evaluation of the checkpoint at step " << global_step
                     << " (throttle_secs " << eval_spec_.throttle_secs << ")";
      return false;
    }
    EvaluateAndExport();
    return false;
  }

  void End(Session&, int64_t global_step) override {
    if (StoppedBySignal(global_step)) return;
    if (global_step != last_evaluated_step_) EvaluateAndExport();
  }

  // A stop signal (a scheduler preempting the job) leaves time for the final checkpoint,
  // not for an evaluation and exports: those run when the job is resumed.
  bool StoppedBySignal(int64_t global_step) {
    if (signals_.received() == 0) return false;
    if (!logged_signal_) {
      LOOM_LOG(WARNING) << "TrainAndEvaluate: stopped by "
                        << train::StopSignalName(signals_.received()) << "; not evaluating "
                        << "or exporting the checkpoint at step " << global_step;
      logged_signal_ = true;
    }
    return true;
  }

  void EvaluateAndExport() {
    std::optional<std::string> checkpoint = estimator_.LatestCheckpoint();
    if (!checkpoint) {
      LOOM_LOG(WARNING) << "TrainAndEvaluate: no checkpoint to evaluate in "
                        << estimator_.model_dir();
      return;
    }
    if (*checkpoint == last_checkpoint_) return;  // nothing new
    last_eval_start_ = NowSecs(env_);
    result_.eval_result = estimator_.Evaluate(eval_spec_.input_fn, {.steps = eval_spec_.steps,
                                                                    .hooks = eval_spec_.hooks,
                                                                    .checkpoint_path = *checkpoint,
                                                                    .name = eval_spec_.name});
    ++result_.evaluations;
    last_checkpoint_ = *checkpoint;
    last_evaluated_step_ = static_cast<int64_t>(result_.eval_result.at("global_step"));
    const bool is_final = train_spec_.max_steps && last_evaluated_step_ >= *train_spec_.max_steps;
    for (const auto& exporter : eval_spec_.exporters) {
      const std::string path =
          JoinPath(JoinPath(estimator_.model_dir(), "export"), exporter->name());
      if (std::optional<std::string> dir =
              exporter->Export(estimator_, path, *checkpoint, result_.eval_result, is_final)) {
        result_.export_results.push_back(*dir);
      }
    }
  }

 private:
  Estimator& estimator_;
  const TrainSpec& train_spec_;
  const EvalSpec& eval_spec_;
  const train::ScopedStopSignals& signals_;
  TrainAndEvaluateResult& result_;
  Env* env_;
  bool logged_signal_ = false;
  bool first_save_ = true;
  double train_start_ = 0;
  std::optional<double> last_eval_start_;
  int64_t last_evaluated_step_ = -1;
  std::string last_checkpoint_;
};

}  // namespace

LatestExporter::LatestExporter(std::string name, ServingInputReceiverFn serving_input_fn,
                               int exports_to_keep)
    : name_(std::move(name)),
      serving_input_fn_(std::move(serving_input_fn)),
      exports_to_keep_(exports_to_keep) {}

std::optional<std::string> LatestExporter::Export(Estimator& estimator,
                                                  const std::string& export_path,
                                                  const std::string& checkpoint_path,
                                                  const EvalResult&, bool) {
  std::string dir = estimator.ExportSavedModel(export_path, serving_input_fn_,
                                               {.checkpoint_path = checkpoint_path});
  GarbageCollectExports(estimator.config().env, export_path, exports_to_keep_);
  return dir;
}

bool LossSmaller(const EvalResult& best, const EvalResult& current) {
  auto b = best.find("loss");
  auto c = current.find("loss");
  if (b == best.end() || c == current.end()) {
    throw InvalidArgument(
        "BestExporter: the eval results have no \"loss\" to compare; pass a "
        "compare_fn for another metric");
  }
  return c->second < b->second;
}

BestExporter::BestExporter(std::string name, ServingInputReceiverFn serving_input_fn,
                           CompareFn compare_fn, int exports_to_keep)
    : name_(std::move(name)),
      serving_input_fn_(std::move(serving_input_fn)),
      compare_fn_(std::move(compare_fn)),
      exports_to_keep_(exports_to_keep) {}

std::optional<std::string> BestExporter::Export(Estimator& estimator,
                                                const std::string& export_path,
                                                const std::string& checkpoint_path,
                                                const EvalResult& eval_result, bool) {
  if (!seeded_) {
    seeded_ = true;
    // Earlier evaluations (e.g. before a restart) count; the current one is already in
    // the files, so only steps before it are read.
    const double step = eval_result.count("global_step") ? eval_result.at("global_step") : 0;
    if (!eval_dir_.empty()) {
      for (const auto& [s, result] : ReadEvalResults(estimator.config().env, eval_dir_)) {
        if (s >= step) continue;
        if (!best_ || compare_fn_(*best_, result)) best_ = result;
      }
    }
  }
  if (best_ && !compare_fn_(*best_, eval_result)) return std::nullopt;
  best_ = eval_result;
  std::string dir = estimator.ExportSavedModel(export_path, serving_input_fn_,
                                               {.checkpoint_path = checkpoint_path});
  GarbageCollectExports(estimator.config().env, export_path, exports_to_keep_);
  return dir;
}

FinalExporter::FinalExporter(std::string name, ServingInputReceiverFn serving_input_fn)
    : name_(std::move(name)), serving_input_fn_(std::move(serving_input_fn)) {}

std::optional<std::string> FinalExporter::Export(Estimator& estimator,
                                                 const std::string& export_path,
                                                 const std::string& checkpoint_path,
                                                 const EvalResult&, bool is_the_final_export) {
  if (!is_the_final_export) return std::nullopt;
  return estimator.ExportSavedModel(export_path, serving_input_fn_,
                                    {.checkpoint_path = checkpoint_path});
}

TrainAndEvaluateResult TrainAndEvaluate(Estimator& estimator, const TrainSpec& train_spec,
                                        const EvalSpec& eval_spec) {
  if (!train_spec.input_fn)
    throw InvalidArgument("TrainAndEvaluate: TrainSpec::input_fn is required");
  if (!eval_spec.input_fn)
    throw InvalidArgument("TrainAndEvaluate: EvalSpec::input_fn is required");
  if (eval_spec.throttle_secs <= 0) {
    throw InvalidArgument("TrainAndEvaluate: EvalSpec::throttle_secs must be > 0, given ",
                          eval_spec.throttle_secs);
  }
  std::set<std::string> names;
  for (const auto& exporter : eval_spec.exporters) {
    if (exporter == nullptr) throw InvalidArgument("TrainAndEvaluate: a null exporter");
    if (!names.insert(exporter->name()).second) {
      throw InvalidArgument("TrainAndEvaluate: two exporters are named '", exporter->name(), "'");
    }
    if (auto* best = dynamic_cast<BestExporter*>(exporter.get())) {
      best->set_eval_dir(EvalDir(estimator, eval_spec.name));
    }
  }
  const ModelDirLock lock(estimator);  // held across Train and the final evaluation
  // Nested in Train's own: a signal is seen by both (stop_signals.h).
  const train::ScopedStopSignals signals;
  TrainAndEvaluateResult result;
  auto listener =
      std::make_shared<EvaluateListener>(estimator, train_spec, eval_spec, signals, result);
  const TrainResult trained =
      estimator.Train(train_spec.input_fn, {.hooks = train_spec.hooks,
                                            .max_steps = train_spec.max_steps,
                                            .saving_listeners = {listener}});
  result.global_step = trained.global_step;
  result.stop_signal = trained.stop_signal != 0 ? trained.stop_signal : signals.received();
  if (result.stop_signal != 0) return result;
  // Nothing was trained (max_steps already reached): evaluate what there is, once. In a
  // distributed job only the chief evaluates and exports (its listener ran in Train).
  if (result.evaluations == 0 && estimator.config().is_chief() && estimator.LatestCheckpoint()) {
    listener->EvaluateAndExport();
  }
  return result;
}

}  // namespace loom
