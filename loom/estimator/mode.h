#ifndef LOOM_ESTIMATOR_MODE_H_
#define LOOM_ESTIMATOR_MODE_H_

// The mode a model function builds its graph for: TF1's tf.estimator.ModeKeys.
//   kTrain    Estimator::Train: the spec needs loss and train_op.
//   kEval     Estimator::Evaluate: the spec needs loss; eval_metric_ops are computed.
//   kPredict  Estimator::Predict and ExportSavedModel: the spec needs predictions.
#include <string_view>

namespace loom {

enum class Mode { kTrain, kEval, kPredict };

// TF's ModeKeys strings: "train", "eval", "infer".
constexpr std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kTrain:
      return "train";
    case Mode::kEval:
      return "eval";
    case Mode::kPredict:
      return "infer";
  }
  return "?";
}

}  // namespace loom

#endif  // LOOM_ESTIMATOR_MODE_H_
