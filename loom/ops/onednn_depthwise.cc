#include "loom/ops/onednn_depthwise.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ops/onednn_internal.h"
#include "loom/tensor/tensor.h"

// The helpers in a namespace of their own: a unity build joins this file with the nn files
// that use namespace nn_internal.
namespace loom::onednn_depthwise {
namespace {

using dnnl::memory;
using nn_internal::Geometry;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

// A convolution oneDNN runs here: depthwise (groups = channels, out_c = C * M) or dense
// (one group), dilated or not.
struct ConvShape {
  Geometry g;
  nn_internal::Dilation dilation;
  bool depthwise;
  int64_t out_c;
};

// Its descriptors over Loom's layouts, and what the primitive is asked for: NHWC
// activations, weights in oneDNN's choice of layout.
struct Descs {
  memory::desc src, weights_user, weights_any, dst;
  memory::dims strides, dilates, pad_l, pad_r;
};

std::optional<Descs> MakeDescs(const ConvShape& shape) {
  const Geometry& g = shape.g;
  const nn_internal::Dilation& d = shape.dilation;
  const int64_t span_h = (g.k_h - 1) * d.h + 1, span_w = (g.k_w - 1) * d.w + 1;
  const int64_t pad_b =
      std::max<int64_t>(0, (g.out_h - 1) * g.stride_h + span_h - g.in_h - g.pad_top);
  const int64_t pad_r =
      std::max<int64_t>(0, (g.out_w - 1) * g.stride_w + span_w - g.in_w - g.pad_left);
  // oneDNN requires (in + pad_l + pad_r - span) / stride + 1 == out exactly.
  if ((g.in_h + g.pad_top + pad_b - span_h) / g.stride_h + 1 != g.out_h ||
      (g.in_w + g.pad_left + pad_r - span_w) / g.stride_w + 1 != g.out_w) {
    return std::nullopt;
  }
  const int64_t c = g.channels, k = shape.out_c;
  Descs out;
  if (shape.depthwise) {
    const int64_t m = k / c;
    const memory::dims weights = {c, m, 1, g.k_h, g.k_w};  // [G, O, I, kh, kw]
    // [kh, kw, C, M] seen as [G, O, I, kh, kw]: g steps M, o steps 1, the one i anything.
    out.weights_user = memory::desc(weights, kF32, memory::dims{m, 1, c * m, g.k_w * c * m, c * m});
    out.weights_any = memory::desc(weights, kF32, Tag::any);
  } else {
    const memory::dims weights = {k, c, g.k_h, g.k_w};  // OIHW; Loom's [kh, kw, C, K] is hwio
    out.weights_user = memory::desc(weights, kF32, Tag::hwio);
    out.weights_any = memory::desc(weights, kF32, Tag::any);
  }
  out.src = memory::desc({g.batch, c, g.in_h, g.in_w}, kF32, Tag::nhwc);
  out.dst = memory::desc({g.batch, k, g.out_h, g.out_w}, kF32, Tag::nhwc);
  out.strides = {g.stride_h, g.stride_w};
  out.dilates = {d.h - 1, d.w - 1};
  out.pad_l = {g.pad_top, g.pad_left};
  out.pad_r = {pad_b, pad_r};
  return out;
}

dnnl::convolution_forward::primitive_desc ForwardPd(const Descs& d) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::convolution_direct, d.src, d.weights_any,
                                       d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
  return {desc, onednn_internal::UserScratchpad(), onednn_internal::CpuEngine()};
}

dnnl::convolution_backward_data::primitive_desc BackwardDataPd(const Descs& d) {
  dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                             d.weights_any, d.dst, d.strides, d.dilates, d.pad_l,
                                             d.pad_r);
  return {desc, onednn_internal::UserScratchpad(), onednn_internal::CpuEngine(), ForwardPd(d)};
}

dnnl::convolution_backward_weights::primitive_desc BackwardWeightsPd(const Descs& d) {
  dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, d.src,
                                                d.weights_any, d.dst, d.strides, d.dilates, d.pad_l,
                                                d.pad_r);
  return {desc, onednn_internal::UserScratchpad(), onednn_internal::CpuEngine(), ForwardPd(d)};
}

// oneDNN's reference kernels ("ref:any") run plain loops slower than nn_depthwise.cc's own:
// declined.
template <typename Pd>
bool IsReference(const Pd& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

// One primitive run on this thread: its scratchpad and the weights' reorder, in buffers from
// Loom's tensor allocator.
class Run {
 public:
  Run() : stream_(onednn_internal::CpuEngine()) {}

  memory User(const memory::desc& desc, const float* data) {
    return {desc, onednn_internal::CpuEngine(), const_cast<float*>(data)};
  }
  memory Scratch(const memory::desc& desc) {
    const auto bytes = static_cast<int64_t>(std::max<size_t>(desc.get_size(), 1));
    buffers_.emplace_back(kUInt8, Shape{bytes});
    return {desc, onednn_internal::CpuEngine(), buffers_.back().raw_data()};
  }
  // The user's weights in layout `want`: themselves, or a reordered copy.
  memory Weights(const memory::desc& want, const memory::desc& user, const float* data) {
    memory mem = User(user, data);
    if (want == user) return mem;
    memory out = Scratch(want);
    dnnl::reorder(mem, out).execute(stream_, mem, out);
    return out;
  }
  template <typename Primitive, typename Pd>
  void Execute(const Pd& pd, std::unordered_map<int, memory> args) {
    args.insert({DNNL_ARG_SCRATCHPAD, Scratch(pd.scratchpad_desc())});
    Primitive(pd).execute(stream_, args);
    stream_.wait();
  }
  dnnl::stream& stream() { return stream_; }

 private:
  dnnl::stream stream_;
  std::vector<Tensor> buffers_;
};

bool Forward(const ConvShape& d, const float* x, const float* w, float* y, int threads) {
  const auto descs = MakeDescs(d);
  if (!descs) return false;
  onednn_internal::UseThreads(threads);
  try {
    const auto pd = ForwardPd(*descs);
    if (IsReference(pd)) return false;
    Run run;
    run.Execute<dnnl::convolution_forward>(
        pd, {{DNNL_ARG_SRC, run.User(descs->src, x)},
             {DNNL_ARG_WEIGHTS, run.Weights(pd.weights_desc(), descs->weights_user, w)},
             {DNNL_ARG_DST, run.User(descs->dst, y)}});
  } catch (const dnnl::error&) {
    return false;  // no primitive for this geometry
  }
  return true;
}

bool BackwardData(const ConvShape& d, const float* w, const float* dy, float* dx, int threads) {
  const auto descs = MakeDescs(d);
  if (!descs) return false;
  onednn_internal::UseThreads(threads);
  try {
    const auto pd = BackwardDataPd(*descs);
    if (IsReference(pd)) return false;
    Run run;
    run.Execute<dnnl::convolution_backward_data>(
        pd, {{DNNL_ARG_DIFF_DST, run.User(descs->dst, dy)},
             {DNNL_ARG_WEIGHTS, run.Weights(pd.weights_desc(), descs->weights_user, w)},
             {DNNL_ARG_DIFF_SRC, run.User(descs->src, dx)}});
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

bool BackwardWeights(const ConvShape& d, const float* x, const float* dy, float* dw, int threads) {
  const auto descs = MakeDescs(d);
  if (!descs) return false;
  onednn_internal::UseThreads(threads);
  try {
    const auto pd = BackwardWeightsPd(*descs);
    if (IsReference(pd)) return false;
    Run run;
    dnnl::memory user = run.User(descs->weights_user, dw);
    const bool direct = pd.diff_weights_desc() == descs->weights_user;
    dnnl::memory result = direct ? user : run.Scratch(pd.diff_weights_desc());
    run.Execute<dnnl::convolution_backward_weights>(pd,
                                                    {{DNNL_ARG_SRC, run.User(descs->src, x)},
                                                     {DNNL_ARG_DIFF_DST, run.User(descs->dst, dy)},
                                                     {DNNL_ARG_DIFF_WEIGHTS, result}});
    if (!direct) {
      dnnl::reorder(result, user).execute(run.stream(), result, user);
      run.stream().wait();
    }
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

std::string Impl(const ConvShape& d, int pass, int threads) {
  const auto descs = MakeDescs(d);
  if (!descs) return "";
  onednn_internal::UseThreads(threads);
  try {
    if (pass == 0) return ForwardPd(*descs).impl_info_str();
    if (pass == 1) return BackwardDataPd(*descs).impl_info_str();
    return BackwardWeightsPd(*descs).impl_info_str();
  } catch (const dnnl::error&) {
  }
  return "";
}

}  // namespace
}  // namespace loom::onednn_depthwise

namespace loom::nn_internal {
namespace {

onednn_depthwise::ConvShape DepthwiseConvShape(const DepthwiseShape& d) {
  return {d.g, d.dilation, true, d.out_channels()};
}

}  // namespace

bool OnednnDepthwise(const DepthwiseShape& d, const float* x, const float* w, float* y,
                     int threads) {
  return onednn_depthwise::Forward(DepthwiseConvShape(d), x, w, y, threads);
}

bool OnednnDepthwiseBackpropInput(const DepthwiseShape& d, const float* w, const float* dy,
                                  float* dx, int threads) {
  return onednn_depthwise::BackwardData(DepthwiseConvShape(d), w, dy, dx, threads);
}

bool OnednnDepthwiseBackpropFilter(const DepthwiseShape& d, const float* x, const float* dy,
                                   float* dw, int threads) {
  return onednn_depthwise::BackwardWeights(DepthwiseConvShape(d), x, dy, dw, threads);
}

std::string OnednnDepthwiseImpl(const DepthwiseShape& d, int pass, int threads) {
  return onednn_depthwise::Impl(DepthwiseConvShape(d), pass, threads);
}

bool OnednnDilatedConv2DBackpropInput(const Geometry& g, int64_t out_c, Dilation d, const float* w,
                                      const float* dy, float* dx, int threads) {
  return onednn_depthwise::BackwardData({g, d, false, out_c}, w, dy, dx, threads);
}

bool OnednnDilatedConv2DBackpropFilter(const Geometry& g, int64_t out_c, Dilation d, const float* x,
                                       const float* dy, float* dw, int threads) {
  return onednn_depthwise::BackwardWeights({g, d, false, out_c}, x, dy, dw, threads);
}

std::string OnednnDilatedConv2DImpl(const Geometry& g, int64_t out_c, Dilation d, int pass,
                                    int threads) {
  return onednn_depthwise::Impl({g, d, false, out_c}, pass, threads);
}

}  // namespace loom::nn_internal
