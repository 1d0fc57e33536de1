// DepthwiseConv2dNative with its input and filter backprops (nn_depthwise.h). NHWC; the
// window geometry is Conv2D's (nn_window.h).
#include "loom/ops/nn_depthwise.h"

#include <algorithm>

#include "loom/ops/nn_direct_conv.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_depthwise.h"

namespace loom {
namespace {

using namespace nn_internal;  // NOLINT: the nn files' own helpers

// The geometry of a depthwise convolution: Conv2D's, the channel multiplier M, the dilation.
using Depthwise = DepthwiseShape;

// Checks input [N, H, W, C], filter [kh, kw, C, M] (and out_backprop [N, oh, ow, C * M],
// when given) at run time.
Depthwise DepthwiseGeometry(const KernelContext& c, const Shape& input, const Shape& filter,
                            const Tensor* out_backprop) {
  if (input.rank() != 4 || filter.rank() != 4) {
    c.Fail("input must be NHWC (rank 4) and filter [height, width, in_channels, multiplier] ",
           "(rank 4), got ", input, " and ", filter);
  }
  if (input.dim(3) != filter.dim(2)) {
    c.Fail("input channels ", input.dim(3), " (input shape ", input,
           ") do not match the filter's in_channels ", filter.dim(2), " (filter shape ", filter,
           ")");
  }
  const Dilation dilation = DilationOf(c);
  Depthwise d{MakeDilatedGeometry(c, input, filter.dim(0), filter.dim(1), dilation), filter.dim(3),
              dilation};
  if (out_backprop != nullptr) {
    const Shape expected{d.g.batch, d.g.out_h, d.g.out_w, d.out_channels()};
    if (out_backprop->shape() != expected) {
      c.Fail("out_backprop has shape ", out_backprop->shape(), ", expected ", expected);
    }
  }
  return d;
}

// out[b, oh, ow, c * M + m] = sum over taps of in[b, ih, iw, c] * filter[kh, kw, c, m]
void DepthwiseKernel(KernelContext& c) {
  const Tensor& input = c.input(0);
  const Tensor& filter = c.input(1);
  const Depthwise d = DepthwiseGeometry(c, input.shape(), filter.shape(), nullptr);
  const Geometry& g = d.g;
  Tensor out = c.AllocateOutput(0, Shape{g.batch, g.out_h, g.out_w, d.out_channels()});
  if (out.NumElements() == 0) return;
  if (input.dtype() == kFloat32 && input.NumElements() > 0 && filter.NumElements() > 0 &&
      OnednnDepthwise(d, input.data<float>(), filter.data<float>(), out.data<float>(),
                      c.pool().num_threads())) {
    return;
  }
  SwitchFloat(input.dtype(), "DepthwiseConv2dNative", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    const T* w = filter.data<T>();
    T* y = out.data<T>();
    const int64_t ch = g.channels, m_count = d.multiplier, cm = d.out_channels();
    c.pool().ParallelFor(g.batch * g.out_h, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const int64_t b = row / g.out_h, oh = row % g.out_h;
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          T* dst = y + (row * g.out_w + ow) * cm;
          std::fill(dst, dst + cm, T(0));
          ForEachTap(
              g, oh, ow,
              [&](int64_t kh, int64_t kw, int64_t ih, int64_t iw) {
                const T* in = x + ((b * g.in_h + ih) * g.in_w + iw) * ch;
                const T* tap = w + (kh * g.k_w + kw) * cm;
                for (int64_t k = 0; k < ch; ++k) {
                  for (int64_t m = 0; m < m_count; ++m)
                    dst[k * m_count + m] += in[k] * tap[k * m_count + m];
                }
              },
              d.dilation);
        }
      }
    });
    return 0;
  });
}

// d in[b, ih, iw, c] = sum over the outputs whose window covers (ih, iw) of
// sum_m d out[b, oh, ow, c * M + m] * filter[kh, kw, c, m]; one image per task, so the
// scatter into it needs no locks.
void DepthwiseBackpropInputKernel(KernelContext& c) {
  const Tensor& input = c.input(0);  // only its shape is used
  const Tensor& filter = c.input(1);
  const Tensor& dy = c.input(2);
  const Depthwise d = DepthwiseGeometry(c, input.shape(), filter.shape(), &dy);
  const Geometry& g = d.g;
  Tensor dx = c.AllocateOutput(0, input.shape());
  if (dx.NumElements() == 0) return;
  if (input.dtype() == kFloat32 && dy.NumElements() > 0 && filter.NumElements() > 0 &&
      OnednnDepthwiseBackpropInput(d, filter.data<float>(), dy.data<float>(), dx.data<float>(),
                                   c.pool().num_threads())) {
    return;
  }
  SwitchFloat(input.dtype(), "DepthwiseConv2dNativeBackpropInput", [&](auto tag) {
    using T = decltype(tag);
    const T* w = filter.data<T>();
    const T* dout = dy.data<T>();
    T* din = dx.data<T>();
    const int64_t ch = g.channels, m_count = d.multiplier, cm = d.out_channels();
    const int64_t image = g.in_h * g.in_w * ch;
    c.pool().ParallelFor(g.batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        T* img = din + b * image;
        std::fill(img, img + image, T(0));
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const T* grad = dout + ((b * g.out_h + oh) * g.out_w + ow) * cm;
            ForEachTap(
                g, oh, ow,
                [&](int64_t kh, int64_t kw, int64_t ih, int64_t iw) {
                  T* dst = img + (ih * g.in_w + iw) * ch;
                  const T* tap = w + (kh * g.k_w + kw) * cm;
                  for (int64_t k = 0; k < ch; ++k) {
                    T sum = 0;
                    for (int64_t m = 0; m < m_count; ++m)
                      sum += grad[k * m_count + m] * tap[k * m_count + m];
                    dst[k] += sum;
                  }
                },
                d.dilation);
          }
        }
      }
    });
    return 0;
  });
}

// d filter[kh, kw, c, m] = sum over (b, oh, ow) of in[b, ih, iw, c] * d out[b, oh, ow, c*M+m];
// one filter tap per task.
void DepthwiseBackpropFilterKernel(KernelContext& c) {
  const Tensor& input = c.input(0);
  const Tensor& filter = c.input(1);  // only its shape is used
  const Tensor& dy = c.input(2);
  const Depthwise d = DepthwiseGeometry(c, input.shape(), filter.shape(), &dy);
  const Geometry& g = d.g;
  Tensor dw = c.AllocateOutput(0, filter.shape());
  if (dw.NumElements() == 0) return;
  if (input.dtype() == kFloat32 && dy.NumElements() > 0 && input.NumElements() > 0 &&
      OnednnDepthwiseBackpropFilter(d, input.data<float>(), dy.data<float>(), dw.data<float>(),
                                    c.pool().num_threads())) {
    return;
  }
  SwitchFloat(input.dtype(), "DepthwiseConv2dNativeBackpropFilter", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.data<T>();
    const T* dout = dy.data<T>();
    T* dfilter = dw.data<T>();
    const int64_t ch = g.channels, m_count = d.multiplier, cm = d.out_channels();
    c.pool().ParallelFor(g.k_h * g.k_w, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t kh = t / g.k_w, kw = t % g.k_w;
        T* dst = dfilter + t * cm;
        std::fill(dst, dst + cm, T(0));
        ForEachPositionOfTap(
            g, kh, kw,
            [&](int64_t b, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
              const T* in = x + ((b * g.in_h + ih) * g.in_w + iw) * ch;
              const T* grad = dout + ((b * g.out_h + oh) * g.out_w + ow) * cm;
              for (int64_t k = 0; k < ch; ++k) {
                for (int64_t m = 0; m < m_count; ++m)
                  dst[k * m_count + m] += in[k] * grad[k * m_count + m];
              }
            },
            d.dilation);
      }
    });
    return 0;
  });
}

void DepthwiseShapeChecks(InferenceContext& c) { ConvOperandChecks(c); }

const char* const kBuiltByGradient =
    "built only by DepthwiseConv2dNative's gradient rule; its gradient checks (first and "
    "second order) cover it";

const OpDef& DepthwiseOp();
const OpDef& BackpropInputOp();
const OpDef& BackpropFilterOp();

// A backprop record whose output has the shape of input `like` (0: the input, 1: the filter).
// Both are linear in the two tensors they read (input 0 or 1 only by its shape), so their
// gradients are the other two ops of the family with the same attributes.
OpDef BackpropOp(const char* name, int like, KernelFn kernel, GradFn grad) {
  return {
      .name = name,
      .num_inputs = 3,
      .attrs = {kStrides.Required(), PaddingDef(), DilationsDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [like](InferenceContext& c) {
            DepthwiseShapeChecks(c);
            c.set_output(0, c.input_dtype(0), c.input_shape(like));
          },
      .kernel = std::move(kernel),
      .grad = std::move(grad),
      .not_swept = kBuiltByGradient,
  };
}

const OpDef& BackpropInputOp() {
  // dx = D^T(filter) dy, D the depthwise convolution. With G = d dx:
  //   d dy = D(filter) G, the forward op of G;
  //   d filter = the filter gradient of the forward op at input G and output gradient dy.
  static const OpDef op = BackpropOp(
      "DepthwiseConv2dNativeBackpropInput", 0, DepthwiseBackpropInputKernel,
      [](const GradContext& g) -> std::vector<GradOutput> {
        const Output& d_dx = g.grad(0);
        return {GradOutput(), AddGradOp(g, BackpropFilterOp(), {d_dx, g.input(1), g.input(2)}),
                AddGradOp(g, DepthwiseOp(), {d_dx, g.input(1)})};
      });
  return op;
}

const OpDef& BackpropFilterOp() {
  // dw[kh, kw, c, m] = sum x[b, ih, iw, c] dy[b, oh, ow, c * M + m]. With G = d dw:
  //   d x = the input gradient of the forward op by filter G at output gradient dy;
  //   d dy = D(G) x, the forward op of x by G.
  static const OpDef op =
      BackpropOp("DepthwiseConv2dNativeBackpropFilter", 1, DepthwiseBackpropFilterKernel,
                 [](const GradContext& g) -> std::vector<GradOutput> {
                   const Output& d_dw = g.grad(0);
                   return {AddGradOp(g, BackpropInputOp(), {g.input(0), d_dw, g.input(2)}),
                           GradOutput(), AddGradOp(g, DepthwiseOp(), {g.input(0), d_dw})};
                 });
  return op;
}

const OpDef& DepthwiseOp() {
  static const OpDef op = {
      .name = "DepthwiseConv2dNative",
      .num_inputs = 2,
      .attrs = {kStrides.Required(), PaddingDef(), DilationsDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            DepthwiseShapeChecks(c);
            const Shape& in = c.input_shape(0);
            const Shape& f = c.input_shape(1);
            if (!in.rank_known() || !f.rank_known()) {
              c.set_output(0, c.input_dtype(0),
                           Shape{kUnknownDim, kUnknownDim, kUnknownDim, kUnknownDim});
              return;
            }
            const Geometry g = MakeDilatedGeometry(c, in, f.dim(0), f.dim(1), DilationOf(c));
            const int64_t out_c = in.dim(3) == kUnknownDim || f.dim(3) == kUnknownDim
                                      ? kUnknownDim
                                      : in.dim(3) * f.dim(3);
            c.set_output(0, c.input_dtype(0), Shape{g.batch, g.out_h, g.out_w, out_c});
          },
      .kernel = DepthwiseKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        std::vector<Output> args = {g.input(0), g.input(1), g.grad(0)};
        return {AddGradOp(g, BackpropInputOp(), args), AddGradOp(g, BackpropFilterOp(), args)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 5, 4, 2}), SampleDoubles({3, 2, 2, 3})},
                            {kStrides(std::vector<int64_t>{1, 2, 1, 1}), kPadding("SAME"),
                             kDilations(std::vector<int64_t>{1, 1, 2, 1})}};
          },
  };
  return op;
}

}  // namespace

Output DepthwiseConv2dNative(const Scope& scope, Input input, Input filter,
                             const std::vector<int64_t>& strides, const std::string& padding,
                             const std::vector<int64_t>& dilations) {
  Output x = AsOutput(scope, input);
  Output w = AsOutput(scope, filter, x.dtype());
  const std::string what = "DepthwiseConv2dNative '" + scope.FullName("DepthwiseConv2dNative");
  return AddOp(scope, DepthwiseOp(), {x, w},
               {kStrides(NhwcAttr((what + "': strides").c_str(), strides)), kPadding(padding),
                kDilations(NhwcAttr((what + "': dilations").c_str(), dilations))});
}

void RegisterNnDepthwiseOps(OpRegistry& registry) {
  for (const OpDef* op : {&DepthwiseOp(), &BackpropInputOp(), &BackpropFilterOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
