// BatchNormalization and the UPDATE_OPS collection it fills.
#include "loom/estimator/layers_internal.h"
#include "loom/graph/collections.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"

namespace loom::layers {
using internal::CheckFloatInput;
using internal::MakeVariable;

Output BatchNormalization(const Scope& scope, Input inputs,
                          const BatchNormalizationOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = scope.NewSubScope(options.name);
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
  const DType dtype = x.dtype();
  const Shape param_shape{channels};
  Variable gamma, beta;
  if (options.scale) {
    gamma = MakeVariable(layer, "gamma", param_shape, dtype, options.gamma_initializer,
                         initializers::Ones(), options.trainable);
  }
  if (options.center) {
    beta = MakeVariable(layer, "beta", param_shape, dtype, options.beta_initializer,
                        initializers::Zeros(), options.trainable);
  }
  Variable moving_mean = MakeVariable(layer, "moving_mean", param_shape, dtype,
                                      options.moving_mean_initializer, initializers::Zeros(),
                                      /*trainable=*/false);
  Variable moving_variance =
      MakeVariable(layer, "moving_variance", param_shape, dtype,
                   options.moving_variance_initializer, initializers::Ones(), /*trainable=*/false);

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

  Output mean, variance;
  if (options.training) {
    // nn.moments: the variance's gradient through the mean is zero, so stop it (as TF).
    Output batch_mean = Mean(layer.WithOpName("mean"), x, reduce_axes, {.keep_dims = true});
    Output centered = Sub(layer, x, StopGradient(layer, batch_mean));
    Output batch_variance = Mean(layer.WithOpName("variance"), Square(layer, centered), reduce_axes,
                                 {.keep_dims = true});
    mean = batch_mean;
    variance = batch_variance;
    // moving -= (moving - batch) * (1 - momentum).
    Scope upd = layer.NewSubScope("AssignMovingAvg");
    const double decay = 1.0 - options.momentum;
    Output new_mean = Reshape(upd, batch_mean, {channels});
    Output new_var = Reshape(upd, batch_variance, {channels});
    Output mean_update = AssignSub(upd.WithOpName("moving_mean"), moving_mean,
                                   Mul(upd, Sub(upd, moving_mean, new_mean), decay));
    Output var_update = AssignSub(upd.WithOpName("moving_variance"), moving_variance,
                                  Mul(upd, Sub(upd, moving_variance, new_var), decay));
    Operation updates = Group(layer.WithOpName("update_ops"), {mean_update, var_update});
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
