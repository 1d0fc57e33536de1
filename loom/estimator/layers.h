#ifndef LOOM_ESTIMATOR_LAYERS_H_
#define LOOM_ESTIMATOR_LAYERS_H_

// Layers for model functions, TF1's tf.layers: each call builds one layer's ops and
// variables in a fresh name scope made unique like TF's ("dense", "dense_1", ...), so
// variables are named "dense/kernel", "dense_1/bias", "conv2d/kernel" as checkpoints
// written by TF name them.
//
//   namespace L = loom::layers;
//   auto conv = L::Conv2D(s, x, {.filters = 32, .kernel_size = {5, 5}, .padding = "same",
//                                .activation = loom::Relu});
//   auto pool = L::MaxPooling2D(s, conv, {.pool_size = {2, 2}, .strides = 2});
//   auto h = L::Dense(s, L::Flatten(s, pool), {.units = 1024, .activation = loom::Relu});
//   h = L::Dropout(s, h, {.rate = 0.4, .training = mode == loom::Mode::kTrain});
//
// Variables' initial-value ops sit under "<layer>/<variable>_initializer". Images are NHWC.
// SeparableConv2D, DepthwiseConv2D and Conv2DTranspose are in layers_conv_variants.h.
//
// Batch normalization and the UPDATE_OPS collection: in training, BatchNormalization
// adds ops that move moving_mean / moving_variance toward the batch statistics, grouped
// in one NoOp "<layer>/update_ops" that it adds to the graph's UPDATE_OPS collection
// (GraphKeys::kUpdateOps, collections.h); UpdateOps(graph) reads that collection. A model
// function (or the Estimator) runs them with the train op, TF1's idiom:
//   auto train_op = Group(s, {optimizer.Minimize(s, loss), L::UpdateOp(s)});
// or builds the train op under s.WithControlDependencies(L::UpdateOps(s.graph())).
// Thread-safety: like every graph builder, single-threaded.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/estimator/initializers.h"
#include "loom/graph/op_def.h"
#include "loom/graph/precision.h"

namespace loom::layers {

// An activation: any callable Output(const Scope&, Input), e.g. loom::Relu, loom::Tanh,
// loom::Sigmoid, loom::Elu, loom::Relu6, loom::Softplus passed directly. Empty: linear.
using Activation = std::function<Output(const Scope&, Input)>;
// Activations whose ops take extra arguments, bound.
Activation LeakyReluActivation(double alpha = 0.2);
Activation SoftmaxActivation(int axis = -1);

// A penalty on a variable (e.g. L2Regularizer): the returned scalar is what the model
// function adds to its loss. A layer adds each penalty (an Identity
// "<layer>/<variable>_regularizer/penalty") to the graph's REGULARIZATION_LOSSES
// collection (GraphKeys::kRegularizationLosses); RegularizationLosses(graph) reads it.
// A regularizer returning an invalid Output (no penalty, as TF's l2_regularizer(0.0)
// returns None) adds nothing.
// A 2-D size: `.kernel_size = {5, 5}`, `.strides = 2` (both dims). {0, 0} means unset.
struct Size2D {
  int64_t height = 0;
  int64_t width = 0;
  Size2D() = default;
  Size2D(int64_t both) : height(both), width(both) {}
  Size2D(int64_t h, int64_t w) : height(h), width(w) {}
  bool set() const { return height > 0 && width > 0; }
};

using Regularizer = std::function<Output(const Scope&, Output variable)>;
// scale * sum(w^2) / 2 (tf.contrib.layers.l2_regularizer).
Regularizer L2Regularizer(double scale);
// scale * sum(|w|).
Regularizer L1Regularizer(double scale);
// Every regularization penalty built so far in `graph`, in creation order (TF1's
// tf.losses.get_regularization_losses()).
std::vector<Output> RegularizationLosses(const Graph& graph);

// TF1's variable scope, for a layer's variables: it decides each variable's name and
// whether an existing one is shared (reuse). The layer asks for each variable by its short
// name ("kernel"); the getter returns the variable to use: one it already has, or the one
// `make(variable_scope)` builds as the layer would, named "<variable_scope>/<name>" (its
// initial-value ops under "<variable_scope>/<name>_initializer", its regularizer's penalty
// in the layer's name scope, as TF1's). An empty getter: the layer makes each variable in
// its own name scope ("<layer>/kernel"). The Python front end passes one so that name
// scopes never change variable names, as in TF1.
struct VariableRequest {
  std::string name;  // "kernel", "bias", "gamma", "moving_mean", ...
  Shape shape;
  DType dtype = kFloat32;
  bool trainable = true;
  std::function<Output(const std::string& variable_scope)> make;
};
using VariableGetter = std::function<Output(const VariableRequest&)>;

// A layer's training flag: a bool known when the graph is built (the model function's
// mode), or a scalar bool tensor read at run time (TF1's is_training placeholder), for
// which the layer builds both behaviours and a Cond picks one each step.
class TrainingFlag {
 public:
  TrainingFlag(bool value) : value_(value) {}       // NOLINT(google-explicit-constructor)
  TrainingFlag(Output tensor) : tensor_(tensor) {}  // NOLINT(google-explicit-constructor)
  bool is_tensor() const { return tensor_.valid(); }
  // The bool. REQUIRES: !is_tensor().
  bool value() const { return value_; }
  const Output& tensor() const { return tensor_; }

 private:
  bool value_ = false;
  Output tensor_;
};

struct DenseOptions {
  // Output size. REQUIRES: > 0.
  int64_t units = 0;
  Activation activation;  // Default: none (linear)
  bool use_bias = true;   // Default: true
  // Default: GlorotUniform() (tf.layers' default through the variable scope).
  initializers::Initializer kernel_initializer;
  // Default: Zeros().
  initializers::Initializer bias_initializer;
  Regularizer kernel_regularizer;  // Default: none
  Regularizer bias_regularizer;    // Default: none
  bool trainable = true;           // Default: true
  // Scope name. Default: "dense". Empty: the ops go in `scope` itself (a name scope the
  // caller made, as TF1's tf.layers re-enter their variable scope's name scope).
  std::string name = "dense";
  VariableGetter variable_getter;  // Default: none (variables in the layer's scope)
  // The MatMul's precision policy (loom/graph/precision.h); a model function passes its
  // RunConfig's (config.precision) to the layers it wants in that policy, as the canned
  // estimators do. Default: kFloat32.
  Precision precision = Precision::kFloat32;
};
// activation(inputs . kernel + bias); kernel [in, units] from inputs' last dim (which
// must be known). Inputs of rank > 2 are multiplied along their last dim.
Output Dense(const Scope& scope, Input inputs, const DenseOptions& options);

struct Conv2DOptions {
  int64_t filters = 0;            // REQUIRES: > 0
  Size2D kernel_size;             // REQUIRES: set
  Size2D strides = 1;             // Default: 1
  std::string padding = "valid";  // "valid" or "same" (any case). Default: "valid"
  // > 1: TF's atrous convolution (SpaceToBatchND, a VALID Conv2D, BatchToSpaceND, as
  // tf.layers.conv2d lowers it); needs strides of 1 and the inputs' height and width known.
  Size2D dilation_rate = 1;                      // Default: 1
  Activation activation;                         // Default: none
  bool use_bias = true;                          // Default: true
  initializers::Initializer kernel_initializer;  // Default: GlorotUniform()
  initializers::Initializer bias_initializer;    // Default: Zeros()
  Regularizer kernel_regularizer;                // Default: none
  Regularizer bias_regularizer;                  // Default: none
  bool trainable = true;                         // Default: true
  std::string name = "conv2d";                   // Default: "conv2d"; empty as Dense's
  VariableGetter variable_getter;                // Default: none
  // The convolution's precision policy, as DenseOptions::precision. Default: kFloat32.
  Precision precision = Precision::kFloat32;
};
// NHWC input; kernel [kh, kw, in_channels, filters] (HWIO), bias [filters].
Output Conv2D(const Scope& scope, Input inputs, const Conv2DOptions& options);

struct Pooling2DOptions {
  Size2D pool_size;               // REQUIRES: set
  Size2D strides;                 // Default: pool_size (Keras' default)
  std::string padding = "valid";  // Default: "valid"
  std::string name;               // Default: "max_pooling2d" / "average_pooling2d"
};
Output MaxPooling2D(const Scope& scope, Input inputs, const Pooling2DOptions& options);
// Padding cells are not counted in the mean (TF).
Output AveragePooling2D(const Scope& scope, Input inputs, const Pooling2DOptions& options);

// [batch, ...] -> [batch, prod(...)]. REQUIRES: all but the batch dim known.
Output Flatten(const Scope& scope, Input inputs);

struct DropoutOptions {
  double rate = 0.5;  // Fraction dropped. Default: 0.5
  // Known when the graph is built (the model function's mode). false: the identity.
  // Default: false (tf.layers.dropout's default).
  bool training = false;
  int64_t seed = kNoSeed;        // Default: kNoSeed
  std::string name = "dropout";  // Default: "dropout"
};
// Inverted dropout in training (survivors scaled by 1 / (1 - rate)); else inputs.
Output Dropout(const Scope& scope, Input inputs, const DropoutOptions& options = {});

struct BatchNormalizationOptions {
  // The channel (feature) axis; statistics are over all other axes. Default: -1.
  int64_t axis = -1;
  double momentum = 0.99;  // Default: 0.99
  double epsilon = 1e-3;   // Default: 1e-3
  bool center = true;      // Learn beta (offset). Default: true
  bool scale = true;       // Learn gamma (multiplier). Default: true
  // Batch statistics and moving-average updates when true; moving statistics when false.
  // A bool tensor picks at run time (TF1's smart_cond): the output is a Cond between the
  // two, and the UPDATE_OPS member assigns the moving statistics only when it is true.
  // Default: false (tf.layers' default).
  TrainingFlag training = false;
  initializers::Initializer beta_initializer;             // Default: Zeros()
  initializers::Initializer gamma_initializer;            // Default: Ones()
  initializers::Initializer moving_mean_initializer;      // Default: Zeros()
  initializers::Initializer moving_variance_initializer;  // Default: Ones()
  bool trainable = true;                                  // gamma and beta. Default: true
  std::string name = "batch_normalization";  // Default: "batch_normalization"; empty as Dense's
  VariableGetter variable_getter;            // Default: none
  // The moving variance moves toward the batch variance times n / (n - 1) (Bessel's
  // correction), as TF1's fused kernel (tf.layers' default for 4-D inputs with the channel
  // on axis 1 or 3) does; the output always uses the biased batch variance.
  // Default: false (the non-fused path: the biased variance).
  bool unbiased_moving_variance = false;
};
// gamma * (x - mean) / sqrt(var + epsilon) + beta, with variables "<scope>/gamma",
// "beta", "moving_mean", "moving_variance" (the moving ones not trainable, but saved).
// In training, mean/var are the batch's (variance biased, divided by n, as TF's
// non-fused path) and an UPDATE_OPS member (see UpdateOps) assigns
//   moving -= (moving - batch) * (1 - momentum).
// The channel dim must be known.
Output BatchNormalization(const Scope& scope, Input inputs,
                          const BatchNormalizationOptions& options = {});

// The pending moving-statistics updates of every training-mode layer built in `graph`
// (TF1's tf.get_collection(UPDATE_OPS)); empty when there are none.
std::vector<Operation> UpdateOps(const Graph& graph);
// Group(UpdateOps(scope.graph())), or a NoOp when there are none.
Operation UpdateOp(const Scope& scope);

struct EmbeddingOptions {
  int64_t input_dim = 0;   // Vocabulary size. REQUIRES: > 0
  int64_t output_dim = 0;  // Embedding width. REQUIRES: > 0
  // Default: RandomUniform({-0.05, 0.05}) (Keras' default).
  initializers::Initializer embeddings_initializer;
  bool trainable = true;           // Default: true
  std::string name = "embedding";  // Default: "embedding"
};
// Variable "<scope>/embeddings" [input_dim, output_dim], looked up with Gather so its
// gradient is sparse (IndexedSlices): ids [...] -> [..., output_dim].
Output Embedding(const Scope& scope, Input ids, const EmbeddingOptions& options);
// Rows of params for ids (tf.nn.embedding_lookup with one shard): Gather on axis 0.
Output EmbeddingLookup(const Scope& scope, Input params, Input ids);

}  // namespace loom::layers

#endif  // LOOM_ESTIMATOR_LAYERS_H_
