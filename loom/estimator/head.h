#ifndef LOOM_ESTIMATOR_HEAD_H_
#define LOOM_ESTIMATOR_HEAD_H_

// Heads: the part of a canned model function after the logits, TF's tf.estimator heads —
// the loss, the predictions, the evaluation metrics and the EstimatorSpec for each mode.
//
//   auto head = loom::BinaryClassHead();
//   Output logits = ...;                         // [batch, head->logits_dimension()]
//   return head->CreateEstimatorSpec(s, features, mode, logits, labels,
//       [](const Scope& s, Output loss) { return train::Adagrad({}).Minimize(s, loss, ...); });
//
// Labels are [batch] or [batch, d]:
//   binary       0/1 (any numeric or bool dtype), or strings of label_vocabulary (2 entries);
//   multi-class  int32/int64 class ids in [0, n_classes) (an id outside fails at run time
//                naming it), or strings of label_vocabulary (an unknown one fails naming it);
//   regression   any numeric dtype, [batch] or [batch, label_dimension].
// Per-example loss (TF's unreduced loss, [batch, 1] or [batch, d]): sigmoid cross-entropy,
// softmax cross-entropy, squared error. The training loss reduces it with the weights of
// `weight_column` (a numeric feature, [batch] or [batch, 1]) by loss_reduction.
//
// Predictions (keys as TF):
//   binary       logits [b,1], logistic [b,1], probabilities [b,2], class_ids int64 [b,1],
//                classes string [b,1] (label_vocabulary entry, or "0"/"1");
//   multi-class  logits [b,n], probabilities [b,n], class_ids int64 [b,1], classes string [b,1];
//   regression   predictions [b,d].
// Eval metrics (besides the Estimator's "loss"):
//   binary       accuracy, accuracy_baseline, auc, auc_precision_recall, precision, recall,
//                average_loss, label/mean, prediction/mean;
//   multi-class  accuracy, average_loss;
//   regression   average_loss, label/mean, prediction/mean.
// Export signatures: "serving_default" and "classification" (scores = probabilities,
// classes) or "regression" (label_dimension 1), and "predict" (every prediction).
// Heads are immutable and may be shared by model functions and threads.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/estimator/estimator_spec.h"
#include "loom/estimator/losses.h"
#include "loom/estimator/mode.h"
#include "loom/graph/op_def.h"

namespace loom {

// Builds the train op from the training loss (e.g. optimizer.Minimize with the global step).
using TrainOpFn = std::function<Operation(const Scope&, Output loss)>;

struct HeadLoss {
  // The scalar the optimizer minimizes (weighted and reduced).
  Output training_loss;
  // Per-example loss before weighting: [batch, 1] (classification) or [batch, d].
  Output unreduced_loss;
  // Per-example weights broadcastable to unreduced_loss; invalid without a weight column.
  Output weights;
  // The labels as the loss uses them: float32 [batch, 1] (binary), int64 [batch]
  // (multi-class), float32 [batch, d] (regression).
  Output labels;
};

class Head {
 public:
  virtual ~Head() = default;
  // The width of the logits the model must produce.
  virtual int64_t logits_dimension() const = 0;
  // "binary_classification_head", "multi_class_head", "regression_head".
  virtual std::string name() const = 0;

  virtual Predictions CreatePredictions(const Scope& scope, Output logits) const = 0;
  // Throws InvalidArgument naming the head for labels of the wrong dtype or width, or a
  // missing weight column.
  virtual HeadLoss CreateLoss(const Scope& scope, const Features& features, Output logits,
                              Output labels) const = 0;
  virtual std::map<std::string, MetricOps> CreateEvalMetrics(const Scope& scope,
                                                             const Predictions& predictions,
                                                             const HeadLoss& loss) const = 0;
  virtual std::map<std::string, ExportOutput> CreateExportOutputs(
      const Predictions& predictions) const = 0;

  // The whole spec for `mode`: predictions (and export outputs) in kPredict; plus loss and
  // metrics in kEval; plus loss and train_op_fn's op in kTrain. Ops go under a "head" scope.
  // REQUIRES: labels valid except in kPredict; train_op_fn set in kTrain.
  EstimatorSpec CreateEstimatorSpec(const Scope& scope, const Features& features, Mode mode,
                                    Output logits, Output labels,
                                    const TrainOpFn& train_op_fn) const;
};

struct BinaryClassHeadOptions {
  // A numeric feature holding per-example weights. Default: "", all weights 1.
  std::string weight_column;
  // The two label strings (negative first). Default: empty, labels are 0/1 numbers.
  std::vector<std::string> label_vocabulary;
  // Default: kSumOverBatchSize, the mean over the batch (TF 2's canned default; TF 1's
  // kSum makes the loss, and an SGD step, grow with the batch size).
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;
};
std::shared_ptr<const Head> BinaryClassHead(BinaryClassHeadOptions options = {});

struct MultiClassHeadOptions {
  // REQUIRES: > 2 (use BinaryClassHead for 2).
  int64_t n_classes = 0;
  std::string weight_column;  // Default: ""
  // n_classes label strings. Default: empty, labels are class ids.
  std::vector<std::string> label_vocabulary;
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;  // Default: as above
};
std::shared_ptr<const Head> MultiClassHead(MultiClassHeadOptions options);

struct RegressionHeadOptions {
  // Values predicted per example. Default: 1.
  int64_t label_dimension = 1;
  std::string weight_column;                                                // Default: ""
  losses::Reduction loss_reduction = losses::Reduction::kSumOverBatchSize;  // Default: as above
};
std::shared_ptr<const Head> RegressionHead(RegressionHeadOptions options = {});

}  // namespace loom

#endif  // LOOM_ESTIMATOR_HEAD_H_
