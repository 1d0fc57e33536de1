// OptimizerSpec, the pieces shared by canned model functions, and the linear estimators.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "loom/estimator/canned_internal.h"
#include "loom/train/adagrad.h"
#include "loom/train/adam.h"
#include "loom/train/ftrl.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/momentum.h"
#include "loom/train/rmsprop.h"

namespace loom {

std::unique_ptr<train::Optimizer> OptimizerSpec::Make(const Scope& scope,
                                                      const std::string& default_name,
                                                      double default_learning_rate) const {
  if (factory_) {
    std::unique_ptr<train::Optimizer> optimizer = factory_(scope);
    if (optimizer == nullptr) throw InvalidArgument("optimizer factory returned null");
    return optimizer;
  }
  const std::string& name = name_.empty() ? default_name : name_;
  static const char* const kNames[] = {"Adagrad", "Adam", "Ftrl", "RMSProp", "SGD", "Momentum"};
  if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames)) {
    throw InvalidArgument("unknown optimizer name '", name,
                          "'; use one of Adagrad, Adam, Ftrl, RMSProp, SGD, Momentum, or pass a "
                          "factory returning a train::Optimizer");
  }
  Input lr = learning_rate_.value_or(default_learning_rate);
  if (learning_rate_fn_) {
    Output rate = learning_rate_fn_(scope);
    if (!rate.valid()) {
      throw InvalidArgument("the learning-rate function of optimizer '", name,
                            "' returned an invalid Output");
    }
    lr = rate;
  }
  if (name == "Adagrad")
    return std::make_unique<train::Adagrad>(train::AdagradOptions{.learning_rate = lr});
  if (name == "Adam") return std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = lr});
  if (name == "Ftrl") return std::make_unique<train::Ftrl>(train::FtrlOptions{.learning_rate = lr});
  if (name == "RMSProp")
    return std::make_unique<train::RMSProp>(train::RMSPropOptions{.learning_rate = lr});
  if (name == "SGD") {
    return std::make_unique<train::GradientDescent>(
        train::GradientDescentOptions{.learning_rate = lr});
  }
  return std::make_unique<train::Momentum>(train::MomentumOptions{.learning_rate = lr});
}

namespace canned_internal {

double LinearLearningRate(size_t num_columns) {
  return std::min(0.2, 1.0 / std::sqrt(static_cast<double>(std::max<size_t>(num_columns, 1))));
}

std::shared_ptr<const Head> ClassifierHead(const std::string& estimator, int64_t n_classes,
                                           const std::string& weight_column,
                                           const std::vector<std::string>& label_vocabulary,
                                           losses::Reduction reduction) {
  if (n_classes < 2) {
    throw InvalidArgument(estimator, ": n_classes must be >= 2, got ", n_classes);
  }
  if (n_classes == 2) {
    return BinaryClassHead({.weight_column = weight_column,
                            .label_vocabulary = label_vocabulary,
                            .loss_reduction = reduction});
  }
  return MultiClassHead({.n_classes = n_classes,
                         .weight_column = weight_column,
                         .label_vocabulary = label_vocabulary,
                         .loss_reduction = reduction});
}

Output LinearLogits(const Scope& scope, const Features& features,
                    const std::vector<feature_column::FeatureColumnPtr>& columns, int64_t units,
                    feature_column::Combiner combiner) {
  return feature_column::LinearModel(scope.NewSubScope("linear"), features, columns,
                                     {.units = units, .sparse_combiner = combiner});
}

std::vector<Output> TrainableVariablesUnder(const Graph& graph, const std::string& prefix) {
  std::vector<Output> vars;
  for (Node* node : graph.TrainableVariables()) {
    if (node->name().starts_with(prefix)) vars.push_back(node->output(0));
  }
  return vars;
}

namespace {

struct LinearConfig {
  std::string estimator;
  std::vector<feature_column::FeatureColumnPtr> columns;
  OptimizerSpec optimizer;
  feature_column::Combiner combiner;
};

ModelFn LinearModelFn(LinearConfig config, std::shared_ptr<const Head> head) {
  if (config.columns.empty()) {
    throw InvalidArgument(config.estimator, ": feature_columns is empty");
  }
  return [config = std::move(config), head = std::move(head)](
             Scope& s, const Features& features, Output labels, Mode mode, const Params&,
             const RunConfig& run_config) {
    Output logits =
        LinearLogits(s, features, config.columns, head->logits_dimension(), config.combiner);
    return head->CreateEstimatorSpec(
        s, features, mode, logits, labels, [&](const Scope& ts, Output loss) {
          auto optimizer = DistributeOptimizer(
              run_config,
              config.optimizer.Make(ts, "Ftrl", LinearLearningRate(config.columns.size())));
          return optimizer->Minimize(ts, loss, train::GlobalStep(ts),
                                     TrainableVariablesUnder(ts.graph(), "linear/"));
        });
  };
}

}  // namespace
}  // namespace canned_internal

using namespace canned_internal;

LinearClassifier::LinearClassifier(const LinearClassifierOptions& o, RunConfig config,
                                   std::optional<WarmStartSettings> warm_start_from)
    : Estimator(
          LinearModelFn({"LinearClassifier", o.feature_columns, o.optimizer, o.sparse_combiner},
                        ClassifierHead("LinearClassifier", o.n_classes, o.weight_column,
                                       o.label_vocabulary, o.loss_reduction)),
          std::move(config), {}, std::move(warm_start_from)) {}

LinearRegressor::LinearRegressor(const LinearRegressorOptions& o, RunConfig config,
                                 std::optional<WarmStartSettings> warm_start_from)
    : Estimator(
          LinearModelFn({"LinearRegressor", o.feature_columns, o.optimizer, o.sparse_combiner},
                        RegressionHead({.label_dimension = o.label_dimension,
                                        .weight_column = o.weight_column,
                                        .loss_reduction = o.loss_reduction})),
          std::move(config), {}, std::move(warm_start_from)) {}

}  // namespace loom
