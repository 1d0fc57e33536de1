// Conv2D with its input/filter backprops. NHWC. Float32 runs on oneDNN's convolution
// primitives (onednn_conv.h says why), or Winograd F(2x2, 5x5) where UseWinograd's measured
// rule picks it (winograd_conv.h); float64, 1x1 windows and whatever oneDNN declines run
// on im2col + one GEMM per batch chunk. Pooling is in nn_pool.cc; the window geometry both
// use in nn_window.h.
#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>

#include "loom/ops/bf16.h"
#include "loom/ops/bf16_conv.h"
#include "loom/ops/blas.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_conv.h"
#include "loom/ops/onednn_internal.h"
#include "loom/ops/vector_isa.h"
#include "loom/ops/winograd_conv.h"

namespace loom {
namespace {

using namespace nn_internal;  // NOLINT: the nn files' own helpers

// The im2col buffer holds at most this many elements; larger batches run in chunks.
constexpr int64_t kMaxColElements = int64_t{1} << 22;

// Copies one image's receptive fields into rows of `col`: row (oh, ow) holds the
// k_h x k_w x channels window, zeros where it hangs over the border.
template <typename T>
void Im2Col(const T* image, const Geometry& g, T* col) {
  const int64_t c = g.channels, row_len = g.k_h * g.k_w * c;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const int64_t ih0 = oh * g.stride_h - g.pad_top;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int64_t iw0 = ow * g.stride_w - g.pad_left;
      const int64_t kw_lo = std::max<int64_t>(0, -iw0);
      const int64_t kw_hi = std::min<int64_t>(g.k_w, g.in_w - iw0);
      T* dst = col + (oh * g.out_w + ow) * row_len;
      for (int64_t kh = 0; kh < g.k_h; ++kh, dst += g.k_w * c) {
        const int64_t ih = ih0 + kh;
        if (ih < 0 || ih >= g.in_h || kw_lo >= kw_hi) {
          std::fill(dst, dst + g.k_w * c, T(0));
          continue;
        }
        std::fill(dst, dst + kw_lo * c, T(0));
        std::memcpy(dst + kw_lo * c, image + (ih * g.in_w + iw0 + kw_lo) * c,
                    (kw_hi - kw_lo) * c * sizeof(T));
        std::fill(dst + kw_hi * c, dst + g.k_w * c, T(0));
      }
    }
  }
}

// The adjoint of Im2Col: zeroes `image` and adds each row of `col` back into its window.
template <typename T>
void Col2Im(const T* col, const Geometry& g, T* image) {
  const int64_t c = g.channels, row_len = g.k_h * g.k_w * c;
  std::fill(image, image + g.in_h * g.in_w * c, T(0));
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const int64_t ih0 = oh * g.stride_h - g.pad_top;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int64_t iw0 = ow * g.stride_w - g.pad_left;
      const int64_t kw_lo = std::max<int64_t>(0, -iw0);
      const int64_t kw_hi = std::min<int64_t>(g.k_w, g.in_w - iw0);
      const T* src = col + (oh * g.out_w + ow) * row_len;
      for (int64_t kh = 0; kh < g.k_h; ++kh, src += g.k_w * c) {
        const int64_t ih = ih0 + kh;
        if (ih < 0 || ih >= g.in_h || kw_lo >= kw_hi) continue;
        T* dst = image + (ih * g.in_w + iw0 + kw_lo) * c;
        const T* s = src + kw_lo * c;
        for (int64_t j = 0, n = (kw_hi - kw_lo) * c; j < n; ++j) dst[j] += s[j];
      }
    }
  }
}

// ---- Conv2D ----

// Checks input/filter (and out_backprop, when given) at run time; returns the geometry.
Geometry ConvGeometry(const KernelContext& c, const Shape& input, const Shape& filter,
                      const Tensor* out_backprop) {
  if (input.rank() != 4 || filter.rank() != 4) {
    c.Fail("input must be NHWC (rank 4) and filter HWIO (rank 4), got ", input, " and ", filter);
  }
  if (input.dim(3) != filter.dim(2)) {
    c.Fail("input channels ", input.dim(3), " (input shape ", input,
           ") do not match the filter's in_channels ", filter.dim(2), " (filter shape ", filter,
           ")");
  }
  Geometry g = MakeGeometry(c, input, filter.dim(0), filter.dim(1));
  if (out_backprop != nullptr) {
    Shape expected{g.batch, g.out_h, g.out_w, filter.dim(3)};
    if (out_backprop->shape() != expected) {
      c.Fail("out_backprop has shape ", out_backprop->shape(), ", expected ", expected);
    }
  }
  return g;
}

bool IsPointwise(const Geometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1;
}

// The im2col buffer, kept in the Session between runs: allocating tens of MB per step
// costs more in page faults than the im2col copy itself. One per Session; a kernel that
// finds it busy (a concurrent Run) allocates its own. The Session's unnamed resource of
// this type (ResourceMgr::Unnamed), so no graph name can collide with it.
class ConvScratch : public Resource {
 public:
  // Calls fn(col) with a uint8 buffer of at least `bytes`: the kept one (grown when too
  // small) when it is free, else a fresh one.
  template <typename Fn>
  void WithBuffer(size_t bytes, const Fn& fn) LOOM_LOCKS_EXCLUDED(mu_) {
    if (!mu_.TryLock()) {
      fn(Tensor(kUInt8, Shape{static_cast<int64_t>(bytes)}));
      return;
    }
    try {
      if (buffer_.TotalBytes() < bytes) {
        buffer_ = Tensor();  // free the old buffer before allocating the larger one
        buffer_ = Tensor(kUInt8, Shape{static_cast<int64_t>(bytes)});
      }
      fn(buffer_);
    } catch (...) {
      mu_.Unlock();
      throw;
    }
    mu_.Unlock();
  }

 private:
  Mutex mu_;
  Tensor buffer_ LOOM_GUARDED_BY(mu_);  // uint8, grown on demand
};

// Runs fn(first_image, num_images, col) over batch chunks whose im2col matrix fits in
// kMaxColElements; col has room for num_images * out_h * out_w rows.
template <typename T, typename Fn>
void ForEachBatchChunk(const KernelContext& c, const Geometry& g, const Fn& fn) {
  const int64_t per_image = std::max<int64_t>(1, g.out_h * g.out_w * g.k_h * g.k_w * g.channels);
  const int64_t chunk = std::clamp<int64_t>(kMaxColElements / per_image, 1, g.batch);
  const size_t bytes = chunk * per_image * sizeof(T);
  c.resources().Unnamed<ConvScratch>().WithBuffer(bytes, [&](const Tensor& col) {
    T* data = static_cast<T*>(col.raw_data());
    for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) fn(n0, std::min(chunk, g.batch - n0), data);
  });
}

// Under a bf16 policy, a pass whose bf16 kernel was measured slower than float32 runs in
// float32, operands unrounded (a rule on the shape, never a timing: docs/training.md,
// "Mixed precision"). oneDNN 2.6 on an Intel Xeon with AMX, batch 64, 28x28, 32 out
// channels, 1 thread (bench/RESULTS.md, "The convnet step: fusion"): the forward pass of a
// 5x5 window over 1 channel took 1.16 ms in bf16 against 0.81 in float32 in the convnet,
// and a 3x3 one 1.0 against 0.44 ms; from C * k_h * k_w = 27 on, bf16 was as fast or
// faster. The filter gradient in bf16 took 2.0-2.1 ms (5x5) and 1.05-1.3 ms (3x3) for 1-4
// channels against 0.37-1.8 ms in float32; from 8 channels on bf16 won. The input gradient
// was faster in bf16 for every channel count measured.
constexpr int64_t kMinBf16ForwardDepth = 27;  // C * k_h * k_w
constexpr int64_t kMinBf16FilterGradChannels = 8;

// `out_channels` is the filter's output channel count.
bf16::Path ConvPath(const KernelContext& c, DType dtype, const Geometry& g, int64_t out_channels,
                    ConvPassKind pass) {
  const bf16::Path path = bf16::KernelPath(c, dtype);  // throws for bf16-strict without hardware
  const bool slower_in_bf16 =
      (pass == ConvPassKind::kForward && g.channels * g.k_h * g.k_w < kMinBf16ForwardDepth) ||
      (pass == ConvPassKind::kFilterGrad && g.channels < kMinBf16FilterGradChannels);
  if (slower_in_bf16) return bf16::Path::kFloat32;
  // oneDNN 2.6's bf16 kernels reduce over channels in pairs: over an odd count they read
  // one past the last and multiply it by a zero weight, so a NaN or Inf spread into outputs
  // whose windows exclude it, and Inf outputs became NaN (AVX-512 BF16 on a Zen 4 EPYC;
  // CpuPathsTest.HardwareBf16ConvolutionsKeepSpecialsInTheirWindows). The forward pass
  // reduces over the input channels (an RGB first layer), the input gradient over the
  // output channels; such a pass runs emulated: the same rounding, float32 products.
  const int64_t reduced = pass == ConvPassKind::kForward     ? g.channels
                          : pass == ConvPassKind::kInputGrad ? out_channels
                                                             : 0;
  if (path == bf16::Path::kHardware && reduced % 2 == 1) return bf16::Path::kEmulated;
  return path;
}

// Input i as a float32 convolution under `path` reads it: rounded to bf16 unless the path
// is float32 (the hardware path reorders its own, and comes here only when declined).
Tensor ConvOperand(const KernelContext& c, int i, bf16::Path path) {
  return path == bf16::Path::kFloat32 ? c.input(i) : bf16::Rounded(c.input(i), c.pool());
}

void Conv2DKernel(KernelContext& c) { Conv2DWithEpilogue(c, nullptr, false); }

}  // namespace

void nn_internal::Conv2DWithEpilogue(KernelContext& c, const Tensor* bias, bool relu) {
  const Tensor& input = c.input(0);
  const Tensor& filter = c.input(1);
  Geometry g = ConvGeometry(c, input.shape(), filter.shape(), nullptr);
  const int64_t out_c = filter.dim(3), k = g.k_h * g.k_w * g.channels;
  const int64_t rows_per_image = g.out_h * g.out_w;
  Tensor out = c.AllocateOutput(0, Shape{g.batch, g.out_h, g.out_w, out_c});
  if (out.NumElements() == 0) return;
  const bf16::Path path = ConvPath(c, input.dtype(), g, out_c, ConvPassKind::kForward);
  const bool f32 = input.dtype() == kFloat32;
  const onednn_internal::ConvEpilogue epilogue{
      .bias = bias != nullptr && f32 ? bias->data<float>() : nullptr,
      .relu = relu && f32 && ReluPostOpIsExact(input, filter, bias, k, c.pool())};
  // ReLU as a pass after oneDNN: when the post-op could differ (NaN), or oneDNN declines it.
  const bool relu_pass = relu && !epilogue.relu;
  // oneDNN may decline the post-ops but not the convolution: the epilogue is then a pass.
  const bool has_epilogue = bias != nullptr || relu;
  if (path == bf16::Path::kHardware && k > 0) {
    auto run = [&](const onednn_internal::ConvEpilogue& e) {
      return bf16::OnednnConv2DBf16(g, out_c, input.data<float>(), filter.data<float>(),
                                    out.data<float>(), c.pool().num_threads(), e);
    };
    if (run(epilogue)) {
      if (relu_pass) ApplyBiasRelu(c.pool(), out, nullptr, true);
      return;
    }
    if (has_epilogue && run({})) {
      ApplyBiasRelu(c.pool(), out, bias, relu);
      return;
    }
  }
  const Tensor x_operand = ConvOperand(c, 0, path), w_operand = ConvOperand(c, 1, path);
  SwitchFloat(input.dtype(), "Conv2D", [&](auto tag) {
    using T = decltype(tag);
    const T* x = x_operand.data<T>();
    const T* w = w_operand.data<T>();
    T* y = out.data<T>();
    if (k == 0) {
      std::fill(y, y + out.NumElements(), T(0));
    } else if (IsPointwise(g)) {
      Gemm(false, false, g.batch * rows_per_image, out_c, k, T(1), x, k, w, out_c, T(0), y, out_c);
    } else if (std::is_same_v<T, float> && path == bf16::Path::kFloat32 &&
               UseWinograd(g, out_c, ConvPassKind::kForward) &&
               WinogradConv2D(g, out_c, reinterpret_cast<const float*>(x),
                              reinterpret_cast<const float*>(w), reinterpret_cast<float*>(y),
                              c.pool(), bias != nullptr ? bias->data<float>() : nullptr, relu)) {
      return 0;  // Winograd ran it, the epilogue included (a non-finite result reruns below)
    } else if (std::is_same_v<T, float> &&
               OnednnConv2D(g, out_c, reinterpret_cast<const float*>(x),
                            reinterpret_cast<const float*>(w), reinterpret_cast<float*>(y),
                            c.pool().num_threads(), epilogue)) {
      // oneDNN ran it, the epilogue included unless the ReLU is a pass
      if (relu_pass) ApplyBiasRelu(c.pool(), out, nullptr, true);
      return 0;
    } else if (std::is_same_v<T, float> && has_epilogue &&
               OnednnConv2D(g, out_c, reinterpret_cast<const float*>(x),
                            reinterpret_cast<const float*>(w), reinterpret_cast<float*>(y),
                            c.pool().num_threads())) {
      // oneDNN ran the convolution without the post-ops; the epilogue pass follows
    } else {
      const int64_t image_size = g.in_h * g.in_w * g.channels;
      ForEachBatchChunk<T>(c, g, [&](int64_t n0, int64_t nb, T* col) {
        c.pool().ParallelFor(nb, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            Im2Col(x + (n0 + i) * image_size, g, col + i * rows_per_image * k);
          }
        });
        Gemm(false, false, nb * rows_per_image, out_c, k, T(1), col, k, w, out_c, T(0),
             y + n0 * rows_per_image * out_c, out_c);
      });
    }
    if (bias != nullptr || relu) {
      ApplyBiasRelu(c.pool(), out, bias, relu);
    }
    return 0;
  });
}

void nn_internal::ConvOperandChecks(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.ExpectSameDType(0, 1);
  c.ExpectRank(0, 4);
  c.ExpectRank(1, 4);
  const Shape& in = c.input_shape(0);
  const Shape& f = c.input_shape(1);
  if (in.rank_known() && f.rank_known() && in.dim(3) != kUnknownDim && f.dim(2) != kUnknownDim &&
      in.dim(3) != f.dim(2)) {
    c.Fail("input channels ", in.dim(3), " (input shape ", in,
           ") do not match the filter's in_channels ", f.dim(2), " (filter shape ", f, ")");
  }
  SpatialAttr(c, kStrides);
}

namespace {

// d input = col2im(d out * filter^T)
void Conv2DBackpropInputKernel(KernelContext& c) {
  const Tensor& input = c.input(0);  // only its shape is used
  const Tensor& filter = c.input(1);
  const Tensor& dy = c.input(2);
  Geometry g = ConvGeometry(c, input.shape(), filter.shape(), &dy);
  const int64_t out_c = filter.dim(3), k = g.k_h * g.k_w * g.channels;
  const int64_t rows_per_image = g.out_h * g.out_w;
  Tensor dx = c.AllocateOutput(0, input.shape());
  const bf16::Path path = ConvPath(c, input.dtype(), g, out_c, ConvPassKind::kInputGrad);
  if (path == bf16::Path::kHardware && dx.NumElements() > 0 && k > 0 && out_c > 0 &&
      rows_per_image > 0 &&
      bf16::OnednnConv2DBackpropInputBf16(g, out_c, filter.data<float>(), dy.data<float>(),
                                          dx.data<float>(), c.pool().num_threads())) {
    return;
  }
  const Tensor w_operand = ConvOperand(c, 1, path), dy_operand = ConvOperand(c, 2, path);
  SwitchFloat(input.dtype(), "Conv2DBackpropInput", [&](auto tag) {
    using T = decltype(tag);
    const T* w = w_operand.data<T>();
    const T* dout = dy_operand.data<T>();
    T* din = dx.data<T>();
    if (dx.NumElements() == 0) return 0;
    if (k == 0 || out_c == 0 || rows_per_image == 0) {
      std::fill(din, din + dx.NumElements(), T(0));
    } else if (IsPointwise(g)) {
      Gemm(false, true, g.batch * rows_per_image, k, out_c, T(1), dout, out_c, w, out_c, T(0), din,
           k);
    } else if (std::is_same_v<T, float> && path == bf16::Path::kFloat32 &&
               UseWinograd(g, out_c, ConvPassKind::kInputGrad) &&
               WinogradConv2DBackpropInput(g, out_c, reinterpret_cast<const float*>(w),
                                           reinterpret_cast<const float*>(dout),
                                           reinterpret_cast<float*>(din), c.pool())) {
      // Winograd ran it
    } else if (std::is_same_v<T, float> &&
               OnednnConv2DBackpropInput(g, out_c, reinterpret_cast<const float*>(w),
                                         reinterpret_cast<const float*>(dout),
                                         reinterpret_cast<float*>(din), c.pool().num_threads())) {
      // oneDNN ran it
    } else {
      const int64_t image_size = g.in_h * g.in_w * g.channels;
      ForEachBatchChunk<T>(c, g, [&](int64_t n0, int64_t nb, T* col) {
        Gemm(false, true, nb * rows_per_image, k, out_c, T(1), dout + n0 * rows_per_image * out_c,
             out_c, w, out_c, T(0), col, k);
        c.pool().ParallelFor(nb, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            Col2Im(col + i * rows_per_image * k, g, din + (n0 + i) * image_size);
          }
        });
      });
    }
    return 0;
  });
}

// d filter = im2col(input)^T * d out, accumulated over batch chunks.
void Conv2DBackpropFilterKernel(KernelContext& c) {
  const Tensor& input = c.input(0);
  const Tensor& filter = c.input(1);  // only its shape is used
  const Tensor& dy = c.input(2);
  Geometry g = ConvGeometry(c, input.shape(), filter.shape(), &dy);
  const int64_t out_c = filter.dim(3), k = g.k_h * g.k_w * g.channels;
  const int64_t rows_per_image = g.out_h * g.out_w;
  Tensor dw = c.AllocateOutput(0, filter.shape());
  const bf16::Path path = ConvPath(c, input.dtype(), g, out_c, ConvPassKind::kFilterGrad);
  if (path == bf16::Path::kHardware && dw.NumElements() > 0 && g.batch * rows_per_image > 0 &&
      bf16::OnednnConv2DBackpropFilterBf16(g, out_c, input.data<float>(), dy.data<float>(),
                                           dw.data<float>(), c.pool().num_threads())) {
    return;
  }
  const Tensor x_operand = ConvOperand(c, 0, path), dy_operand = ConvOperand(c, 2, path);
  SwitchFloat(input.dtype(), "Conv2DBackpropFilter", [&](auto tag) {
    using T = decltype(tag);
    const T* x = x_operand.data<T>();
    const T* dout = dy_operand.data<T>();
    T* dfilter = dw.data<T>();
    if (dw.NumElements() == 0) return 0;
    if (g.batch * rows_per_image == 0) {
      std::fill(dfilter, dfilter + dw.NumElements(), T(0));
    } else if (IsPointwise(g)) {
      Gemm(true, false, k, out_c, g.batch * rows_per_image, T(1), x, k, dout, out_c, T(0), dfilter,
           out_c);
    } else if (std::is_same_v<T, float> && path == bf16::Path::kFloat32 &&
               UseWinograd(g, out_c, ConvPassKind::kFilterGrad) &&
               WinogradConv2DBackpropFilter(g, out_c, reinterpret_cast<const float*>(x),
                                            reinterpret_cast<const float*>(dout),
                                            reinterpret_cast<float*>(dfilter), c.pool())) {
      // Winograd ran it
    } else if (std::is_same_v<T, float> && OnednnFilterGradPays(g) &&
               OnednnConv2DBackpropFilter(g, out_c, reinterpret_cast<const float*>(x),
                                          reinterpret_cast<const float*>(dout),
                                          reinterpret_cast<float*>(dfilter),
                                          c.pool().num_threads())) {
      // oneDNN ran it
    } else {
      const int64_t image_size = g.in_h * g.in_w * g.channels;
      ForEachBatchChunk<T>(c, g, [&](int64_t n0, int64_t nb, T* col) {
        c.pool().ParallelFor(nb, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) {
            Im2Col(x + (n0 + i) * image_size, g, col + i * rows_per_image * k);
          }
        });
        Gemm(true, false, k, out_c, nb * rows_per_image, T(1), col, k,
             dout + n0 * rows_per_image * out_c, out_c, n0 == 0 ? T(0) : T(1), dfilter, out_c);
      });
    }
    return 0;
  });
}

void ConvShapeChecks(InferenceContext& c) {
  ConvOperandChecks(c);
  IsSame(c);
}

const OpDef& Conv2DOp();
const OpDef& Conv2DBackpropFilterOp();

// Both backprops' sample: input [1,5,4,2], filter [2,3,2,3], stride 2 SAME, so the output
// gradient is [1,3,2,3].
OpSample ConvBackpropSample() {
  return OpSample{
      {SampleDoubles({1, 5, 4, 2}), SampleDoubles({2, 3, 2, 3}), SampleDoubles({1, 3, 2, 3})},
      {kStrides(std::vector<int64_t>{1, 2, 2, 1}), kPadding("SAME")}};
}

const OpDef& Conv2DBackpropInputOp() {
  static const OpDef op = {
      .name = "Conv2DBackpropInput",
      .num_inputs = 3,
      .attrs = {kStrides.Required(), PaddingDef(), bf16::PrecisionAttrDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ConvShapeChecks(c);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
          },
      .kernel = Conv2DBackpropInputKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dx = input backprop(filter, dy) is bilinear in filter and dy; `input` gives its
        // shape only. <G, dx> = <Conv2D(G, filter), dy> = <filter backprop(G, dy), filter>.
        const Output& filter = g.input(1);
        const Output& dy = g.input(2);
        return {GradOutput(), AddGradOp(g, Conv2DBackpropFilterOp(), {g.grad(0), filter, dy}),
                AddGradOp(g, Conv2DOp(), {g.grad(0), filter})};
      },
      .sample = ConvBackpropSample,
  };
  return op;
}

const OpDef& Conv2DBackpropFilterOp() {
  static const OpDef op = {
      .name = "Conv2DBackpropFilter",
      .num_inputs = 3,
      .attrs = {kStrides.Required(), PaddingDef(), bf16::PrecisionAttrDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ConvShapeChecks(c);
            c.set_output(0, c.input_dtype(0), c.input_shape(1));
          },
      .kernel = Conv2DBackpropFilterKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dfilter = filter backprop(input, dy) is bilinear in input and dy; `filter` gives
        // its shape only. <G, dfilter> = <Conv2D(input, G), dy> = <input backprop(G, dy), input>.
        const Output& input = g.input(0);
        const Output& dy = g.input(2);
        return {AddGradOp(g, Conv2DBackpropInputOp(), {input, g.grad(0), dy}), GradOutput(),
                AddGradOp(g, Conv2DOp(), {input, g.grad(0)})};
      },
      .sample = ConvBackpropSample,
  };
  return op;
}

const OpDef& Conv2DOp() {
  static const OpDef op = {
      .name = "Conv2D",
      .num_inputs = 2,
      .attrs = {kStrides.Required(), PaddingDef(), bf16::PrecisionAttrDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ConvShapeChecks(c);
            const Shape& in = c.input_shape(0);
            const Shape& f = c.input_shape(1);
            if (!in.rank_known() || !f.rank_known()) {
              c.set_output(0, c.input_dtype(0),
                           Shape{kUnknownDim, kUnknownDim, kUnknownDim,
                                 f.rank_known() ? f.dim(3) : kUnknownDim});
              return;
            }
            Geometry g = MakeGeometry(c, in, f.dim(0), f.dim(1));
            c.set_output(0, c.input_dtype(0), Shape{g.batch, g.out_h, g.out_w, f.dim(3)});
          },
      .kernel = Conv2DKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        std::vector<Output> args = {g.input(0), g.input(1), g.grad(0)};
        return {AddGradOp(g, Conv2DBackpropInputOp(), args),
                AddGradOp(g, Conv2DBackpropFilterOp(), args)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({1, 4, 4, 2}), SampleDoubles({2, 2, 2, 3})},
                            {kStrides(std::vector<int64_t>{1, 1, 1, 1}), kPadding("SAME")}};
          },
  };
  return op;
}

}  // namespace

Output Conv2D(const Scope& scope, Input input, Input filter, const std::vector<int64_t>& strides,
              const std::string& padding, Precision precision) {
  Output x = AsOutput(scope, input);
  Output w = AsOutput(scope, filter, x.dtype());
  const std::string what = "Conv2D '" + scope.FullName("Conv2D") + "': strides";
  AttrMap attrs = {kStrides(NhwcAttr(what.c_str(), strides)), kPadding(padding)};
  bf16::AddPrecisionAttr(precision, attrs);  // the backprops copy it (AddGradOp)
  return scope.AddNode(Conv2DOp(), {x, w}, std::move(attrs), "Conv2D")->output(0);
}

void nn_internal::RegisterNnConvOps(OpRegistry& registry) {
  for (const OpDef* op : {&Conv2DOp(), &Conv2DBackpropInputOp(), &Conv2DBackpropFilterOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
