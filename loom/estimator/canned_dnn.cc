// The DNN part of canned model functions, and DNNClassifier / DNNRegressor.
#include "loom/base/strcat.h"
#include "loom/estimator/canned_internal.h"
#include "loom/ops/state.h"
#include "loom/train/global_step.h"

namespace loom {
namespace canned_internal {

void ValidateDnn(const std::string& estimator, const DnnConfig& config) {
  if (config.columns.empty()) throw InvalidArgument(estimator, ": feature_columns is empty");
  if (config.hidden_units.empty()) {
    throw InvalidArgument(estimator, ": hidden_units is empty; give at least one layer size");
  }
  for (size_t i = 0; i < config.hidden_units.size(); ++i) {
    if (config.hidden_units[i] <= 0) {
      throw InvalidArgument(estimator, ": hidden_units[", i, "] is ", config.hidden_units[i],
                            "; sizes must be > 0");
    }
  }
  if (config.dropout && (*config.dropout < 0 || *config.dropout >= 1)) {
    throw InvalidArgument(estimator, ": dropout must be in [0, 1), got ", *config.dropout);
  }
}

Output DnnLogits(const Scope& scope, const Features& features, const DnnConfig& config,
                 int64_t units, Mode mode, Precision precision) {
  const bool training = mode == Mode::kTrain;
  Scope dnn = scope.NewSubScope("dnn");
  Output net = feature_column::InputLayer(dnn.NewSubScope("input_from_feature_columns"), features,
                                          config.columns);
  for (size_t i = 0; i < config.hidden_units.size(); ++i) {
    net = layers::Dense(dnn, net,
                        {.units = config.hidden_units[i],
                         .activation = config.activation,
                         .name = StrCat("hiddenlayer_", i),
                         .precision = precision});
    if (config.dropout && *config.dropout > 0 && training) {
      net = layers::Dropout(dnn, net, {.rate = *config.dropout, .training = true});
    }
    if (config.batch_norm) {
      net = layers::BatchNormalization(
          dnn, net, {.momentum = 0.999, .training = training, .name = StrCat("batchnorm_", i)});
    }
  }
  return layers::Dense(dnn, net, {.units = units, .name = "logits", .precision = precision});
}

namespace {

ModelFn DnnModelFn(const std::string& estimator, DnnConfig config, OptimizerSpec optimizer,
                   std::shared_ptr<const Head> head) {
  ValidateDnn(estimator, config);
  return [config = std::move(config), optimizer = std::move(optimizer), head = std::move(head)](
             Scope& s, const Features& features, Output labels, Mode mode, const Params&,
             const RunConfig& run_config) {
    Output logits =
        DnnLogits(s, features, config, head->logits_dimension(), mode, run_config.precision);
    return head->CreateEstimatorSpec(
        s, features, mode, logits, labels, [&](const Scope& ts, Output loss) {
          auto opt =
              DistributeOptimizer(run_config, optimizer.Make(ts, "Adagrad", kDnnLearningRate));
          Operation minimize = opt->Minimize(ts, loss, train::GlobalStep(ts),
                                             TrainableVariablesUnder(ts.graph(), "dnn/"));
          // Batch-norm moving statistics update with every step (TF's UPDATE_OPS). Grouped
          // rather than made control inputs of Minimize, which would also gate the
          // optimizer's slot variables and their initializers.
          return Group(ts.WithOpName("train_op"), {minimize, layers::UpdateOp(ts)});
        });
  };
}

}  // namespace
}  // namespace canned_internal

using namespace canned_internal;

DNNClassifier::DNNClassifier(const DNNClassifierOptions& o, RunConfig config,
                             std::optional<WarmStartSettings> warm_start_from)
    : Estimator(
          DnnModelFn("DNNClassifier",
                     {o.hidden_units, o.feature_columns, o.activation_fn, o.dropout, o.batch_norm},
                     o.optimizer,
                     ClassifierHead("DNNClassifier", o.n_classes, o.weight_column,
                                    o.label_vocabulary, o.loss_reduction)),
          std::move(config), {}, std::move(warm_start_from)) {}

DNNRegressor::DNNRegressor(const DNNRegressorOptions& o, RunConfig config,
                           std::optional<WarmStartSettings> warm_start_from)
    : Estimator(
          DnnModelFn("DNNRegressor",
                     {o.hidden_units, o.feature_columns, o.activation_fn, o.dropout, o.batch_norm},
                     o.optimizer,
                     RegressionHead({.label_dimension = o.label_dimension,
                                     .weight_column = o.weight_column,
                                     .loss_reduction = o.loss_reduction})),
          std::move(config), {}, std::move(warm_start_from)) {}

}  // namespace loom
