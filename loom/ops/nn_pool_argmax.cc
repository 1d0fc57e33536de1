// MaxPoolWithArgmax and its gradient op (nn_pool_argmax.h). NHWC; the window geometry is
// MaxPool's (nn_window.h).
#include "loom/ops/nn_pool_argmax.h"

#include <algorithm>

#include "loom/ops/nn_direct_conv.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/nn_window.h"

namespace loom {
namespace {

using namespace nn_internal;  // NOLINT: the nn files' own helpers

inline constexpr Attr<DType> kTargmax{"Targmax"};
inline constexpr Attr<bool> kIncludeBatchInIndex{"include_batch_in_index"};

template <typename Ctx>
Geometry ArgmaxGeometry(const Ctx& c, const Shape& input) {
  if (input.rank() != 4) c.Fail("input must be NHWC (rank 4), got ", input);
  const auto [k_h, k_w] = SpatialAttr(c, kKsize);
  return MakeGeometry(c, input, k_h, k_w);
}

void PoolKernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Geometry g = ArgmaxGeometry(c, x.shape());
  const Shape out_shape{g.batch, g.out_h, g.out_w, g.channels};
  Tensor out = c.AllocateOutput(0, out_shape);
  Tensor arg = c.AllocateOutput(1, out_shape);
  const bool with_batch = c.attr(kIncludeBatchInIndex);
  SwitchFloat(x.dtype(), "MaxPoolWithArgmax", [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* y = out.data<T>();
    const int64_t ch = g.channels, image = g.in_h * g.in_w * ch;
    std::vector<int64_t> best(out.NumElements());
    c.pool().ParallelFor(g.batch * g.out_h, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const int64_t b = row / g.out_h, oh = row % g.out_h;
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t at = (row * g.out_w + ow) * ch;
          for (int64_t k = 0; k < ch; ++k) best[at + k] = -1;
          // Taps in row-major order; a strictly larger value replaces, so ties keep the first.
          ForEachTap(g, oh, ow, [&](int64_t, int64_t, int64_t ih, int64_t iw) {
            const int64_t pos = (ih * g.in_w + iw) * ch;
            for (int64_t k = 0; k < ch; ++k) {
              const T v = in[b * image + pos + k];
              if (best[at + k] < 0 || v > y[at + k]) {
                y[at + k] = v;
                best[at + k] = pos + k;
              }
            }
          });
          if (with_batch) {
            for (int64_t k = 0; k < ch; ++k) best[at + k] += b * image;
          }
        }
      }
    });
    if (arg.dtype() == kInt64) {
      std::copy(best.begin(), best.end(), arg.data<int64_t>());
    } else {
      std::transform(best.begin(), best.end(), arg.data<int32_t>(),
                     [](int64_t v) { return static_cast<int32_t>(v); });
    }
    return 0;
  });
}

// The flat input position of argmax element i (input 2), checked against the input;
// with_batch: the node's include_batch_in_index.
int64_t ArgmaxTarget(const KernelContext& c, const Geometry& g, bool with_batch, int64_t i) {
  const Tensor& arg = c.input(2);
  const int64_t image = g.in_h * g.in_w * g.channels;
  const int64_t per_image = g.out_h * g.out_w * g.channels;
  const int64_t a =
      arg.dtype() == kInt64 ? arg.data<int64_t>()[i] : int64_t{arg.data<int32_t>()[i]};
  const int64_t target = with_batch ? a : (i / per_image) * image + a;
  if (target < 0 || target >= g.batch * image) {
    c.Fail("argmax ", a, " at ", i, " is outside the input ", c.input(0).shape());
  }
  return target;
}

// Inputs (input, d output, argmax): d input[argmax position] += d output.
void GradKernel(KernelContext& c) {
  const Tensor& x = c.input(0);  // only its shape is used
  const Tensor& dy = c.input(1);
  const Geometry g = ArgmaxGeometry(c, x.shape());
  Tensor dx = c.AllocateOutput(0, x.shape());
  SwitchFloat(x.dtype(), "MaxPoolWithArgmaxGrad", [&](auto tag) {
    using T = decltype(tag);
    T* d = dx.data<T>();
    const T* grad = dy.data<T>();
    std::fill(d, d + dx.NumElements(), T(0));
    const bool with_batch = c.attr(kIncludeBatchInIndex);
    for (int64_t i = 0; i < dy.NumElements(); ++i) d[ArgmaxTarget(c, g, with_batch, i)] += grad[i];
    return 0;
  });
}

// Inputs (input, g shaped as input, argmax): out[i] = g[argmax position i], shaped as
// argmax (TF's MaxPoolGradGradWithArgmax): MaxPoolWithArgmaxGrad's adjoint in d output.
void GradGradKernel(KernelContext& c) {
  nn_internal::ExpectSameRuntimeShape(c, 0, 1);
  const Tensor& x = c.input(0);
  const Tensor& grad = c.input(1);
  const Geometry g = ArgmaxGeometry(c, x.shape());
  Tensor out = c.AllocateOutput(0, c.input(2).shape());
  SwitchFloat(x.dtype(), "MaxPoolGradGradWithArgmax", [&](auto tag) {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* gr = grad.data<T>();
    const bool with_batch = c.attr(kIncludeBatchInIndex);
    for (int64_t i = 0; i < out.NumElements(); ++i) o[i] = gr[ArgmaxTarget(c, g, with_batch, i)];
    return 0;
  });
}

const OpDef& GradOp();

// MaxPoolWithArgmaxGrad and MaxPoolGradGradWithArgmax are linear in their gradient input
// (input 1) and each other's adjoint there; input 0 is read for its shape, argmax is an
// index: neither gets a gradient.
const OpDef& GradGradOp() {
  static const OpDef op = {
      .name = "MaxPoolGradGradWithArgmax",
      .num_inputs = 3,
      .attrs = {kKsize.Required(), kStrides.Required(), PaddingDef(), kTargmax.Default(kInt64),
                kIncludeBatchInIndex.Default(false)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectSameDType(0, 1);
            c.set_output(0, c.input_dtype(0), c.input_shape(2));
          },
      .kernel = GradGradKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {GradOutput(), AddGradOp(g, GradOp(), {g.input(0), g.grad(0), g.input(2)}),
                GradOutput()};
      },
      .not_swept =
          "built only by MaxPoolWithArgmaxGrad's gradient rule; its gradient check "
          "covers it",
  };
  return op;
}

const OpDef& GradOp() {
  static const OpDef op = {
      .name = "MaxPoolWithArgmaxGrad",
      .num_inputs = 3,
      .attrs = {kKsize.Required(), kStrides.Required(), PaddingDef(), kTargmax.Default(kInt64),
                kIncludeBatchInIndex.Default(false)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(0)); },
      .kernel = GradKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {GradOutput(), AddGradOp(g, GradGradOp(), {g.input(0), g.grad(0), g.input(2)}),
                GradOutput()};
      },
      .not_swept = "built only by MaxPoolWithArgmax's gradient rule; its gradient check covers it",
  };
  return op;
}

const OpDef& PoolOp() {
  static const OpDef op = {
      .name = "MaxPoolWithArgmax",
      .num_inputs = 1,
      .attrs = {kKsize.Required(), kStrides.Required(), PaddingDef(), kTargmax.Default(kInt64),
                kIncludeBatchInIndex.Default(false)},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::FromAttr(kTargmax)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectRank(0, 4);
            if (c.attr(kTargmax) != kInt32 && c.attr(kTargmax) != kInt64) {
              c.Fail("Targmax must be int32 or int64, got ", DTypeName(c.attr(kTargmax)));
            }
            const Shape& in = c.input_shape(0);
            Shape out = Shape{kUnknownDim, kUnknownDim, kUnknownDim, kUnknownDim};
            if (in.rank_known()) {
              const Geometry g = ArgmaxGeometry(c, in);
              out = Shape{g.batch, g.out_h, g.out_w, g.channels};
            }
            c.set_output(0, c.input_dtype(0), out);
            c.set_output(1, c.attr(kTargmax), out);
          },
      .kernel = PoolKernel,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        if (!g.grad(0).valid()) return {GradOutput()};
        return {AddGradOp(g, GradOp(), {g.input(0), g.grad(0), g.output(1)})};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 5, 4, 3})},
                            {kKsize(std::vector<int64_t>{1, 2, 3, 1}),
                             kStrides(std::vector<int64_t>{1, 2, 2, 1}), kPadding("SAME")}};
          },
  };
  return op;
}

}  // namespace

PoolWithArgmax MaxPoolWithArgmax(const Scope& scope, Input input, const std::vector<int64_t>& ksize,
                                 const std::vector<int64_t>& strides, const std::string& padding,
                                 PoolWithArgmaxOptions options) {
  const std::string what = "MaxPoolWithArgmax '" + scope.FullName("MaxPoolWithArgmax") + "': ";
  Node* node = scope.AddNode(
      PoolOp(), {AsOutput(scope, input)},
      {kKsize(NhwcAttr((what + "ksize").c_str(), ksize)),
       kStrides(NhwcAttr((what + "strides").c_str(), strides)), kPadding(padding),
       kTargmax(options.argmax_dtype), kIncludeBatchInIndex(options.include_batch_in_index)},
      "MaxPoolWithArgmax");
  return {node->output(0), node->output(1)};
}

void RegisterNnPoolArgmaxOps(OpRegistry& registry) {
  registry.Register(PoolOp());
  registry.Register(GradOp());
  registry.Register(GradGradOp());
}

}  // namespace loom
