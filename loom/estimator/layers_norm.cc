// BatchNormalization and the UPDATE_OPS collection it fills.
#include "loom/estimator/layers_internal.h"
#include "loom/graph/collections.h"
#include "loom/ops/array.h"
#include "loom/ops/control.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"

namespace loom::layers {
using internal::CheckFloatInput;
using internal::MakeVariable;

Output BatchNormalization(const Scope& scope, Input inputs,
                          const BatchNormalizationOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = internal::LayerScope(scope, options.name);
  CheckFloatInput(x, layer.prefix(), 1);
  const int rank = x.shape().rank();
  const int64_t axis = options.axis < 0 ? options.axis + rank : options.axis;
  if (axis < 0 || axis >= rank) {
    throw InvalidArgument("layer '", layer.prefix(), "': axis ", options.axis,
                          " is out of range for inputs of shape ", x.shape());
  }
  const int64_t channels = x.shape().dim(static_cast<int>(axis));
  if (channels == kUnknownDim) {
    throw InvalidArgument("layer '", layer.prefix(), "': the channel dim ", axis,
                          " of the inputs (shape ", x.shape(), ") must be known");
  }
  if (!(options.momentum >= 0 && options.momentum <= 1) || !(options.epsilon > 0)) {
    throw InvalidArgument("layer '", layer.prefix(),
                          "': need 0 <= momentum <= 1 and epsilon > 0, got ", options.momentum,
                          " and ", options.epsilon);
  }
  const TrainingFlag& training = options.training;
  if (training.is_tensor()) {
    const Output& flag = training.tensor();
    if (flag.dtype() != kBool || (flag.shape().rank_known() && flag.shape().rank() != 0)) {
      throw InvalidArgument("layer '", layer.prefix(), "': training must be a bool scalar, got ",
                            DTypeName(flag.dtype()), " of shape ", flag.shape(), " (", flag.name(),
                            "); pass a Python bool or a tf.bool scalar tensor");
    }
  }
  const DType dtype = x.dtype();
  const Shape param_shape{channels};
  const VariableGetter& getter = options.variable_getter;
  Output gamma, beta;
  if (options.scale) {
    gamma = MakeVariable(layer, "gamma", param_shape, dtype, options.gamma_initializer,
                         initializers::Ones(), options.trainable, {}, getter);
  }
  if (options.center) {
    beta = MakeVariable(layer, "beta", param_shape, dtype, options.beta_initializer,
                        initializers::Zeros(), options.trainable, {}, getter);
  }
  Output moving_mean =
      MakeVariable(layer, "moving_mean", param_shape, dtype, options.moving_mean_initializer,
                   initializers::Zeros(), /*trainable=*/false, {}, getter);
  Output moving_variance = MakeVariable(layer, "moving_variance", param_shape, dtype,
                                        options.moving_variance_initializer, initializers::Ones(),
                                        /*trainable=*/false, {}, getter);

  // Parameters of shape [C] broadcast against x as [1, .., C, .., 1].
  std::vector<int64_t> reduce_axes;
  std::vector<int64_t> broadcast_shape(rank, 1);
  broadcast_shape[axis] = channels;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) reduce_axes.push_back(i);
  }
  const bool channels_last = axis == rank - 1;
  auto broadcastable = [&](Output v) {
    return channels_last ? v : Reshape(layer, v, broadcast_shape);
  };
  // The batch's mean and (biased) variance, each [C], and the variance the moving one
  // moves toward (times n / (n - 1) with unbiased_moving_variance, n = elements per
  // channel, at least 2 as TF's fused kernel takes max(n - 1, 1)).
  struct Moments {
    Output mean, variance, target_variance;
  };
  auto batch_moments = [&](const Scope& s) {
    // nn.moments: the variance's gradient through the mean is zero, so stop it (as TF).
    Output mean = Mean(s.WithOpName("mean"), x, reduce_axes, {.keep_dims = true});
    Output centered = Sub(s, x, StopGradient(s, mean));
    Output variance =
        Mean(s.WithOpName("variance"), Square(s, centered), reduce_axes, {.keep_dims = true});
    Moments m{Reshape(s, mean, {channels}), Reshape(s, variance, {channels}), {}};
    m.target_variance = m.variance;
    if (options.unbiased_moving_variance) {
      Output n = Div(s, Cast(s, Size(s, x), dtype), static_cast<double>(channels));
      m.target_variance = Mul(s, m.variance, Div(s, n, Maximum(s, Sub(s, n, 1.0), 1.0)));
    }
    return m;
  };
  // moving -= (moving - target) * (1 - momentum).
  const double decay = 1.0 - options.momentum;
  auto assign_moving = [&](const Scope& s, const Output& mean, const Output& target_variance) {
    return std::vector<Output>{AssignSub(s.WithOpName("moving_mean"), moving_mean,
                                         Mul(s, Sub(s, moving_mean, mean), decay)),
                               AssignSub(s.WithOpName("moving_variance"), moving_variance,
                                         Mul(s, Sub(s, moving_variance, target_variance), decay))};
  };

  Output mean, variance;
  if (training.is_tensor()) {
    // TF1's smart_cond on a tensor: batch statistics or moving ones, and updates that
    // assign only when training (the other branch reads the moving statistics).
    const Output& flag = training.tensor();
    std::vector<Output> stats = Cond(
        layer, flag,
        [&](const Scope& b) {
          Moments m = batch_moments(b);
          return std::vector<Output>{m.mean, m.variance, m.target_variance};
        },
        [&](const Scope& b) {
          Output mm = Identity(b, moving_mean);
          Output mv = Identity(b, moving_variance);
          return std::vector<Output>{mm, mv, mv};
        },
        "moments");
    mean = broadcastable(stats[0]);
    variance = broadcastable(stats[1]);
    std::vector<Output> updated = Cond(
        layer, flag, [&](const Scope& b) { return assign_moving(b, stats[0], stats[2]); },
        [&](const Scope& b) {
          return std::vector<Output>{Identity(b, moving_mean), Identity(b, moving_variance)};
        },
        "AssignMovingAvg");
    Operation updates = Group(layer.WithOpName("update_ops"), {updated[0], updated[1]});
    layer.graph().collections().Add(GraphKeys::kUpdateOps, updates);
  } else if (training.value()) {
    Moments m = batch_moments(layer);
    mean = broadcastable(m.mean);
    variance = broadcastable(m.variance);
    std::vector<Output> updated =
        assign_moving(layer.NewSubScope("AssignMovingAvg"), m.mean, m.target_variance);
    Operation updates = Group(layer.WithOpName("update_ops"), {updated[0], updated[1]});
    layer.graph().collections().Add(GraphKeys::kUpdateOps, updates);
  } else {
    mean = broadcastable(moving_mean);
    variance = broadcastable(moving_variance);
  }
  Output inv = Rsqrt(layer, Add(layer, variance, options.epsilon));
  if (options.scale) inv = Mul(layer, inv, broadcastable(gamma));
  Output y = Mul(layer, Sub(layer, x, mean), inv);
  if (options.center) y = Add(layer, y, broadcastable(beta));
  return Identity(layer.WithOpName("batchnorm"), y);
}

std::vector<Operation> UpdateOps(const Graph& graph) {
  return graph.collections().Get(GraphKeys::kUpdateOps);
}

Operation UpdateOp(const Scope& scope) {
  std::vector<Operation> ops = UpdateOps(scope.graph());
  return ops.empty() ? NoOp(scope.WithOpName("update_ops"))
                     : Group(scope.WithOpName("update_ops"), ops);
}

}  // namespace loom::layers
