#ifndef LOOM_OPS_NN_INTERNAL_H_
#define LOOM_OPS_NN_INTERNAL_H_

// Shared by the nn_*.cc files only: element-wise kernel helpers and the per-file
// registration calls that RegisterNnOps combines. Not part of the public API.
#include <cstdint>

#include "loom/graph/op_def.h"
#include "loom/graph/scope.h"
#include "loom/ops/vector_isa.h"

namespace loom::nn_internal {

// Adds a node of `op` named after the op under `scope` and returns its output 0.
inline Output AddOp(const Scope& scope, const OpDef& op, std::vector<Output> inputs,
                    AttrMap attrs = {}) {
  return scope.AddNode(op, std::move(inputs), std::move(attrs), op.name)->output(0);
}

// Element-wise loops stay on one thread below this many elements per chunk.
inline constexpr int64_t kElementwiseChunk = 16384;

// Output 0 has input 0's dtype and shape; fails unless input 0 is float32/float64.
void FloatSameAsInput(InferenceContext& c);
// For (a, b) -> out element-wise ops: same float dtype, compatible shapes.
void FloatBinarySameShape(InferenceContext& c);
// Conv2D-like (input NHWC, filter HWIO): float32/float64 operands of one dtype, rank 4, the
// input's channels matching the filter's in_channels, and valid strides.
void ConvOperandChecks(InferenceContext& c);
// Fails (naming the node) unless the inputs' runtime shapes are equal.
void ExpectSameRuntimeShape(const KernelContext& c, int i, int j);

// y = fn(x) element-wise over input 0, in place when input 0's buffer is free; the loop
// runs through internal::Vectorized (vector_isa.h), as BinaryKernel's does.
// fn is a generic callable: fn(T x) -> T.
template <typename Fn>
void UnaryKernel(KernelContext& c, const Fn& fn) {
  const Tensor& x = c.input(0);
  Tensor y = c.ForwardInputOrAllocate(0, 0, x.shape());
  SwitchFloat(x.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    c.pool().ParallelFor(x.NumElements(), kElementwiseChunk, [&](int64_t b, int64_t e) {
      internal::Vectorized([&] {
        for (int64_t i = b; i < e; ++i) out[i] = fn(in[i]);
      });
    });
    return 0;
  });
}

// out = fn(a, b) element-wise over inputs 0 and 1 (same shape), written into input
// `reuse`'s buffer when it is free.
template <typename Fn>
void BinaryKernel(KernelContext& c, int reuse, const Fn& fn) {
  ExpectSameRuntimeShape(c, 0, 1);
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  Tensor out = c.ForwardInputOrAllocate(reuse, 0, a.shape());
  SwitchFloat(a.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    c.pool().ParallelFor(a.NumElements(), kElementwiseChunk, [&](int64_t lo, int64_t hi) {
      internal::Vectorized([&] {
        for (int64_t i = lo; i < hi; ++i) po[i] = fn(pa[i], pb[i]);
      });
    });
    return 0;
  });
}

// ReluGrad's arithmetic: d/dx relu(x) = [x > 0]; at x = NaN the derivative is NaN too
// (never a silent 0).
template <typename T>
inline T ReluGradOf(T dy, T x) {
  return x > 0 ? dy : (x != x ? x : T(0));
}

// The kernels that fused chains (nn_fused.h) extend:
// Conv2D's, then y += bias (when given; [out_c]) and y = relu(y) (when `relu`), in oneDNN's
// post-ops where the convolution runs there, else in one more pass over y.
void Conv2DWithEpilogue(KernelContext& c, const Tensor* bias, bool relu);
// y += bias (when given; [last dim of y]), then y = relu(y) (when `relu`), in one pass with
// BiasAdd's and Relu's arithmetic.
void ApplyBiasRelu(ThreadPool& pool, Tensor& y, const Tensor* bias, bool relu);
// Whether oneDNN's ReLU post-op gives Relu's result on a float32 convolution of x and w
// (reduction depth k) plus bias. It computes max(y, 0), which turns a NaN into 0 where
// Relu keeps it; a NaN output needs an inf or NaN among the operands or a sum that
// overflows, so the post-op is exact when every operand is finite and
// k max|x| max|w| + max|b| stays far below float32's largest value (bf16 rounding moves an
// operand by under 2^-8). Reads x, w and bias once.
bool ReluPostOpIsExact(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t k,
                       ThreadPool& pool);
// MaxPoolGrad's (inputs orig_input, grad), then output 0 = ReluGrad(output 0, features) and,
// when `bias_grad` ([channels], allocated), BiasAddGrad of that into *bias_grad; over tiling
// windows in the same pass.
void MaxPoolGradRelu(KernelContext& c, const Tensor& features, Tensor* bias_grad);
// out = ReluGrad(dy, features) (out may be dy) and, when `bias_grad` ([last dim] of dy,
// allocated), the sum of out over all but the last dimension, in one pass.
void ReluGradAndBiasSum(ThreadPool& pool, const Tensor& dy, const Tensor& features, Tensor& out,
                        Tensor* bias_grad);

void RegisterNnActivationOps(OpRegistry& registry);
void RegisterNnConvOps(OpRegistry& registry);
void RegisterNnPoolOps(OpRegistry& registry);

// While one is alive, MaxPool skips its 2x2 path (MaxPool2x2), MaxPoolGrad its path for
// tiling windows (MaxPoolGradTiled, also in fused chains), and both run
// the general loops in every thread: for the test that checks both give the
// same bits, and for benchmarks of what the tiled path gains. Process-wide; nests (a count).
class ScopedGeneralMaxPool {
 public:
  ScopedGeneralMaxPool();
  ~ScopedGeneralMaxPool();
  ScopedGeneralMaxPool(const ScopedGeneralMaxPool&) = delete;
  ScopedGeneralMaxPool& operator=(const ScopedGeneralMaxPool&) = delete;
};
void RegisterNnLossOps(OpRegistry& registry);
void RegisterNnNormOps(OpRegistry& registry);

}  // namespace loom::nn_internal

#endif  // LOOM_OPS_NN_INTERNAL_H_
