// Estimator::Evaluate (TF's _evaluate_build_graph / _evaluate_run), with the eval graph
// cached across calls when the call allows it (estimator.h).
#include <sstream>

#include "loom/base/logging.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/io/proto/summary.pb.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/train/monitored_session.h"

namespace loom {
namespace {

// TF's _StopAfterNEvalsHook: a stop request after n update steps.
class StopAfterNEvalsHook : public train::SessionRunHook {
 public:
  explicit StopAfterNEvalsHook(int64_t n) : n_(n) {}
  void AfterRun(train::SessionRunContext& context, const train::SessionRunValues&) override {
    if (++done_ >= n_) context.RequestStop();
  }

 private:
  int64_t n_;
  int64_t done_ = 0;
};

// The mean of a scalar over the batches evaluated (TF's metrics.mean(loss)), on local
// float64 variables that LocalVariablesInitializer resets; 0 when nothing was evaluated.
// *batches is the count of batches.
MetricOps MeanOverBatches(const Scope& root, Output x, Output* batches) {
  Scope s = root.NewSubScope("mean_loss");
  VariableOptions local{.trainable = false, .local = true};
  Variable total, count;
  {
    Graph::ContextOverride outside(s.graph(), nullptr);  // TF's init_scope
    total = Variable(s.WithOpName("total"), Const(s, Tensor::Scalar<double>(0.0)), local);
    count = Variable(s.WithOpName("count"), Const(s, Tensor::Scalar<double>(0.0)), local);
  }
  Output value64 = Cast(s, Sum(s, x), DType::kFloat64);
  Operation update =
      Group(s.WithOpName("update_op"), {AssignAdd(s, total, value64), AssignAdd(s, count, 1.0)});
  Output mean = Div(s.WithOpName("value"), total, Maximum(s, count, 1.0));
  *batches = count;
  return {mean, update};
}

std::unique_ptr<EvalGraph> BuildEvalGraph(Estimator& est, const InputFn& input_fn) {
  auto g = std::make_unique<EvalGraph>();
  g->model = EstimatorInternals::BuildModelGraph(est, input_fn, Mode::kEval);
  const EstimatorSpec& spec = g->model.spec;
  for (const char* reserved : {"loss", "global_step"}) {
    if (spec.eval_metric_ops.count(reserved)) {
      throw InvalidArgument("Metric with name \"", reserved,
                            "\" is not allowed, because the "
                            "Estimator already defines a default metric with the same name");
    }
  }
  Scope root(*g->model.graph);
  MetricOps loss = MeanOverBatches(root, spec.loss, &g->batches);
  g->metric_values["loss"] = loss.value;
  std::vector<Operation> updates = {loss.update_op};
  for (const auto& [name, metric] : spec.eval_metric_ops) {
    g->metric_values[name] = metric.value;
    updates.push_back(metric.update_op);
  }
  g->update_op = Group(root.WithOpName("eval_update_ops"), updates);
  g->scaffold = VariablesOnlyScaffold(spec, est.config().env);
  return g;
}

std::vector<Output> ResultFetches(const EvalGraph& g) {
  std::vector<Output> fetches;
  for (const auto& [name, value] : g.metric_values) fetches.push_back(value);
  fetches.push_back(g.model.global_step);
  fetches.push_back(g.batches);
  return fetches;
}

std::map<std::string, double> ToResults(const EvalGraph& g, const std::vector<Tensor>& values) {
  std::map<std::string, double> results;
  size_t i = 0;
  for (const auto& [name, value] : g.metric_values) results[name] = ScalarToDouble(values[i++]);
  results["global_step"] = static_cast<double>(train::StepValue(values[i++]));
  // TF 1.15 returns such metrics silently.
  if (values[i].scalar<double>() == 0) {
    LOOM_LOG(WARNING) << "Evaluate read no batch from its input_fn (an empty eval set?): every "
                         "metric is over zero examples (loss, accuracy, ... = 0)";
  }
  return results;
}

// The cached path: one Session kept with the graph; a new checkpoint is restored into it.
std::map<std::string, double> RunCached(EvalGraph& g, const data::Dataset& dataset,
                                        const std::string& checkpoint, std::optional<int64_t> steps,
                                        const RunConfig& config) {
  PrepareCachedSession(g.model, *g.scaffold, g.session, g.checkpoint_stamp, dataset, checkpoint,
                       config);
  for (int64_t n = 0; !steps || n < *steps; ++n) {
    try {
      g.session->Run({}, {}, {g.update_op});
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kOutOfRange) throw;
      break;
    }
  }
  return ToResults(g, g.session->Run({}, ResultFetches(g)));
}

// The general path, with hooks (TF's order: input, user, evaluation hooks, then the stop
// and final-ops hooks), through a MonitoredSession.
std::map<std::string, double> RunMonitored(EvalGraph& g, const std::string& checkpoint,
                                           const EvaluateOptions& options,
                                           const RunConfig& config) {
  train::HookList hooks;
  if (g.model.dataset) {
    hooks.push_back(
        std::make_shared<DatasetInitializerHook>(*g.model.dataset, g.model.iterator_resource));
  }
  hooks.insert(hooks.end(), options.hooks.begin(), options.hooks.end());
  hooks.insert(hooks.end(), g.model.spec.evaluation_hooks.begin(),
               g.model.spec.evaluation_hooks.end());
  if (options.steps) hooks.push_back(std::make_shared<StopAfterNEvalsHook>(*options.steps));
  auto final_ops = std::make_shared<train::FinalOpsHook>(ResultFetches(g));
  hooks.push_back(final_ops);
  {
    train::MonitoredSession session(
        train::NewSessionCreator(*g.model.graph, {.scaffold = g.scaffold,
                                                  .checkpoint_filename_with_path = checkpoint,
                                                  .session_options = config.session_config}),
        hooks);
    while (!session.ShouldStop()) session.Run({}, {}, {g.update_op});
    session.Close();
  }
  if (final_ops->final_ops_values().empty()) {
    throw Internal("Evaluate: the final metric values could not be read");
  }
  return ToResults(g, final_ops->final_ops_values());
}

}  // namespace

std::map<std::string, double> Estimator::Evaluate(const InputFn& input_fn,
                                                  EvaluateOptions options) {
  if (options.steps && *options.steps <= 0) {
    throw InvalidArgument(
        "Evaluate: steps must be > 0 (or unset to evaluate until the input "
        "ends), given ",
        *options.steps);
  }
  for (const auto& hook : options.hooks) {
    if (hook == nullptr) throw InvalidArgument("Evaluate: a null hook in options.hooks");
  }
  const std::string checkpoint =
      EstimatorInternals::ResolveCheckpoint(*this, options.checkpoint_path, "Evaluate");
  LOOM_LOG(INFO) << "Evaluating checkpoint " << checkpoint;
  Caches& caches = *caches_;
  const bool cacheable_call = options.hooks.empty();
  std::optional<std::map<std::string, double>> results;
  if (cacheable_call && caches.eval) {
    std::optional<data::Dataset> dataset = EstimatorInternals::ProbeDataset(*this, input_fn);
    if (dataset && SpecsCompatible(caches.eval->model.input_spec, dataset->spec())) {
      results = RunCached(*caches.eval, *dataset, checkpoint, options.steps, config_);
    }
  }
  if (!results) {
    std::unique_ptr<EvalGraph> g = BuildEvalGraph(*this, input_fn);
    const bool cacheable = cacheable_call && g->model.dataset && !g->model.input_built_nodes &&
                           g->model.spec.evaluation_hooks.empty();
    if (cacheable) {
      caches.eval = std::move(g);
      results =
          RunCached(*caches.eval, *caches.eval->model.dataset, checkpoint, options.steps, config_);
    } else {
      results = RunMonitored(*g, checkpoint, options, config_);
    }
  }

  const int64_t step = static_cast<int64_t>((*results)["global_step"]);
  // The eval writer is chief-only work: a replica of a distributed job returns the
  // metrics but never writes model_dir/eval (no two processes write one file).
  if (!config_.is_chief()) return *results;
  const std::string eval_dir =
      JoinPath(config_.model_dir, options.name.empty() ? "eval" : "eval_" + options.name);
  auto& writer = caches.eval_writers[eval_dir];
  if (!writer) writer = train::SharedFileWriter(eval_dir, env());
  proto::Summary summary;
  std::ostringstream text;
  for (const auto& [name, value] : *results) {
    text << (text.tellp() > 0 ? ", " : "") << name << " = " << value;
    if (name == "global_step") continue;  // the event's step, as in TF
    proto::Summary::Value* v = summary.add_value();
    v->set_tag(name);
    v->set_simple_value(static_cast<float>(value));
  }
  writer->AddSummary(summary, step);
  writer->Flush();
  LOOM_LOG(INFO) << "Saving dict for global step " << step << ": " << text.str();
  return *results;
}

}  // namespace loom
