// Estimator::Predict (TF's predict generator): a PredictionRange over a cached session or
// a MonitoredSession of its own.
#include <functional>

#include "loom/base/logging.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/train/monitored_session.h"

namespace loom {
namespace {

using Fetches = std::vector<std::pair<std::string, Output>>;

Fetches SelectPredictions(const Predictions& predictions, const std::vector<std::string>& keys) {
  Fetches fetches;
  if (keys.empty()) {
    for (const auto& [key, output] : predictions) fetches.emplace_back(key, output);
    return fetches;
  }
  for (const std::string& key : keys) {
    auto it = predictions.find(key);
    if (it == predictions.end()) {
      std::string names;
      for (const auto& [name, o] : predictions) names += (names.empty() ? "" : ", ") + name;
      throw InvalidArgument("Predict: predict_keys names '", key,
                            "', which is not a prediction of the model; it has {", names, "}");
    }
    fetches.emplace_back(key, it->second);
  }
  return fetches;
}

Prediction ToPrediction(const Fetches& fetches, std::vector<Tensor> values) {
  Prediction p;
  for (size_t i = 0; i < fetches.size(); ++i) p[fetches[i].first] = std::move(values[i]);
  return p;
}

std::vector<Output> Outputs(const Fetches& fetches) {
  std::vector<Output> out;
  for (const auto& [key, o] : fetches) out.push_back(o);
  return out;
}

// Batches from the cached graph's session; holds the cache entry while alive, so a second
// Predict meanwhile builds a graph of its own.
class CachedSource : public PredictionSource {
 public:
  CachedSource(std::shared_ptr<PredictGraph> g, Fetches fetches)
      : g_(std::move(g)), fetches_(std::move(fetches)), outputs_(Outputs(fetches_)) {}
  std::optional<Prediction> NextBatch() override {
    try {
      return ToPrediction(fetches_, g_->session->Run({}, outputs_));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kOutOfRange) throw;
      return std::nullopt;
    }
  }

 private:
  std::shared_ptr<PredictGraph> g_;
  Fetches fetches_;
  std::vector<Output> outputs_;
};

// Batches from a MonitoredSession with the prediction hooks; owns the graph.
class MonitoredSource : public PredictionSource {
 public:
  MonitoredSource(std::unique_ptr<PredictGraph> g, Fetches fetches,
                  std::unique_ptr<train::MonitoredSession> session)
      : g_(std::move(g)),
        fetches_(std::move(fetches)),
        outputs_(Outputs(fetches_)),
        session_(std::move(session)) {}
  ~MonitoredSource() override { session_.reset(); }  // End hooks run before the graph goes

  std::optional<Prediction> NextBatch() override {
    if (!session_ || session_->ShouldStop()) return Finish();
    std::vector<Tensor> values = session_->Run({}, outputs_);
    if (values.empty()) return Finish();  // end of input
    return ToPrediction(fetches_, std::move(values));
  }

 private:
  std::optional<Prediction> Finish() {
    if (session_) session_->Close();
    session_.reset();
    return std::nullopt;
  }

  std::unique_ptr<PredictGraph> g_;
  Fetches fetches_;
  std::vector<Output> outputs_;
  std::unique_ptr<train::MonitoredSession> session_;
};

// TF's predict is a generator: its body runs at the first next(). This source runs
// `start` (everything Predict does) at the first NextBatch, then delegates to what it made.
class DeferredSource : public PredictionSource {
 public:
  explicit DeferredSource(std::function<std::unique_ptr<PredictionSource>()> start)
      : start_(std::move(start)) {}
  std::optional<Prediction> NextBatch() override {
    if (!source_) {
      auto start = std::move(start_);
      start_ = nullptr;
      source_ = start();
    }
    return source_->NextBatch();
  }

 private:
  std::function<std::unique_ptr<PredictionSource>()> start_;
  std::unique_ptr<PredictionSource> source_;
};

std::unique_ptr<PredictGraph> BuildPredictGraph(Estimator& est, const InputFn& input_fn) {
  auto g = std::make_unique<PredictGraph>();
  g->model = EstimatorInternals::BuildModelGraph(est, input_fn, Mode::kPredict);
  g->scaffold = VariablesOnlyScaffold(g->model.spec, est.config().env);
  return g;
}

}  // namespace

PredictionRange Estimator::Predict(const InputFn& input_fn, PredictOptions options) {
  const bool single = options.yield_single_examples;
  std::weak_ptr<Caches> alive = caches_;
  auto start = [this, alive, input_fn, options = std::move(options)]() {
    if (alive.expired()) {
      throw FailedPrecondition(
          "Predict: the Estimator was destroyed before the first "
          "prediction was requested; keep it alive until iteration starts");
    }
    return StartPredict(input_fn, options);
  };
  return PredictionRange(std::make_unique<DeferredSource>(std::move(start)), single);
}

std::unique_ptr<PredictionSource> Estimator::StartPredict(const InputFn& input_fn,
                                                          const PredictOptions& options) {
  for (const auto& hook : options.hooks) {
    if (hook == nullptr) throw InvalidArgument("Predict: a null hook in options.hooks");
  }
  const std::string checkpoint =
      EstimatorInternals::ResolveCheckpoint(*this, options.checkpoint_path, "Predict");
  Caches& caches = *caches_;
  // The cache entry is free when nothing but the cache holds it.
  const bool cacheable_call = options.hooks.empty();
  const bool cache_free = caches.predict && caches.predict.use_count() == 1;
  if (cacheable_call && cache_free) {
    std::optional<data::Dataset> dataset = EstimatorInternals::ProbeDataset(*this, input_fn);
    if (dataset && SpecsCompatible(caches.predict->model.input_spec, dataset->spec())) {
      Fetches fetches =
          SelectPredictions(caches.predict->model.spec.predictions, options.predict_keys);
      PredictGraph& p = *caches.predict;
      PrepareCachedSession(p.model, *p.scaffold, p.session, p.checkpoint_stamp, *dataset,
                           checkpoint, config_);
      return std::make_unique<CachedSource>(caches.predict, std::move(fetches));
    }
  }
  std::unique_ptr<PredictGraph> g = BuildPredictGraph(*this, input_fn);
  Fetches fetches = SelectPredictions(g->model.spec.predictions, options.predict_keys);
  const bool cacheable = cacheable_call && (cache_free || !caches.predict) && g->model.dataset &&
                         !g->model.input_built_nodes && g->model.spec.prediction_hooks.empty();
  if (cacheable) {
    caches.predict = std::shared_ptr<PredictGraph>(std::move(g));
    PredictGraph& p = *caches.predict;
    PrepareCachedSession(p.model, *p.scaffold, p.session, p.checkpoint_stamp, *p.model.dataset,
                         checkpoint, config_);
    return std::make_unique<CachedSource>(caches.predict, std::move(fetches));
  }
  train::HookList hooks;
  if (g->model.dataset) {
    hooks.push_back(
        std::make_shared<DatasetInitializerHook>(*g->model.dataset, g->model.iterator_resource));
  }
  hooks.insert(hooks.end(), options.hooks.begin(), options.hooks.end());
  hooks.insert(hooks.end(), g->model.spec.prediction_hooks.begin(),
               g->model.spec.prediction_hooks.end());
  auto session = std::make_unique<train::MonitoredSession>(
      train::NewSessionCreator(*g->model.graph, {.scaffold = g->scaffold,
                                                 .checkpoint_filename_with_path = checkpoint,
                                                 .session_options = config_.session_config}),
      std::move(hooks));
  return std::make_unique<MonitoredSource>(std::move(g), std::move(fetches), std::move(session));
}

}  // namespace loom
