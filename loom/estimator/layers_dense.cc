// Dense, Flatten, Dropout, Embedding; variables, activations and regularizers shared by
// every layer.
#include <algorithm>
#include <cctype>

#include "loom/estimator/layers_internal.h"
#include "loom/graph/collections.h"
#include "loom/ops/array.h"
#include "loom/ops/dropout.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"

namespace loom::layers {
namespace internal {

Output MakeVariable(const Scope& layer, const std::string& name, const Shape& shape, DType dtype,
                    const initializers::Initializer& init,
                    const initializers::Initializer& fallback, bool trainable,
                    const Regularizer& regularizer, const VariableGetter& getter) {
  const initializers::Initializer& chosen = init ? init : fallback;
  auto make = [&](const Scope& home) -> Output {
    // A layer built inside a cond branch still makes its variables, initial values and
    // penalties outside it (TF1's get_variable with a callable initializer).
    Graph::ContextOverride outside(layer.graph(), nullptr);
    Output initial = chosen(home.NewSubScope(name + "_initializer"), shape, dtype);
    Variable var(home.WithOpName(name), initial, {.trainable = trainable, .shape = shape});
    if (regularizer) {
      Scope reg = layer.NewSubScope(name + "_regularizer");
      Output value = regularizer(reg, var);
      if (value.valid()) {  // no penalty (e.g. a zero scale): nothing to record
        Output penalty = Identity(reg.WithOpName("penalty"), value);
        layer.graph().collections().Add(GraphKeys::kRegularizationLosses, penalty);
      }
    }
    return var;
  };
  if (!getter) return make(layer);
  Output var = getter({.name = name,
                       .shape = shape,
                       .dtype = dtype,
                       .trainable = trainable,
                       .make = [&](const std::string& variable_scope) {
                         return make(layer.WithPrefix(variable_scope));
                       }});
  if (!var.valid() || var.dtype() != dtype || !var.shape().IsCompatibleWith(shape)) {
    throw InvalidArgument("layer '", layer.prefix(), "': the variable getter gave ",
                          var.valid() ? var.name() : std::string("nothing"), " for '", name,
                          "'; the layer needs a ", DTypeName(dtype), " variable of shape ", shape);
  }
  return var;
}

Scope LayerScope(const Scope& scope, const std::string& name) {
  return name.empty() ? scope : scope.NewSubScope(name);
}

Output Activate(const Scope& layer, const Activation& activation, Output x) {
  return activation ? activation(layer, x) : x;
}

std::string NormalizePadding(const std::string& padding, const std::string& layer) {
  std::string upper = padding;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char ch) { return std::toupper(ch); });
  if (upper != "SAME" && upper != "VALID") {
    throw InvalidArgument("layer '", layer, "': padding must be \"same\" or \"valid\", got \"",
                          padding, "\"");
  }
  return upper;
}

void CheckFloatInput(const Output& x, const std::string& layer, int min_rank) {
  if (x.dtype() != kFloat32 && x.dtype() != kFloat64) {
    throw InvalidArgument("layer '", layer, "': inputs must be float32 or float64, got ",
                          DTypeName(x.dtype()), " (", x.name(), "); Cast them first");
  }
  if (!x.shape().rank_known() || x.shape().rank() < min_rank) {
    throw InvalidArgument("layer '", layer, "': inputs need rank >= ", min_rank, ", got shape ",
                          x.shape(), " (", x.name(), ")");
  }
}

}  // namespace internal

using internal::Activate;
using internal::CheckFloatInput;
using internal::MakeVariable;

Activation LeakyReluActivation(double alpha) {
  return [alpha](const Scope& s, Input x) { return LeakyRelu(s, x, alpha); };
}

Activation SoftmaxActivation(int axis) {
  return [axis](const Scope& s, Input x) { return Softmax(s, x, axis); };
}

Regularizer L2Regularizer(double scale) {
  return [scale](const Scope& s, Output w) { return Mul(s, L2Loss(s, w), scale); };
}

Regularizer L1Regularizer(double scale) {
  return [scale](const Scope& s, Output w) { return Mul(s, Sum(s, Abs(s, w)), scale); };
}

std::vector<Output> RegularizationLosses(const Graph& graph) {
  return graph.collections().Get(GraphKeys::kRegularizationLosses);
}

Output Dense(const Scope& scope, Input inputs, const DenseOptions& options) {
  Output x = AsOutput(scope, inputs);
  Scope layer = internal::LayerScope(scope, options.name);
  CheckFloatInput(x, layer.prefix(), 2);
  if (options.units <= 0) {
    throw InvalidArgument("layer '", layer.prefix(), "': units must be positive, got ",
                          options.units);
  }
  const int rank = x.shape().rank();
  const int64_t in = x.shape().dim(-1);
  if (in == kUnknownDim) {
    throw InvalidArgument("layer '", layer.prefix(), "': the last dim of the inputs (shape ",
                          x.shape(), ") must be known to size the kernel");
  }
  Output kernel =
      MakeVariable(layer, "kernel", {in, options.units}, x.dtype(), options.kernel_initializer,
                   initializers::GlorotUniform(), options.trainable, options.kernel_regularizer,
                   options.variable_getter);
  Output y;
  if (rank == 2) {
    y = MatMul(layer.WithOpName("MatMul"), x, kernel, {.precision = options.precision});
  } else {
    // Tensordot over the last axis: [..., in] -> [n, in] -> [n, units] -> [..., units].
    Output shape = ShapeOf(layer, x);
    Output outer = Slice(layer, shape, {0}, {rank - 1});
    Output out_shape =
        Concat(layer, {outer, Const(layer, std::vector<int64_t>{options.units}, {1})}, 0);
    Output flat = Reshape(layer, x, {-1, in});
    y = Reshape(layer,
                MatMul(layer.WithOpName("MatMul"), flat, kernel, {.precision = options.precision}),
                out_shape);
  }
  if (options.use_bias) {
    Output bias = MakeVariable(layer, "bias", {options.units}, x.dtype(), options.bias_initializer,
                               initializers::Zeros(), options.trainable, options.bias_regularizer,
                               options.variable_getter);
    y = BiasAdd(layer.WithOpName("BiasAdd"), y, bias);
  }
  return Activate(layer, options.activation, y);
}

Output Flatten(const Scope& scope, Input inputs) {
  Output x = AsOutput(scope, inputs);
  Scope layer = scope.NewSubScope("flatten");
  if (!x.shape().rank_known() || x.shape().rank() < 1) {
    throw InvalidArgument("layer '", layer.prefix(), "': inputs need rank >= 1, got ", x.shape());
  }
  int64_t inner = 1;
  for (int i = 1; i < x.shape().rank(); ++i) {
    if (x.shape().dim(i) == kUnknownDim) {
      throw InvalidArgument("layer '", layer.prefix(),
                            "': all but the batch dim must be known, got ", x.shape());
    }
    inner *= x.shape().dim(i);
  }
  return Reshape(layer.WithOpName("Reshape"), x, {-1, inner});
}

Output Dropout(const Scope& scope, Input inputs, const DropoutOptions& options) {
  Output x = AsOutput(scope, inputs);
  if (!(options.rate >= 0 && options.rate < 1)) {
    throw InvalidArgument("Dropout '", scope.FullName(options.name),
                          "': rate must be in [0, 1), got ", options.rate);
  }
  if (!options.training || options.rate == 0) return x;
  Scope layer = scope.NewSubScope(options.name);
  return loom::Dropout(layer, x, options.rate, options.seed);
}

Output Embedding(const Scope& scope, Input ids, const EmbeddingOptions& options) {
  Output i = AsOutput(scope, ids);
  Scope layer = scope.NewSubScope(options.name);
  if (options.input_dim <= 0 || options.output_dim <= 0) {
    throw InvalidArgument("layer '", layer.prefix(),
                          "': input_dim and output_dim must be positive, got ", options.input_dim,
                          " and ", options.output_dim);
  }
  if (i.dtype() != kInt32 && i.dtype() != kInt64) {
    throw InvalidArgument("layer '", layer.prefix(), "': ids must be int32 or int64, got ",
                          DTypeName(i.dtype()));
  }
  Output table = MakeVariable(layer, "embeddings", {options.input_dim, options.output_dim},
                              kFloat32, options.embeddings_initializer,
                              initializers::RandomUniform(), options.trainable);
  return EmbeddingLookup(layer, table, i);
}

Output EmbeddingLookup(const Scope& scope, Input params, Input ids) {
  return Gather(scope.WithOpName("embedding_lookup"), params, ids, 0);
}

}  // namespace loom::layers
