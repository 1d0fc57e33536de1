#ifndef LOOM_OPS_NN_FUSED_H_
#define LOOM_OPS_NN_FUSED_H_

// Kernels for chains of nn nodes that the Session's plan-time fusion pass
// (loom/runtime/graph_fusion.h) runs as one step, as TF's grappler remapper runs
// _FusedConv2D. Each kernel computes what its chain computes, node by node, to float32
// rounding (float64 chains exactly), in fewer passes over memory:
//   Conv2D -> BiasAdd -> Relu     one convolution with oneDNN's bias and ReLU post-op (the
//                                 bias and ReLU then cost nothing), or the convolution and
//                                 one pass for both where oneDNN declines (float64, 1x1);
//   MatMul -> BiasAdd -> Relu     MatMul's own kernel (any precision policy), then one pass
//                                 for the bias and ReLU over its output, in place while the
//                                 product's last rows are still in cache: no second
//                                 tensor and no second and third pass over memory;
//   MaxPoolGrad -> ReluGrad -> BiasAddGrad
//                                 one pass over the pooled windows that routes each
//                                 gradient to its window's maximum, masks it by ReLU's
//                                 derivative and sums the bias gradient while it writes.
// The kernels run with the KernelContext of their chain's first node (whose attributes they
// read and whose name their errors carry); an error about another node's input names that
// node. Internal to the ops and runtime layers. Thread-safety: the kernels are thread-safe.
#include "loom/graph/op_def.h"

namespace loom {

// Conv2D [-> BiasAdd] [-> Relu], at least one of the two. Inputs: the Conv2D's (input,
// filter), then the BiasAdd's bias when `bias_add`. Output 0: the chain's last output.
// REQUIRES: `bias_add` (when given) reads `conv`'s output as its value, `relu` (when given)
// the output before it.
KernelFn FusedConv2DKernel(const Node& conv, const Node* bias_add, const Node* relu);

// MatMul [-> BiasAdd] [-> Relu], at least one of the two. Inputs: the MatMul's (a, b), then
// the BiasAdd's bias when `bias_add`. Output 0: the chain's last output. The results are
// bitwise the unfused nodes' (the same product, then the same additions and comparisons).
// REQUIRES: as FusedConv2DKernel's, with `matmul` for `conv`.
KernelFn FusedMatMulKernel(const Node& matmul, const Node* bias_add, const Node* relu);

// [MaxPoolGrad ->] ReluGrad [-> BiasAddGrad], at least one of the two. Inputs: the
// MaxPoolGrad's (orig_input, grad) when `max_pool_grad`, else the ReluGrad's gradients;
// then the ReluGrad's features. Output 0: the ReluGrad's output; output 1: the
// BiasAddGrad's, when `bias_add_grad`. The kernel's node is `max_pool_grad` when given,
// else `relu_grad`. REQUIRES: the ReluGrad reads `max_pool_grad`'s output (when given) as
// its gradients, the BiasAddGrad the ReluGrad's output.
KernelFn FusedReluGradKernel(const Node* max_pool_grad, const Node& relu_grad,
                             const Node* bias_add_grad);

}  // namespace loom

#endif  // LOOM_OPS_NN_FUSED_H_
