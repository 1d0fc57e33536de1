#ifndef LOOM_ESTIMATOR_LOSSES_H_
#define LOOM_ESTIMATOR_LOSSES_H_

// Losses for model functions, TF1's tf.losses: a per-element loss, multiplied by
// `weights` (a scalar or a tensor broadcastable to the per-element loss), then reduced.
//
//   auto loss = loom::losses::SparseSoftmaxCrossEntropy(s, labels, logits);
//   auto loss = loom::losses::MeanSquaredError(s, labels, predictions,
//                                              {.weights = w, .reduction = Reduction::kMean});
//
// Reductions (tf.losses.Reduction); with L the weighted per-element losses and W the
// weights broadcast to L's shape:
//   kNone                  L itself.
//   kSum                   sum(L).
//   kMean                  sum(L) / sum(W).
//   kSumOverBatchSize      sum(L) / number of elements of L.
//   kSumByNonzeroWeights   sum(L) / number of nonzero entries of W (TF1's default).
// Every division returns 0 when its divisor is 0 (TF's div_no_nan), so an all-zero-weight
// batch gives loss 0, not NaN. Outputs keep the logits' / predictions' dtype (float32 or
// float64); labels are cast to it. Each call builds its ops in a fresh name scope
// ("softmax_cross_entropy_loss", ... as TF) and is differentiable in logits/predictions.
#include <optional>

#include "loom/graph/op_def.h"

namespace loom::losses {

enum class Reduction { kNone, kSum, kMean, kSumOverBatchSize, kSumByNonzeroWeights };

struct LossOptions {
  // Per-element weights, or a scalar. Default: none (1.0).
  std::optional<Input> weights;
  // Default: kSumByNonzeroWeights (TF1's default).
  Reduction reduction = Reduction::kSumByNonzeroWeights;
  // Softmax / sigmoid cross-entropy only: labels become labels * (1 - s) + s / num_classes
  // (softmax) or labels * (1 - s) + s / 2 (sigmoid). Default: 0.
  double label_smoothing = 0;
  // Huber only: where the loss turns from quadratic to linear. Default: 1.0.
  double delta = 1.0;
  // LogLoss only: added inside both logarithms. Default: 1e-7 (TF's).
  double epsilon = 1e-7;
};

// onehot_labels and logits [batch, num_classes]; no gradient flows into the labels.
Output SoftmaxCrossEntropy(const Scope& scope, Input onehot_labels, Input logits,
                           const LossOptions& options = {});
// labels int32/int64 [batch] (class ids), logits [batch, num_classes].
Output SparseSoftmaxCrossEntropy(const Scope& scope, Input labels, Input logits,
                                 const LossOptions& options = {});
// multi_class_labels (0/1, any numeric dtype) and logits of the same shape.
Output SigmoidCrossEntropy(const Scope& scope, Input multi_class_labels, Input logits,
                           const LossOptions& options = {});
// (predictions - labels)^2.
Output MeanSquaredError(const Scope& scope, Input labels, Input predictions,
                        const LossOptions& options = {});
// |predictions - labels|.
Output AbsoluteDifference(const Scope& scope, Input labels, Input predictions,
                          const LossOptions& options = {});
// e = |predictions - labels|: 0.5 e^2 when e <= delta, else delta (e - 0.5 delta).
Output HuberLoss(const Scope& scope, Input labels, Input predictions,
                 const LossOptions& options = {});
// labels in {0, 1} mapped to {-1, 1}: max(0, 1 - labels * logits).
Output HingeLoss(const Scope& scope, Input labels, Input logits, const LossOptions& options = {});
// predictions are probabilities: -labels log(p + epsilon) - (1 - labels) log(1 - p + epsilon).
Output LogLoss(const Scope& scope, Input labels, Input predictions,
               const LossOptions& options = {});
// labels and predictions unit-normalized along `axis` (as TF, the loss does not normalize):
// 1 - sum(labels * predictions) over `axis` (kept as a dim of 1, so weights broadcast as in TF).
Output CosineDistance(const Scope& scope, Input labels, Input predictions, int64_t axis,
                      const LossOptions& options = {});

// The weighting and reduction step shared by every loss (tf.losses.compute_weighted_loss).
Output ComputeWeightedLoss(const Scope& scope, Output losses,
                           const std::optional<Input>& weights = std::nullopt,
                           Reduction reduction = Reduction::kSumByNonzeroWeights);

}  // namespace loom::losses

#endif  // LOOM_ESTIMATOR_LOSSES_H_
