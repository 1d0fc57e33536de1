#include "loom/estimator/losses.h"

#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"

namespace loom::losses {
namespace {

// n / d, or 0 where d == 0 (TF's div_no_nan); differentiable in n.
Output DivNoNan(const Scope& s, Output n, Output d) {
  Output nonzero = NotEqual(s, d, 0.0);
  Output safe_d = Select(s, nonzero, d, OnesLike(s, d));
  return Select(s, nonzero, Div(s, n, safe_d), ZerosLike(s, n));
}

// `x` in dtype `dtype` (literals built in it, tensors cast).
Output AsDType(const Scope& s, const Input& x, DType dtype) {
  return Cast(s, AsOutput(s, x, dtype), dtype);
}

Output FloatInput(const Scope& s, const Input& x, const char* what) {
  Output o = AsOutput(s, x, kFloat32);
  if (o.dtype() != kFloat32 && o.dtype() != kFloat64) {
    throw InvalidArgument("loss '", s.prefix(), "': ", what, " must be float32 or float64, got ",
                          DTypeName(o.dtype()), " (", o.name(), ")");
  }
  return o;
}

// TF's `predictions.get_shape().assert_is_compatible_with(labels.get_shape())`: equal
// ranks and equal known dims. No broadcasting and no squeeze: labels [n] against
// predictions [n, 1] would otherwise broadcast to an [n, n] loss that trains nothing.
void CheckCompatible(const Scope& s, const char* what, const Output& x, const char* labels_what,
                     const Output& labels) {
  if (x.shape().IsCompatibleWith(labels.shape())) return;
  throw InvalidArgument("loss '", s.prefix(), "': ", labels_what, " ", labels.shape(), " (",
                        labels.name(), ") and ", what, " ", x.shape(), " (", x.name(),
                        ") have incompatible shapes; they must match exactly (no broadcasting, "
                        "as TF's assert_is_compatible_with): e.g. reshape labels [batch] to "
                        "[batch, 1] with Reshape(labels, {-1, 1}) or ExpandDims(labels, 1)");
}

}  // namespace

Output ComputeWeightedLoss(const Scope& scope, Output losses, const std::optional<Input>& weights,
                           Reduction reduction) {
  const DType dtype = losses.dtype();
  Output weighted = losses;
  Output broadcast_weights;  // W: weights broadcast to the losses' shape
  if (weights.has_value()) {
    Output w = AsDType(scope, *weights, dtype);
    weighted = Mul(scope.WithOpName("weighted_losses"), losses, w);
    if (reduction == Reduction::kMean || reduction == Reduction::kSumByNonzeroWeights) {
      broadcast_weights = Mul(scope, w, OnesLike(scope, losses));
    }
  }
  if (reduction == Reduction::kNone) return weighted;
  Output total = Sum(scope, weighted);
  switch (reduction) {
    case Reduction::kSum:
      return Identity(scope.WithOpName("value"), total);
    case Reduction::kMean: {
      Output denom = broadcast_weights.valid() ? Sum(scope, broadcast_weights)
                                               : Cast(scope, Size(scope, losses), dtype);
      return DivNoNan(scope.WithOpName("value"), total, denom);
    }
    case Reduction::kSumOverBatchSize:
      return DivNoNan(scope.WithOpName("value"), total, Cast(scope, Size(scope, losses), dtype));
    case Reduction::kSumByNonzeroWeights: {
      Output present = broadcast_weights.valid()
                           ? Sum(scope.WithOpName("num_present"),
                                 Cast(scope, NotEqual(scope, broadcast_weights, 0.0), dtype))
                           : Cast(scope.WithOpName("num_present"), Size(scope, losses), dtype);
      return DivNoNan(scope.WithOpName("value"), total, present);
    }
    case Reduction::kNone:
      break;
  }
  return weighted;
}

Output SoftmaxCrossEntropy(const Scope& scope, Input onehot_labels, Input logits,
                           const LossOptions& options) {
  Scope s = scope.NewSubScope("softmax_cross_entropy_loss");
  Output z = FloatInput(s, logits, "logits");
  Output labels = AsDType(s, onehot_labels, z.dtype());
  CheckCompatible(s, "logits", z, "onehot_labels", labels);
  if (options.label_smoothing > 0) {
    // labels * (1 - ls) + ls / num_classes.
    if (!z.shape().rank_known() || z.shape().rank() < 1) {
      throw InvalidArgument("loss '", s.prefix(), "': logits need a known rank, got ", z.shape());
    }
    const int rank = z.shape().rank();
    Output num_classes =
        z.shape().dim(-1) != kUnknownDim
            ? AsOutput(s, static_cast<double>(z.shape().dim(-1)), z.dtype())
            : Cast(s, Reshape(s, Slice(s, ShapeOf(s, z), {rank - 1}, {1}), std::vector<int64_t>{}),
                   z.dtype());
    labels = Add(s, Mul(s, labels, 1.0 - options.label_smoothing),
                 Div(s, AsOutput(s, options.label_smoothing, z.dtype()), num_classes));
  }
  Output per_example =
      SoftmaxCrossEntropyWithLogits(s.WithOpName("xentropy"), StopGradient(s, labels), z);
  return ComputeWeightedLoss(s, per_example, options.weights, options.reduction);
}

Output SparseSoftmaxCrossEntropy(const Scope& scope, Input labels, Input logits,
                                 const LossOptions& options) {
  Scope s = scope.NewSubScope("sparse_softmax_cross_entropy_loss");
  Output z = FloatInput(s, logits, "logits");
  Output ids = AsOutput(s, labels, kInt64);
  if (ids.dtype() == kUInt8) ids = Cast(s, ids, kInt32);
  if (ids.dtype() != kInt32 && ids.dtype() != kInt64) {
    throw InvalidArgument("loss '", s.prefix(), "': labels must be integer class ids, got ",
                          DTypeName(ids.dtype()), " (", ids.name(), ")");
  }
  // Labels [batch, 1] against logits [batch, classes]: drop the 1 (TF's
  // _remove_squeezable_dimensions).
  if (ids.shape().rank_known() && z.shape().rank_known() &&
      ids.shape().rank() == z.shape().rank() && ids.shape().dim(-1) == 1) {
    ids = Squeeze(s, ids, {-1});
  }
  Output per_example = SparseSoftmaxCrossEntropyWithLogits(s.WithOpName("xentropy"), ids, z);
  return ComputeWeightedLoss(s, per_example, options.weights, options.reduction);
}

Output SigmoidCrossEntropy(const Scope& scope, Input multi_class_labels, Input logits,
                           const LossOptions& options) {
  Scope s = scope.NewSubScope("sigmoid_cross_entropy_loss");
  Output z = FloatInput(s, logits, "logits");
  Output labels = AsDType(s, multi_class_labels, z.dtype());
  CheckCompatible(s, "logits", z, "multi_class_labels", labels);
  if (options.label_smoothing > 0) {
    labels = Add(s, Mul(s, labels, 1.0 - options.label_smoothing), 0.5 * options.label_smoothing);
  }
  Output per_element =
      SigmoidCrossEntropyWithLogits(s.WithOpName("xentropy"), StopGradient(s, labels), z);
  return ComputeWeightedLoss(s, per_element, options.weights, options.reduction);
}

Output MeanSquaredError(const Scope& scope, Input labels, Input predictions,
                        const LossOptions& options) {
  Scope s = scope.NewSubScope("mean_squared_error");
  Output p = FloatInput(s, predictions, "predictions");
  Output y = AsDType(s, labels, p.dtype());
  CheckCompatible(s, "predictions", p, "labels", y);
  Output per_element = Square(s.WithOpName("SquaredDifference"), Sub(s, p, y));
  return ComputeWeightedLoss(s, per_element, options.weights, options.reduction);
}

Output AbsoluteDifference(const Scope& scope, Input labels, Input predictions,
                          const LossOptions& options) {
  Scope s = scope.NewSubScope("absolute_difference");
  Output p = FloatInput(s, predictions, "predictions");
  Output y = AsDType(s, labels, p.dtype());
  CheckCompatible(s, "predictions", p, "labels", y);
  return ComputeWeightedLoss(s, Abs(s, Sub(s, p, y)), options.weights, options.reduction);
}

Output HuberLoss(const Scope& scope, Input labels, Input predictions, const LossOptions& options) {
  Scope s = scope.NewSubScope("huber_loss");
  if (!(options.delta > 0)) {
    throw InvalidArgument("loss '", s.prefix(), "': delta must be positive, got ", options.delta);
  }
  Output p = FloatInput(s, predictions, "predictions");
  Output y = AsDType(s, labels, p.dtype());
  CheckCompatible(s, "predictions", p, "labels", y);
  Output abs_error = Abs(s, Sub(s, p, y));
  Output quadratic = Minimum(s, abs_error, options.delta);
  Output linear = Sub(s, abs_error, quadratic);
  Output per_element = Add(s, Mul(s, Square(s, quadratic), 0.5), Mul(s, linear, options.delta));
  return ComputeWeightedLoss(s, per_element, options.weights, options.reduction);
}

Output HingeLoss(const Scope& scope, Input labels, Input logits, const LossOptions& options) {
  Scope s = scope.NewSubScope("hinge_loss");
  Output z = FloatInput(s, logits, "logits");
  Output y = AsDType(s, labels, z.dtype());
  CheckCompatible(s, "logits", z, "labels", y);
  Output signed_labels = Sub(s, Mul(s, y, 2.0), 1.0);
  Output per_element = Relu(s, Sub(s, 1.0, Mul(s, signed_labels, z)));
  return ComputeWeightedLoss(s, per_element, options.weights, options.reduction);
}

Output LogLoss(const Scope& scope, Input labels, Input predictions, const LossOptions& options) {
  Scope s = scope.NewSubScope("log_loss");
  if (!(options.epsilon >= 0)) {
    throw InvalidArgument("loss '", s.prefix(), "': epsilon must be non-negative, got ",
                          options.epsilon);
  }
  Output p = FloatInput(s, predictions, "predictions");
  Output y = AsDType(s, labels, p.dtype());
  CheckCompatible(s, "predictions", p, "labels", y);
  Output positive = Mul(s, y, Log(s, Add(s, p, options.epsilon)));
  Output negative = Mul(s, Sub(s, 1.0, y), Log(s, Add(s, Sub(s, 1.0, p), options.epsilon)));
  Output per_element = Neg(s, Add(s, positive, negative));
  return ComputeWeightedLoss(s, per_element, options.weights, options.reduction);
}

Output CosineDistance(const Scope& scope, Input labels, Input predictions, int64_t axis,
                      const LossOptions& options) {
  Scope s = scope.NewSubScope("cosine_distance_loss");
  Output p = FloatInput(s, predictions, "predictions");
  Output y = AsDType(s, labels, p.dtype());
  CheckCompatible(s, "predictions", p, "labels", y);
  Output radial = Mul(s, p, y);
  Output per_example = Sub(s, 1.0, Sum(s, radial, {axis}, {.keep_dims = true}));
  return ComputeWeightedLoss(s, per_example, options.weights, options.reduction);
}

}  // namespace loom::losses
