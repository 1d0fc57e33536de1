#ifndef LOOM_OPS_NN_H_
#define LOOM_OPS_NN_H_

// Neural-network ops (tf.nn): activations, bias add, 2-D convolution and pooling, the
// softmax family, losses and gradient clipping. float32 and float64 only.
//
//   auto h = Relu(s, BiasAdd(s, Conv2D(s, images, filter, {1, 1}, "SAME"), bias));
//   auto p = MaxPool(s, h, {2, 2}, {2, 2}, "SAME");
//   auto loss = SparseSoftmaxCrossEntropyWithLogits(s, labels, logits);  // [batch]
//
// Images are NHWC ([batch, height, width, channels]); filters are HWIO ([filter_height,
// filter_width, in_channels, out_channels]). `strides` and `ksize` are {height, width}.
// Padding is "VALID" (no padding; out = ceil((in - k + 1) / stride)) or "SAME" (out =
// ceil(in / stride), padded with max(0, (out - 1) * stride + k - in) zeros split as TF
// does: the extra row/column goes at the bottom/right).
//
// Every op here has a gradient, built from dedicated fused gradient ops (ReluGrad,
// BiasAddGrad, Conv2DBackpropInput/Filter, MaxPoolGrad, ...), so a first derivative needs
// no op of the math family. The activations' gradient ops, BiasAddGrad and Conv2D's
// backprops are differentiable again (second derivatives, e.g. a gradient penalty; built
// from those ops and, for the curved activations, math ops), and so are the pooling and
// loss gradient ops: MaxPoolGrad's gradient is MaxPoolGradGrad (TF's op) and the other way
// round, AvgPoolGrad's is AvgPool, the softmax and cross-entropy ones compose math ops
// (docs/engine.md, "Gradients", has the formulas).
// Where TF's gradient ops take a shape tensor (Conv2DBackpropInput/Filter, AvgPoolGrad),
// ours take the forward input or filter itself and read only its shape.
// Conv2D and its backprops run as one GEMM over the whole batch's im2col matrix (ops/blas.h);
// elementwise kernels parallelize over the session's thread pool and run in place on
// intermediate values.
#include <string>
#include <vector>

#include "loom/graph/op_def.h"
#include "loom/graph/precision.h"

namespace loom {

// Activations, element-wise and shape-preserving.
Output Relu(const Scope& scope, Input features);
Output Relu6(const Scope& scope, Input features);  // min(max(x, 0), 6)
Output Elu(const Scope& scope, Input features);    // x > 0 ? x : exp(x) - 1
Output LeakyRelu(const Scope& scope, Input features, double alpha = 0.2);
Output Sigmoid(const Scope& scope, Input x);
Output Tanh(const Scope& scope, Input x);
Output Softplus(const Scope& scope, Input features);  // log(1 + exp(x)), overflow-free

// value + bias along the last dimension. bias is a vector of value's last dim.
Output BiasAdd(const Scope& scope, Input value, Input bias);

// softmax / log-softmax along `axis` (negative counts from the end), numerically stable.
Output Softmax(const Scope& scope, Input logits, int axis = -1);
Output LogSoftmax(const Scope& scope, Input logits, int axis = -1);

// 2-D convolution (cross-correlation, as TF). input NHWC, filter HWIO; output
// [batch, out_height, out_width, out_channels]. Fails at construction when the input's
// channels differ from the filter's in_channels, or on a bad padding/stride. `precision`
// (loom/graph/precision.h) is recorded in the node's "precision" attribute, which its
// backprops copy.
Output Conv2D(const Scope& scope, Input input, Input filter, const std::vector<int64_t>& strides,
              const std::string& padding, Precision precision = Precision::kFloat32);
// Window max / mean over each channel. AvgPool divides by the number of in-image elements
// of each window (padding is not counted), as TF does.
Output MaxPool(const Scope& scope, Input value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);
Output AvgPool(const Scope& scope, Input value, const std::vector<int64_t>& ksize,
               const std::vector<int64_t>& strides, const std::string& padding);

// Per-example losses; the class dimension is the last one, the result drops it.
// -sum(labels * log_softmax(logits)); differentiable in logits and labels.
Output SoftmaxCrossEntropyWithLogits(const Scope& scope, Input labels, Input logits);
// labels: int32/int64 class ids of shape logits.shape[:-1]. A label outside
// [0, num_classes) fails at run time with InvalidArgument naming the label and the count.
Output SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, Input labels, Input logits);
// Element-wise max(x, 0) - x * z + log(1 + exp(-|x|)), x = logits, z = labels (same shape).
Output SigmoidCrossEntropyWithLogits(const Scope& scope, Input labels, Input logits);
// sum(t^2) / 2, a scalar.
Output L2Loss(const Scope& scope, Input t);

// sqrt(sum over the list of sum(t^2)), a scalar (tf.linalg.global_norm).
Output GlobalNorm(const Scope& scope, const std::vector<Output>& t_list);
// tf.clip_by_global_norm: each t * clip_norm / max(global_norm, clip_norm); NaN when the
// global norm is not finite. Absent (invalid) entries, as Gradients returns for unused
// variables, are skipped and stay absent in `clipped`. Differentiable.
struct ClippedList {
  std::vector<Output> clipped;
  Output global_norm;
};
ClippedList ClipByGlobalNorm(const Scope& scope, const std::vector<Output>& t_list,
                             Input clip_norm);

void RegisterNnOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_NN_H_
