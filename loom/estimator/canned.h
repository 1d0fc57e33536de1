#ifndef LOOM_ESTIMATOR_CANNED_H_
#define LOOM_ESTIMATOR_CANNED_H_

// Canned estimators, TF1's tf.estimator.LinearClassifier & co.: Estimators whose model
// function is built from feature columns (feature_column.h) and a head (head.h). Each is
// an Estimator, so Train / Evaluate / Predict / ExportSavedModel work as documented there.
//
//   namespace fc = loom::feature_column;
//   loom::DNNClassifier classifier(
//       {.hidden_units = {256, 128},
//        .feature_columns = {fc::NumericColumn("x", {.shape = {784}})},
//        .n_classes = 10,
//        .optimizer = loom::OptimizerSpec("Adam", 1e-3)},
//       {.model_dir = "runs/dnn"});
//   classifier.Train(train_input_fn, {.max_steps = 5000});
//   auto metrics = classifier.Evaluate(eval_input_fn);   // accuracy, average_loss, loss, ...
//
// Heads: n_classes 2 is BinaryClassHead, more is MultiClassHead; regressors use
// RegressionHead. Variables are named as TF names them: "linear/linear_model/<column>/weights",
// "linear/linear_model/bias_weights", "dnn/hiddenlayer_<i>/kernel", "dnn/logits/bias",
// "dnn/input_from_feature_columns/input_layer/<column>/embedding_weights".
// Each takes TF's warm_start_from as its last argument (warm_start.h; a TF checkpoint
// works, see docs/estimator.md for which of a TF canned model's variables map).
// Differences from TF 1.15: loss_reduction defaults to kSumOverBatchSize (TF 1: kSum; see
// head.h); no partitioners; hashing differs (feature_column.h).
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/estimator/estimator.h"
#include "loom/estimator/feature_column.h"
#include "loom/estimator/head.h"
#include "loom/estimator/layers.h"
#include "loom/ops/nn.h"
#include "loom/train/optimizer.h"

namespace loom {

// The optimizer of a canned estimator, TF's `optimizer` argument: TF's short name
// ("Adagrad", "Adam", "Ftrl", "RMSProp", "SGD"; "Momentum" too) with an optional learning
// rate, or a factory. The learning rate is a number or a function that builds it in the
// model's graph: a schedule of the global step, as TF's
// `learning_rate=tf.train.exponential_decay(..., tf.train.get_global_step())`. A factory
// makes a new optimizer for each graph the Estimator builds (optimizers hold per-graph
// slots); it may take the model function's Scope, as TF's optimizer callable is called
// inside the model function, to build hyperparameters such as a schedule in that graph.
// Functions and factories run once per training graph, while the model function builds it.
//   .optimizer = "Adam"                        // the estimator's default learning rate
//   .optimizer = loom::OptimizerSpec("Adam", 1e-3)
//   .optimizer = loom::OptimizerSpec("Adam", [](const loom::Scope& s) {
//     return loom::train::ExponentialDecay(s, 1e-3, loom::train::GlobalStep(s),
//                                          /*decay_steps=*/1000, /*decay_rate=*/0.96);
//   })
//   .optimizer = [](const loom::Scope& s) {
//     loom::Output lr = loom::train::ExponentialDecay(s, 0.1, loom::train::GlobalStep(s), 1000,
//                                                     0.96);
//     return std::make_unique<loom::train::Momentum>(
//         loom::train::MomentumOptions{.learning_rate = lr, .momentum = 0.95});
//   }
//   .optimizer = [] { return std::make_unique<loom::train::Momentum>(
//                         loom::train::MomentumOptions{.learning_rate = 0.1}); }
class OptimizerSpec {
 public:
  // Builds the learning rate (a float scalar) in the given graph.
  using LearningRateFn = std::function<Output(const Scope&)>;
  using Factory = std::function<std::unique_ptr<train::Optimizer>(const Scope&)>;

  // The estimator's default optimizer.
  OptimizerSpec() = default;
  OptimizerSpec(const char* name) : name_(name) {}
  OptimizerSpec(std::string name) : name_(std::move(name)) {}
  OptimizerSpec(std::string name, double learning_rate)
      : name_(std::move(name)), learning_rate_(learning_rate) {}
  OptimizerSpec(std::string name, LearningRateFn learning_rate)
      : name_(std::move(name)), learning_rate_fn_(std::move(learning_rate)) {}
  // A factory taking the model function's Scope.
  template <typename F>
  requires std::invocable<F&, const Scope&> &&
      std::convertible_to<std::invoke_result_t<F&, const Scope&>, std::unique_ptr<train::Optimizer>>
      OptimizerSpec(F factory)
      : factory_([f = std::move(factory)](const Scope& scope) mutable
                 -> std::unique_ptr<train::Optimizer> { return f(scope); }) {}
  // A factory taking nothing.
  template <typename F>
  requires std::invocable<F&> &&
      std::convertible_to<std::invoke_result_t<F&>, std::unique_ptr<train::Optimizer>>
      OptimizerSpec(F factory)
      : factory_([f = std::move(factory)](
                     const Scope&) mutable -> std::unique_ptr<train::Optimizer> { return f(); }) {}

  // A new optimizer for the graph of `scope` (the model function's): the factory's, or by
  // name (unset: `default_name`) with the learning rate given, built under `scope` when it
  // is a function (unset: `default_learning_rate`). Throws InvalidArgument for an unknown
  // name, listing the known ones, a factory returning null and a learning-rate function
  // returning an invalid Output.
  std::unique_ptr<train::Optimizer> Make(const Scope& scope, const std::string& default_name,
                                         double default_learning_rate) const;

 private:
  std::string name_;
  std::optional<double> learning_rate_;
  LearningRateFn learning_rate_fn_;
  Factory factory_;
};

// ---- linear ---------------------------------------------------------------------------------

struct LinearClassifierOptions {
  // Dense or categorical columns. REQUIRES: non-empty.
  std::vector<feature_column::FeatureColumnPtr> feature_columns;
  // Default: 2 (binary).
  int64_t n_classes = 2;
  // A numeric feature of per-example weights. Default: "", none.
  std::string weight_column;
  // Label strings (see head.h). Default: empty, integer labels.
  std::vector<std::string> label_vocabulary;
  // Default: "Ftrl" with learning rate min(0.2, 1 / sqrt(number of columns)), as TF.
  OptimizerSpec optimizer;
  // Default: kSum (TF's).
  feature_column::Combiner sparse_combiner = feature_column::Combiner::kSum;
  // Default: kSumOverBatchSize (see the header comment).
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;
};

class LinearClassifier : public Estimator {
 public:
  explicit LinearClassifier(const LinearClassifierOptions& options, RunConfig config = {},
                            std::optional<WarmStartSettings> warm_start_from = std::nullopt);
};

struct LinearRegressorOptions {
  std::vector<feature_column::FeatureColumnPtr> feature_columns;  // REQUIRES: non-empty
  int64_t label_dimension = 1;                                    // Default: 1
  std::string weight_column;                                      // Default: ""
  OptimizerSpec optimizer;  // Default: "Ftrl", lr min(0.2, 1 / sqrt(columns))
  feature_column::Combiner sparse_combiner = feature_column::Combiner::kSum;  // Default: kSum
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;    // Default: as above
};

class LinearRegressor : public Estimator {
 public:
  explicit LinearRegressor(const LinearRegressorOptions& options, RunConfig config = {},
                           std::optional<WarmStartSettings> warm_start_from = std::nullopt);
};

// ---- DNN ------------------------------------------------------------------------------------

struct DNNClassifierOptions {
  // Units of each hidden layer, e.g. {64, 32}. REQUIRES: non-empty, each > 0.
  std::vector<int64_t> hidden_units;
  // Dense columns (wrap categorical ones in IndicatorColumn / EmbeddingColumn).
  // REQUIRES: non-empty.
  std::vector<feature_column::DenseColumnPtr> feature_columns;
  int64_t n_classes = 2;                      // Default: 2
  std::string weight_column;                  // Default: ""
  std::vector<std::string> label_vocabulary;  // Default: empty
  // Default: "Adagrad" with learning rate 0.05, as TF.
  OptimizerSpec optimizer;
  // Of each hidden layer. Default: loom::Relu.
  layers::Activation activation_fn = Relu;
  // Fraction of each hidden layer's units dropped in training. Default: unset, none.
  std::optional<double> dropout;
  // Batch normalization after each hidden layer (TF's order: dense with activation,
  // dropout, batch norm with momentum 0.999). Default: false.
  bool batch_norm = false;
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;  // Default: as above
};

class DNNClassifier : public Estimator {
 public:
  explicit DNNClassifier(const DNNClassifierOptions& options, RunConfig config = {},
                         std::optional<WarmStartSettings> warm_start_from = std::nullopt);
};

struct DNNRegressorOptions {
  std::vector<int64_t> hidden_units;                            // REQUIRES: non-empty
  std::vector<feature_column::DenseColumnPtr> feature_columns;  // REQUIRES: non-empty
  int64_t label_dimension = 1;                                  // Default: 1
  std::string weight_column;                                    // Default: ""
  OptimizerSpec optimizer;                                      // Default: "Adagrad", lr 0.05
  layers::Activation activation_fn = Relu;                      // Default: loom::Relu
  std::optional<double> dropout;                                // Default: unset
  bool batch_norm = false;                                      // Default: false
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;  // Default: as above
};

class DNNRegressor : public Estimator {
 public:
  explicit DNNRegressor(const DNNRegressorOptions& options, RunConfig config = {},
                        std::optional<WarmStartSettings> warm_start_from = std::nullopt);
};

// ---- wide & deep ----------------------------------------------------------------------------

// The logits are the sum of a linear model's and a DNN's; each part is trained by its own
// optimizer on its own variables, and the global step advances once per step. At least one
// of the two column lists must be non-empty (an empty part is left out, as TF).
struct DNNLinearCombinedClassifierOptions {
  std::vector<feature_column::FeatureColumnPtr> linear_feature_columns;  // Default: empty
  // Default: "Ftrl", lr min(0.2, 1 / sqrt(linear columns)).
  OptimizerSpec linear_optimizer;
  std::vector<feature_column::DenseColumnPtr> dnn_feature_columns;  // Default: empty
  OptimizerSpec dnn_optimizer;                                      // Default: "Adagrad", lr 0.05
  std::vector<int64_t> dnn_hidden_units;        // REQUIRES: non-empty with dnn columns
  layers::Activation dnn_activation_fn = Relu;  // Default: loom::Relu
  std::optional<double> dnn_dropout;            // Default: unset
  bool batch_norm = false;                      // Default: false
  int64_t n_classes = 2;                        // Default: 2
  std::string weight_column;                    // Default: ""
  std::vector<std::string> label_vocabulary;    // Default: empty
  feature_column::Combiner linear_sparse_combiner =
      feature_column::Combiner::kSum;                                       // Default: kSum
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;  // Default: as above
};

class DNNLinearCombinedClassifier : public Estimator {
 public:
  explicit DNNLinearCombinedClassifier(
      DNNLinearCombinedClassifierOptions options, RunConfig config = {},
      std::optional<WarmStartSettings> warm_start_from = std::nullopt);
};

struct DNNLinearCombinedRegressorOptions {
  std::vector<feature_column::FeatureColumnPtr> linear_feature_columns;  // Default: empty
  OptimizerSpec linear_optimizer;                                   // Default: "Ftrl" (as above)
  std::vector<feature_column::DenseColumnPtr> dnn_feature_columns;  // Default: empty
  OptimizerSpec dnn_optimizer;                                      // Default: "Adagrad", lr 0.05
  std::vector<int64_t> dnn_hidden_units;        // REQUIRES: non-empty with dnn columns
  layers::Activation dnn_activation_fn = Relu;  // Default: loom::Relu
  std::optional<double> dnn_dropout;            // Default: unset
  bool batch_norm = false;                      // Default: false
  int64_t label_dimension = 1;                  // Default: 1
  std::string weight_column;                    // Default: ""
  feature_column::Combiner linear_sparse_combiner =
      feature_column::Combiner::kSum;                                       // Default: kSum
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;  // Default: as above
};

class DNNLinearCombinedRegressor : public Estimator {
 public:
  explicit DNNLinearCombinedRegressor(
      DNNLinearCombinedRegressorOptions options, RunConfig config = {},
      std::optional<WarmStartSettings> warm_start_from = std::nullopt);
};

}  // namespace loom

#endif  // LOOM_ESTIMATOR_CANNED_H_
