#include "loom/ops/bf16_conv.h"

#include <omp.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::bf16 {
namespace {

using dnnl::memory;
using nn_internal::Geometry;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;
constexpr auto kBf16 = memory::data_type::bf16;
constexpr auto kF32 = memory::data_type::f32;

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The user's float32 layouts, and the primitive's: bf16 operands, float32 results, each
// in layout `any` for oneDNN to choose.
struct Descs {
  memory::dims src, weights, dst;
  memory::desc src_user, weights_user, dst_user;
  memory::dims strides, pad_l, pad_r;
  memory::desc Any(const memory::dims& dims, memory::data_type type) const {
    return memory::desc(dims, type, Tag::any);
  }
};

// As onednn_conv.cc's MakeDescs: TF's extra padding row / column goes after the image.
std::optional<Descs> MakeDescs(const Geometry& g, int64_t out_c) {
  const int64_t pad_b =
      std::max<int64_t>(0, (g.out_h - 1) * g.stride_h + g.k_h - g.in_h - g.pad_top);
  const int64_t pad_r =
      std::max<int64_t>(0, (g.out_w - 1) * g.stride_w + g.k_w - g.in_w - g.pad_left);
  if ((g.in_h + g.pad_top + pad_b - g.k_h) / g.stride_h + 1 != g.out_h ||
      (g.in_w + g.pad_left + pad_r - g.k_w) / g.stride_w + 1 != g.out_w) {
    return std::nullopt;
  }
  Descs d;
  d.src = {g.batch, g.channels, g.in_h, g.in_w};
  d.weights = {out_c, g.channels, g.k_h, g.k_w};
  d.dst = {g.batch, out_c, g.out_h, g.out_w};
  d.src_user = memory::desc(d.src, kF32, Tag::nhwc);
  d.weights_user = memory::desc(d.weights, kF32, Tag::hwio);
  d.dst_user = memory::desc(d.dst, kF32, Tag::nhwc);
  d.strides = {g.stride_h, g.stride_w};
  d.pad_l = {g.pad_top, g.pad_left};
  d.pad_r = {pad_b, pad_r};
  return d;
}

// One primitive's execution: reorders of the float32 operands into the primitive's bf16
// layouts, the run, and the reorders of its float32 results back, over buffers from
// Loom's tensor allocator.
class Execution {
 public:
  Execution() : stream_(CpuEngine()) {}

  memory Input(const memory::desc& want, const memory::desc& user, const float* data) {
    memory user_mem(user, CpuEngine(), const_cast<float*>(data));
    memory mem = Scratch(want);  // the dtypes differ, so always a reorder
    dnnl::reorder(user_mem, mem).execute(stream_, user_mem, mem);
    return mem;
  }

  memory Output(const memory::desc& want, const memory::desc& user, float* data) {
    memory user_mem(user, CpuEngine(), data);
    if (want == user) return user_mem;
    memory mem = Scratch(want);
    outputs_.push_back({mem, user_mem});
    return mem;
  }

  memory Scratch(const memory::desc& desc) {
    const auto bytes = static_cast<int64_t>(std::max<size_t>(desc.get_size(), 1));
    buffers_.emplace_back(kUInt8, Shape{bytes});
    return memory(desc, CpuEngine(), buffers_.back().raw_data());
  }

  template <typename Primitive, typename PrimitiveDesc>
  void Run(const PrimitiveDesc& pd, Args args) {
    args.insert({DNNL_ARG_SCRATCHPAD, Scratch(pd.scratchpad_desc())});
    Primitive(pd).execute(stream_, args);
    for (auto& [from, to] : outputs_) dnnl::reorder(from, to).execute(stream_, from, to);
    stream_.wait();
  }

 private:
  dnnl::stream stream_;
  std::vector<Tensor> buffers_;
  std::vector<std::pair<memory, memory>> outputs_;
};

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc ForwardPd(const Descs& d) {
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.Any(d.src, kBf16),
      d.Any(d.weights, kBf16), d.Any(d.dst, kF32), d.strides, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, UserScratchpad(), CpuEngine());
}

// The thread count must be set before a primitive descriptor fixes the work split.
void UseThreads(int threads) { omp_set_num_threads(std::max(1, threads)); }

}  // namespace

bool OnednnConv2DBf16(const Geometry& g, int64_t out_c, const float* x, const float* w, float* y,
                      int threads) {
  const auto d = MakeDescs(g, out_c);
  if (!d) return false;
  UseThreads(threads);
  try {
    const auto pd = ForwardPd(*d);
    Execution run;
    Args args = {{DNNL_ARG_SRC, run.Input(pd.src_desc(), d->src_user, x)},
                 {DNNL_ARG_WEIGHTS, run.Input(pd.weights_desc(), d->weights_user, w)},
                 {DNNL_ARG_DST, run.Output(pd.dst_desc(), d->dst_user, y)}};
    run.Run<dnnl::convolution_forward>(pd, std::move(args));
  } catch (const dnnl::error&) {
    return false;  // no bf16 primitive for this CPU or geometry
  }
  return true;
}

bool OnednnConv2DBackpropInputBf16(const Geometry& g, int64_t out_c, const float* w,
                                   const float* dy, float* dx, int threads) {
  const auto d = MakeDescs(g, out_c);
  if (!d) return false;
  UseThreads(threads);
  try {
    dnnl::convolution_backward_data::desc desc(
        dnnl::algorithm::convolution_direct, d->Any(d->src, kF32), d->Any(d->weights, kBf16),
        d->Any(d->dst, kBf16), d->strides, d->pad_l, d->pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(desc, UserScratchpad(), CpuEngine(),
                                                             ForwardPd(*d));
    Execution run;
    Args args = {{DNNL_ARG_DIFF_DST, run.Input(pd.diff_dst_desc(), d->dst_user, dy)},
                 {DNNL_ARG_WEIGHTS, run.Input(pd.weights_desc(), d->weights_user, w)},
                 {DNNL_ARG_DIFF_SRC, run.Output(pd.diff_src_desc(), d->src_user, dx)}};
    run.Run<dnnl::convolution_backward_data>(pd, std::move(args));
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

bool OnednnConv2DBackpropFilterBf16(const Geometry& g, int64_t out_c, const float* x,
                                    const float* dy, float* dw, int threads) {
  const auto d = MakeDescs(g, out_c);
  if (!d) return false;
  UseThreads(threads);
  try {
    dnnl::convolution_backward_weights::desc desc(
        dnnl::algorithm::convolution_direct, d->Any(d->src, kBf16), d->Any(d->weights, kF32),
        d->Any(d->dst, kBf16), d->strides, d->pad_l, d->pad_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, UserScratchpad(), CpuEngine(),
                                                                ForwardPd(*d));
    Execution run;
    Args args = {{DNNL_ARG_SRC, run.Input(pd.src_desc(), d->src_user, x)},
                 {DNNL_ARG_DIFF_DST, run.Input(pd.diff_dst_desc(), d->dst_user, dy)},
                 {DNNL_ARG_DIFF_WEIGHTS, run.Output(pd.diff_weights_desc(), d->weights_user, dw)}};
    run.Run<dnnl::convolution_backward_weights>(pd, std::move(args));
  } catch (const dnnl::error&) {
    return false;
  }
  return true;
}

}  // namespace loom::bf16
