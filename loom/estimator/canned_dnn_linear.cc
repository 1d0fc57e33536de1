// DNNLinearCombinedClassifier / Regressor: wide (linear) and deep (DNN) logits summed, each
// part trained by its own optimizer.
#include "loom/estimator/canned_internal.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/train/global_step.h"

namespace loom {
namespace canned_internal {
namespace {

struct CombinedConfig {
  std::string estimator;
  std::vector<feature_column::FeatureColumnPtr> linear_columns;
  OptimizerSpec linear_optimizer;
  feature_column::Combiner linear_combiner;
  DnnConfig dnn;
  OptimizerSpec dnn_optimizer;
};

ModelFn CombinedModelFn(CombinedConfig config, std::shared_ptr<const Head> head) {
  const bool has_linear = !config.linear_columns.empty();
  const bool has_dnn = !config.dnn.columns.empty();
  if (!has_linear && !has_dnn) {
    throw InvalidArgument(config.estimator,
                          ": linear_feature_columns and dnn_feature_columns are both empty");
  }
  if (has_dnn) ValidateDnn(config.estimator, config.dnn);
  return [config = std::move(config), head = std::move(head), has_linear, has_dnn](
             Scope& s, const Features& features, Output labels, Mode mode, const Params&,
             const RunConfig& run_config) {
    const int64_t units = head->logits_dimension();
    Output logits;
    if (has_dnn) logits = DnnLogits(s, features, config.dnn, units, mode, run_config.precision);
    if (has_linear) {
      Output linear =
          LinearLogits(s, features, config.linear_columns, units, config.linear_combiner);
      logits = logits.valid() ? Add(s.WithOpName("add_logits"), logits, linear) : linear;
    }
    return head->CreateEstimatorSpec(
        s, features, mode, logits, labels, [&](const Scope& ts, Output loss) {
          const Graph& graph = ts.graph();
          std::vector<Output> linear_vars = TrainableVariablesUnder(graph, "linear/");
          std::vector<Output> dnn_vars = TrainableVariablesUnder(graph, "dnn/");
          std::vector<Operation> updates;
          std::unique_ptr<train::Optimizer> linear_opt, dnn_opt;
          if (has_linear) {
            linear_opt = DistributeOptimizer(
                run_config, config.linear_optimizer.Make(
                                ts, "Ftrl", LinearLearningRate(config.linear_columns.size())));
            updates.push_back(linear_opt->Minimize(ts, loss, Output(), linear_vars));
          }
          if (has_dnn) {
            dnn_opt = DistributeOptimizer(
                run_config, config.dnn_optimizer.Make(ts, "Adagrad", kDnnLearningRate));
            updates.push_back(dnn_opt->Minimize(ts, loss, Output(), dnn_vars));
            updates.push_back(layers::UpdateOp(ts));  // batch-norm moving statistics
          }
          // One global step per step, after both parts have updated (TF's order).
          Scope after = ts.WithControlDependencies(updates);
          return Operation(AssignAdd(after.WithOpName("global_step_increment"),
                                     train::GlobalStep(ts), int64_t{1}));
        });
  };
}

}  // namespace
}  // namespace canned_internal

using namespace canned_internal;

DNNLinearCombinedClassifier::DNNLinearCombinedClassifier(
    DNNLinearCombinedClassifierOptions o, RunConfig config,
    std::optional<WarmStartSettings> warm_start_from)
    : Estimator(
          CombinedModelFn({"DNNLinearCombinedClassifier",
                           o.linear_feature_columns,
                           o.linear_optimizer,
                           o.linear_sparse_combiner,
                           {o.dnn_hidden_units, o.dnn_feature_columns, o.dnn_activation_fn,
                            o.dnn_dropout, o.batch_norm},
                           o.dnn_optimizer},
                          ClassifierHead("DNNLinearCombinedClassifier", o.n_classes,
                                         o.weight_column, o.label_vocabulary, o.loss_reduction)),
          std::move(config), {}, std::move(warm_start_from)) {}

DNNLinearCombinedRegressor::DNNLinearCombinedRegressor(
    DNNLinearCombinedRegressorOptions o, RunConfig config,
    std::optional<WarmStartSettings> warm_start_from)
    : Estimator(CombinedModelFn({"DNNLinearCombinedRegressor",
                                 o.linear_feature_columns,
                                 o.linear_optimizer,
                                 o.linear_sparse_combiner,
                                 {o.dnn_hidden_units, o.dnn_feature_columns, o.dnn_activation_fn,
                                  o.dnn_dropout, o.batch_norm},
                                 o.dnn_optimizer},
                                RegressionHead({.label_dimension = o.label_dimension,
                                                .weight_column = o.weight_column,
                                                .loss_reduction = o.loss_reduction})),
                std::move(config), {}, std::move(warm_start_from)) {}

}  // namespace loom
