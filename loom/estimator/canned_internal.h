#ifndef LOOM_ESTIMATOR_CANNED_INTERNAL_H_
#define LOOM_ESTIMATOR_CANNED_INTERNAL_H_

// Pieces shared by the canned estimators' model functions; not part of the public API.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/estimator/canned.h"

namespace loom::canned_internal {

// TF's _LEARNING_RATE for DNNs (Adagrad).
inline constexpr double kDnnLearningRate = 0.05;
// TF's _linear_learning_rate: min(0.2, 1 / sqrt(num_columns)).
double LinearLearningRate(size_t num_columns);

// BinaryClassHead for 2 classes, MultiClassHead for more. Throws InvalidArgument for < 2.
std::shared_ptr<const Head> ClassifierHead(const std::string& estimator, int64_t n_classes,
                                           const std::string& weight_column,
                                           const std::vector<std::string>& label_vocabulary,
                                           losses::Reduction reduction);

// The linear part: LinearModel under "<scope>/linear", logits [batch, units].
Output LinearLogits(const Scope& scope, const Features& features,
                    const std::vector<feature_column::FeatureColumnPtr>& columns, int64_t units,
                    feature_column::Combiner combiner);

struct DnnConfig {
  std::vector<int64_t> hidden_units;
  std::vector<feature_column::DenseColumnPtr> columns;
  layers::Activation activation;
  std::optional<double> dropout;
  bool batch_norm = false;
};
// Throws InvalidArgument naming `estimator` for empty hidden units or columns, a unit
// count <= 0 or a dropout outside [0, 1).
void ValidateDnn(const std::string& estimator, const DnnConfig& config);
// The DNN part under "<scope>/dnn": input layer, hidden layers, logits [batch, units].
// `precision`: the Dense layers' (RunConfig::precision).
Output DnnLogits(const Scope& scope, const Features& features, const DnnConfig& config,
                 int64_t units, Mode mode, Precision precision);

// Trainable variables whose names start with `prefix` ("linear/", "dnn/").
std::vector<Output> TrainableVariablesUnder(const Graph& graph, const std::string& prefix);

}  // namespace loom::canned_internal

#endif  // LOOM_ESTIMATOR_CANNED_INTERNAL_H_
