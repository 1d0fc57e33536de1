// The fused chains' kernels (nn_fused.h). The convolution and pooling loops they extend
// live with their ops (nn_conv.cc, nn_pool.cc); this file checks the chains' other inputs
// and holds the ReluGrad + BiasAddGrad pass.
#include "loom/ops/nn_fused.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "loom/ops/nn_internal.h"
#include "loom/ops/vector_isa.h"

namespace loom {
namespace {

using nn_internal::kElementwiseChunk;

// Rows per block of the bias gradient's partial sums: fixed by the shape, not the thread
// count, so the sum's order (and its bits) do not depend on the machine.
int64_t RowsPerBlock(int64_t channels) {
  return std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(channels, 1));
}

template <typename T>
void ReluGradBias(ThreadPool& pool, const T* dy, const T* features, T* out, int64_t rows,
                  int64_t channels, T* bias_grad) {
  const int64_t per_block = RowsPerBlock(channels);
  const int64_t blocks = (rows + per_block - 1) / per_block;
  std::vector<T> partial(bias_grad != nullptr ? blocks * channels : 0, T(0));
  pool.ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    internal::Vectorized([&] {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t r0 = b * per_block, r1 = std::min(rows, r0 + per_block);
        T* __restrict acc = bias_grad != nullptr ? partial.data() + b * channels : nullptr;
        for (int64_t r = r0; r < r1; ++r) {
          const T* d = dy + r * channels;  // no restrict: out may be dy
          const T* __restrict f = features + r * channels;
          T* o = out + r * channels;  // may be dy itself
          for (int64_t j = 0; j < channels; ++j) o[j] = nn_internal::ReluGradOf(d[j], f[j]);
          if (acc != nullptr) {
            for (int64_t j = 0; j < channels; ++j) acc[j] += o[j];
          }
        }
      }
    });
  });
  if (bias_grad == nullptr) return;
  std::fill(bias_grad, bias_grad + channels, T(0));
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t j = 0; j < channels; ++j) bias_grad[j] += partial[b * channels + j];
  }
}

// Fails naming `node` (not the kernel's) unless `t` has `shape`.
void ExpectShape(const Node& node, const char* what, const Tensor& t, const Shape& shape) {
  if (t.shape() != shape) {
    throw InvalidArgument(node.description(), ": ", what, " has shape ", t.shape(), ", expected ",
                          shape)
        .AtNode(node.name());
  }
}

template <typename T>
void BiasRelu(ThreadPool& pool, T* y, int64_t rows, int64_t channels, const T* bias, bool relu) {
  const int64_t min_rows = std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(channels, 1));
  pool.ParallelFor(rows, min_rows, [&](int64_t r0, int64_t r1) {
    internal::Vectorized([&] {
      for (int64_t r = r0; r < r1; ++r) {
        T* __restrict o = y + r * channels;
        if (bias != nullptr) {
          for (int64_t j = 0; j < channels; ++j) o[j] = o[j] + bias[j];
        }
        if (relu) {
          for (int64_t j = 0; j < channels; ++j) o[j] = o[j] <= 0 ? T(0) : o[j];
        }
      }
    });
  });
}

// The largest |v| over p[0, n) as float32 bits without the sign, so that an inf or NaN
// (bits >= 0x7f800000) shows: an integer maximum, which vectorizes.
int32_t MaxAbsBits(const float* p, int64_t n, ThreadPool& pool) {
  const int64_t chunk = 1 << 16;
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<int32_t> partial(chunks, 0);
  pool.ParallelFor(chunks, 1, [&](int64_t c0, int64_t c1) {
    internal::Vectorized([&] {
      for (int64_t k = c0; k < c1; ++k) {
        int32_t m = 0;
        for (int64_t i = k * chunk, e = std::min(n, i + chunk); i < e; ++i) {
          int32_t bits;
          std::memcpy(&bits, p + i, sizeof(bits));
          bits &= 0x7fffffff;
          m = bits > m ? bits : m;
        }
        partial[k] = m;
      }
    });
  });
  return partial.empty() ? 0 : *std::max_element(partial.begin(), partial.end());
}

bool ReluPostOpIsExactImpl(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t k,
                           ThreadPool& pool) {
  auto max_abs = [&](const Tensor& t, double* out) {
    const int32_t bits = MaxAbsBits(t.data<float>(), t.NumElements(), pool);
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    *out = v;
    return bits < 0x7f800000;
  };
  double mx = 0, mw = 0, mb = 0;
  if (!max_abs(x, &mx) || !max_abs(w, &mw) || (bias != nullptr && !max_abs(*bias, &mb))) {
    return false;
  }
  return static_cast<double>(k) * mx * mw + mb < 0x1p120;
}

}  // namespace

void nn_internal::ApplyBiasRelu(ThreadPool& pool, Tensor& y, const Tensor* bias, bool relu) {
  const int64_t channels = y.rank() >= 1 ? y.dim(-1) : 1;
  const int64_t rows = channels == 0 ? 0 : y.NumElements() / channels;
  SwitchFloat(y.dtype(), "Conv2D", [&](auto tag) {
    using T = decltype(tag);
    BiasRelu(pool, y.data<T>(), rows, channels,
             bias != nullptr ? bias->data<T>() : static_cast<const T*>(nullptr), relu);
    return 0;
  });
}

bool nn_internal::ReluPostOpIsExact(const Tensor& x, const Tensor& w, const Tensor* bias, int64_t k,
                                    ThreadPool& pool) {
  return ReluPostOpIsExactImpl(x, w, bias, k, pool);
}

void nn_internal::ReluGradAndBiasSum(ThreadPool& pool, const Tensor& dy, const Tensor& features,
                                     Tensor& out, Tensor* bias_grad) {
  const int64_t channels = dy.rank() >= 1 ? dy.dim(-1) : 1;
  const int64_t rows = channels == 0 ? 0 : dy.NumElements() / channels;
  SwitchFloat(dy.dtype(), "ReluGrad", [&](auto tag) {
    using T = decltype(tag);
    ReluGradBias(pool, dy.data<T>(), features.data<T>(), out.data<T>(), rows, channels,
                 bias_grad != nullptr ? bias_grad->data<T>() : static_cast<T*>(nullptr));
    return 0;
  });
}

KernelFn FusedConv2DKernel(const Node& conv, const Node* bias_add, const Node* relu) {
  (void)conv;
  return [bias_add, relu](KernelContext& c) {
    const Tensor* bias = nullptr;
    if (bias_add != nullptr) {
      bias = &c.input(2);
      const Tensor& filter = c.input(1);
      if (bias->rank() != 1 || filter.rank() != 4 || bias->dim(0) != filter.dim(3)) {
        throw InvalidArgument(bias_add->description(), ": bias of shape ", bias->shape(),
                              " does not match the last dimension of value (the Conv2D's ",
                              filter.rank() == 4 ? filter.dim(3) : -1, " output channels)")
            .AtNode(bias_add->name());
      }
    }
    nn_internal::Conv2DWithEpilogue(c, bias, relu != nullptr);
  };
}

KernelFn FusedMatMulKernel(const Node& matmul, const Node* bias_add, const Node* relu) {
  const Node* product = &matmul;
  return [product, bias_add, relu](KernelContext& c) {
    // The MatMul's kernel as it is (its checks, precision paths and library choice), on a
    // context of its own whose output this kernel then finishes in place. Its inputs are
    // this context's first two (adjacent in the span; a MatMul only reads them).
    std::vector<Tensor> outputs(1);
    KernelContext inner(*product, std::span<Tensor>(const_cast<Tensor*>(&c.input(0)), 2), outputs,
                        c.pool(), c.resources(), c.step_id());
    product->op_def().kernel(inner);
    Tensor& y = outputs[0];
    const Tensor* bias = nullptr;
    if (bias_add != nullptr) {
      bias = &c.input(2);
      if (bias->rank() != 1 || y.rank() != 2 || bias->dim(0) != y.dim(1) ||
          bias->dtype() != y.dtype()) {
        throw InvalidArgument(bias_add->description(), ": bias of ", DTypeName(bias->dtype()),
                              bias->shape(), " does not match the last dimension of value ",
                              DTypeName(y.dtype()), y.shape(), " (the MatMul's product)")
            .AtNode(bias_add->name());
      }
    }
    nn_internal::ApplyBiasRelu(c.pool(), y, bias, relu != nullptr);
    c.set_output(0, std::move(y));
  };
}

KernelFn FusedReluGradKernel(const Node* max_pool_grad, const Node& relu_grad,
                             const Node* bias_add_grad) {
  const Node* grad_node = &relu_grad;
  return [max_pool_grad, grad_node, bias_add_grad](KernelContext& c) {
    const int features_input = max_pool_grad != nullptr ? 2 : 1;
    const Tensor& features = c.input(features_input);
    Tensor bias_grad;
    auto allocate_bias_grad = [&](const Shape& value) {
      if (bias_add_grad == nullptr) return;
      if (value.rank() < 1) {
        throw InvalidArgument(bias_add_grad->description(), ": input must have rank >= 1, got ",
                              value)
            .AtNode(bias_add_grad->name());
      }
      bias_grad = Tensor(features.dtype(), Shape{value.dim(-1)});
      c.set_output(1, bias_grad);
    };
    if (max_pool_grad != nullptr) {
      ExpectShape(*grad_node, "features (input 1)", features, c.input(0).shape());
      allocate_bias_grad(features.shape());
      nn_internal::MaxPoolGradRelu(c, features, bias_add_grad != nullptr ? &bias_grad : nullptr);
      return;
    }
    const Tensor& dy = c.input(0);
    ExpectShape(*grad_node, "features (input 1)", features, dy.shape());
    if (features.dtype() != dy.dtype()) {
      throw InvalidArgument(grad_node->description(), ": inputs have dtypes ",
                            DTypeName(dy.dtype()), " and ", DTypeName(features.dtype()))
          .AtNode(grad_node->name());
    }
    allocate_bias_grad(dy.shape());
    Tensor out = c.ForwardInputOrAllocate(0, 0, dy.shape());
    nn_internal::ReluGradAndBiasSum(c.pool(), dy, features, out,
                                    bias_add_grad != nullptr ? &bias_grad : nullptr);
  };
}

}  // namespace loom
