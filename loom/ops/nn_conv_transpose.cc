// Conv2DTranspose and its filter gradient (nn_conv_transpose.h): Conv2D's input and filter
// backprops with the roles of a layer. float32 on oneDNN (onednn_conv.h; dilated,
// onednn_depthwise.h), direct loops else.
#include "loom/ops/nn_conv_transpose.h"

#include <algorithm>

#include "loom/ops/array.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_direct_conv.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_conv.h"
#include "loom/ops/onednn_depthwise.h"
#include "loom/ops/space_batch.h"

namespace loom {
namespace {

using namespace nn_internal;  // NOLINT: the nn files' own helpers

// output_shape's values [batch, H, W, C], checked.
template <typename Ctx>
Shape OutputShapeOf(const Ctx& c, const Tensor& t) {
  if (t.dtype() != kInt32 && t.dtype() != kInt64) {
    c.Fail("output_shape must be int32 or int64, is ", DTypeName(t.dtype()));
  }
  if (t.shape().rank() != 1 || t.NumElements() != 4) {
    c.Fail("output_shape must be a vector [batch, height, width, channels], got shape ", t.shape());
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < 4; ++i) {
    dims.push_back(t.dtype() == kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i]);
    if (dims.back() < 0) c.Fail("output_shape has a negative dimension: ", Shape(dims));
  }
  return Shape(dims);
}

// The Conv2D geometry from `output` (the conv's input) to `value` (its output); fails unless
// the conv of `output` by `filter` gives value's shape.
template <typename Ctx>
Geometry TransposeGeometry(const Ctx& c, const Shape& output, const Shape& filter,
                           const Shape& value) {
  if (value.rank() != 4 || filter.rank() != 4) {
    c.Fail("value must be NHWC (rank 4) and filter [height, width, output_channels, ",
           "in_channels] (rank 4), got ", value, " and ", filter);
  }
  if (value.dim(3) != filter.dim(3)) {
    c.Fail("value channels ", value.dim(3), " (value shape ", value,
           ") do not match the filter's in_channels (dim 3) ", filter.dim(3), " (filter shape ",
           filter, ")");
  }
  if (output.dim(3) != filter.dim(2)) {
    c.Fail("output_shape ", output, " has ", output.dim(3),
           " channels; the filter's output_channels (dim 2) is ", filter.dim(2), " (filter shape ",
           filter, ")");
  }
  const Geometry g = MakeDilatedGeometry(c, output, filter.dim(0), filter.dim(1), DilationOf(c));
  const Shape conv{g.batch, g.out_h, g.out_w, filter.dim(3)};
  if (conv != value) {
    c.Fail("output_shape ", output, " does not fit value ", value, ": a Conv2D of ", output,
           " by filter ", filter, " with strides ", AttrValueToString(c.attr(kStrides)),
           ", dilations ", AttrValueToString(c.attr(kDilations)), " and ", c.attr(kPadding),
           " padding gives ", conv);
  }
  return g;
}

// The filter [kh, kw, C, K] with d.h - 1 zero rows between its rows and d.w - 1 zero columns
// between its columns: [(kh - 1) * d.h + 1, (kw - 1) * d.w + 1, C, K], so that a plain Conv2D
// by it is the dilated one. Built as ops (padding a batch of one with d.h * d.w - 1 zero
// filters, BatchToSpaceND interleaving them, the trailing zeros cropped), so it is
// differentiable and needs no static shape. The filter itself when not dilated.
Output DilatedFilter(const Scope& s, Output filter, Dilation d) {
  if (d.h == 1 && d.w == 1) return filter;
  Output batch =
      Pad(s, ExpandDims(s, filter, 0), {{0, d.h * d.w - 1}, {0, 0}, {0, 0}, {0, 0}, {0, 0}});
  return Squeeze(s, BatchToSpaceND(s, batch, {d.h, d.w}, {{0, d.h - 1}, {0, d.w - 1}}), {0});
}

// dx[b, ih, iw, c] = sum over the positions whose window covers (ih, iw) of
// sum_k dy[b, oh, ow, k] * w[kh, kw, c, k]: Conv2D's input backprop, one image per task.
template <typename T>
void TransposeLoops(ThreadPool& pool, const Geometry& g, Dilation d, int64_t out_c, const T* w,
                    const T* dy, T* dx) {
  const int64_t ch = g.channels, image = g.in_h * g.in_w * ch;
  pool.ParallelFor(g.batch, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      T* img = dx + b * image;
      std::fill(img, img + image, T(0));
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const T* grad = dy + ((b * g.out_h + oh) * g.out_w + ow) * out_c;
          ForEachTap(
              g, oh, ow,
              [&](int64_t kh, int64_t kw, int64_t ih, int64_t iw) {
                T* dst = img + (ih * g.in_w + iw) * ch;
                const T* tap = w + (kh * g.k_w + kw) * ch * out_c;
                for (int64_t k = 0; k < ch; ++k) {
                  T sum = 0;
                  for (int64_t o = 0; o < out_c; ++o) sum += grad[o] * tap[k * out_c + o];
                  dst[k] += sum;
                }
              },
              d);
        }
      }
    }
  });
}

// dw[kh, kw, c, k] = sum over (b, oh, ow) of x[b, ih, iw, c] * dy[b, oh, ow, k]: Conv2D's
// filter backprop, one tap per task.
template <typename T>
void FilterLoops(ThreadPool& pool, const Geometry& g, Dilation d, int64_t out_c, const T* x,
                 const T* dy, T* dw) {
  const int64_t ch = g.channels;
  pool.ParallelFor(g.k_h * g.k_w, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      T* dst = dw + t * ch * out_c;
      std::fill(dst, dst + ch * out_c, T(0));
      ForEachPositionOfTap(
          g, t / g.k_w, t % g.k_w,
          [&](int64_t b, int64_t oh, int64_t ow, int64_t ih, int64_t iw) {
            const T* in = x + ((b * g.in_h + ih) * g.in_w + iw) * ch;
            const T* grad = dy + ((b * g.out_h + oh) * g.out_w + ow) * out_c;
            for (int64_t k = 0; k < ch; ++k) {
              for (int64_t o = 0; o < out_c; ++o) {
                dst[k * out_c + o] += in[k] * grad[o];
              }
            }
          },
          d);
    }
  });
}

// Inputs (value, filter, output_shape).
void Conv2DTransposeKernel(KernelContext& c) {
  const Tensor& value = c.input(0);
  const Tensor& filter = c.input(1);
  const Shape output = OutputShapeOf(c, c.input(2));
  const Geometry g = TransposeGeometry(c, output, filter.shape(), value.shape());
  const Dilation d = DilationOf(c);
  const int64_t out_c = filter.dim(3);
  Tensor y = c.AllocateOutput(0, output);
  if (y.NumElements() == 0) return;
  // onednn_conv.h's geometry has no dilation: dilated filters take onednn_depthwise.h's.
  const bool dense = d.h == 1 && d.w == 1;
  if (value.dtype() == kFloat32 && value.NumElements() > 0 && filter.NumElements() > 0 &&
      (dense ? OnednnConv2DBackpropInput(g, out_c, filter.data<float>(), value.data<float>(),
                                         y.data<float>(), c.pool().num_threads())
             : OnednnDilatedConv2DBackpropInput(g, out_c, d, filter.data<float>(),
                                                value.data<float>(), y.data<float>(),
                                                c.pool().num_threads()))) {
    return;
  }
  SwitchFloat(value.dtype(), "Conv2DTranspose", [&](auto tag) {
    using T = decltype(tag);
    TransposeLoops<T>(c.pool(), g, d, out_c, filter.data<T>(), value.data<T>(), y.data<T>());
    return 0;
  });
}

// Inputs (d output, value, filter); only filter's shape is read.
void FilterGradKernel(KernelContext& c) {
  const Tensor& dz = c.input(0);
  const Tensor& value = c.input(1);
  const Tensor& filter = c.input(2);
  const Geometry g = TransposeGeometry(c, dz.shape(), filter.shape(), value.shape());
  const Dilation d = DilationOf(c);
  const int64_t out_c = filter.dim(3);
  Tensor dw = c.AllocateOutput(0, filter.shape());
  if (dw.NumElements() == 0) return;
  const bool dense = d.h == 1 && d.w == 1;
  if (dz.dtype() == kFloat32 && value.NumElements() > 0 && dz.NumElements() > 0 &&
      (dense ? OnednnConv2DBackpropFilter(g, out_c, dz.data<float>(), value.data<float>(),
                                          dw.data<float>(), c.pool().num_threads())
             : OnednnDilatedConv2DBackpropFilter(g, out_c, d, dz.data<float>(), value.data<float>(),
                                                 dw.data<float>(), c.pool().num_threads()))) {
    return;
  }
  SwitchFloat(dz.dtype(), "Conv2DTransposeBackpropFilter", [&](auto tag) {
    using T = decltype(tag);
    FilterLoops<T>(c.pool(), g, d, out_c, dz.data<T>(), value.data<T>(), dw.data<T>());
    return 0;
  });
}

const OpDef& Conv2DTransposeOp();

const OpDef& FilterGradOp() {
  static const OpDef op = {
      .name = "Conv2DTransposeBackpropFilter",
      .num_inputs = 3,
      .attrs = {kStrides.Required(), PaddingDef(), DilationsDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            c.ExpectSameDType(0, 2);
            c.set_output(0, c.input_dtype(0), c.input_shape(2));
          },
      .kernel = FilterGradKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dw[kh, kw, c, k] = sum dz[b, ih, iw, c] * value[b, oh, ow, k], linear in both. With
        // G = d dw: d dz = Conv2DTranspose(value, G) to dz's shape; d value = the Conv2D of
        // dz by G (dilated as the node is). The filter input is read for its shape only.
        const Scope& s = g.scope();
        const Output& d_dw = g.grad(0);
        const std::vector<int64_t> rates = g.node().attr(kDilations);
        Output d_dz = AddGradOp(g, Conv2DTransposeOp(), {g.input(1), d_dw, ShapeOf(s, g.input(0))});
        Output d_value = Conv2D(s, g.input(0), DilatedFilter(s, d_dw, {rates[1], rates[2]}),
                                g.node().attr(kStrides), g.node().attr(kPadding));
        return {d_dz, d_value, GradOutput()};
      },
      .not_swept =
          "built only by Conv2DTranspose's gradient rule; its gradient checks (first "
          "and second order) cover it",
  };
  return op;
}

const OpDef& Conv2DTransposeOp() {
  static const OpDef op = {
      .name = "Conv2DTranspose",
      .num_inputs = 3,
      .attrs = {kStrides.Required(), PaddingDef(), DilationsDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            c.ExpectDType(2, {kInt32, kInt64});
            c.ExpectRank(0, 4);
            c.ExpectRank(1, 4);
            c.ExpectRank(2, 1);
            SpatialAttr(c, kStrides);
            SpatialAttr(c, kDilations);
            const Shape& value = c.input_shape(0);
            const Shape& filter = c.input_shape(1);
            const Tensor* shape = c.input_constant(2);
            if (shape == nullptr) {
              // What is known of a computed output_shape (e.g. the batch from ShapeOf, the
              // rest constants, as layers::Conv2DTranspose builds it).
              const Shape known = StaticShapeValue(c.input(2));
              std::vector<int64_t> dims(4, kUnknownDim);
              if (known.rank_known() && known.rank() == 4) dims = known.dims().ToVector();
              const int64_t out_c = filter.rank_known() ? filter.dim(2) : kUnknownDim;
              if (dims[3] == kUnknownDim) dims[3] = out_c;
              if (out_c != kUnknownDim && dims[3] != out_c) {
                c.Fail("output_shape ", Shape(dims), " has ", dims[3],
                       " channels; the filter's output_channels (dim 2) is ", out_c,
                       " (filter shape ", filter, ")");
              }
              c.set_output(0, c.input_dtype(0), Shape(dims));
              return;
            }
            const Shape output = OutputShapeOf(c, *shape);
            if (value.fully_defined() && filter.fully_defined()) {
              TransposeGeometry(c, output, filter, value);
            }
            c.set_output(0, c.input_dtype(0), output);
          },
      .kernel = Conv2DTransposeKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // y = Conv2D's input backprop of value: d value = Conv2D(d y, filter); d filter =
        // Conv2D's filter backprop with d y as the input and value as the output gradient.
        // Dilated, the Conv2D is by the filter with the dilation's zeros put in
        // (DilatedFilter): Conv2D has no dilations of its own.
        const Scope& s = g.scope();
        const std::vector<int64_t> rates = g.node().attr(kDilations);  // [1, h, w, 1], checked
        const Dilation d{rates[1], rates[2]};
        Output d_value = Conv2D(s, g.grad(0), DilatedFilter(s, g.input(1), d),
                                g.node().attr(kStrides), g.node().attr(kPadding));
        Output d_filter = AddGradOp(g, FilterGradOp(), {g.grad(0), g.input(0), g.input(1)});
        return {d_value, d_filter, GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({1, 2, 2, 3}), SampleDoubles({2, 2, 2, 3}),
                             Tensor::FromVector<int64_t>({1, 4, 3, 2})},
                            {kStrides(std::vector<int64_t>{1, 2, 2, 1}), kPadding("SAME"),
                             kDilations(std::vector<int64_t>{1, 1, 2, 1})}};
          },
  };
  return op;
}

}  // namespace

Output Conv2DTranspose(const Scope& scope, Input value, Input filter, Input output_shape,
                       const std::vector<int64_t>& strides, const std::string& padding,
                       const std::vector<int64_t>& dilations) {
  Output v = AsOutput(scope, value);
  Output w = AsOutput(scope, filter, v.dtype());
  Output shape = AsOutput(scope, output_shape);
  const std::string what = "Conv2DTranspose '" + scope.FullName("Conv2DTranspose");
  return AddOp(scope, Conv2DTransposeOp(), {v, w, shape},
               {kStrides(NhwcAttr((what + "': strides").c_str(), strides)), kPadding(padding),
                kDilations(NhwcAttr((what + "': dilations").c_str(), dilations))});
}

void RegisterNnConvTransposeOps(OpRegistry& registry) {
  for (const OpDef* op : {&Conv2DTransposeOp(), &FilterGradOp()}) registry.Register(*op);
}

}  // namespace loom
