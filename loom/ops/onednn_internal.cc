#include "loom/ops/onednn_internal.h"

#include <omp.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::onednn_internal {

using dnnl::memory;
using nn_internal::Geometry;

const dnnl::engine& CpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void UseThreads(int threads) { omp_set_num_threads(std::max(1, threads)); }

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;
constexpr auto kBf16 = memory::data_type::bf16;

memory::desc ConvDescs::Want(const memory::dims& dims, Tag float32_tag, ConvRole role) const {
  if (operands == ConvOperands::kFloat32) return memory::desc(dims, kF32, float32_tag);
  const auto type = role == ConvRole::kOperand ? kBf16 : kF32;
  if (operands == ConvOperands::kBf16Nhwc && float32_tag == Tag::nhwc) {
    return memory::desc(dims, type, Tag::nhwc);
  }
  return memory::desc(dims, type, Tag::any);
}

std::optional<ConvDescs> MakeConvDescs(ConvOperands operands, const Geometry& g, int64_t out_c) {
  // TF's padding puts the extra row or column (odd totals) after the image: pad_r is the
  // rest of what the last window needs. A VALID window that leaves trailing input unread
  // needs none. oneDNN requires (in + pad_l + pad_r - k) / stride + 1 == out exactly.
  const int64_t pad_b =
      std::max<int64_t>(0, (g.out_h - 1) * g.stride_h + g.k_h - g.in_h - g.pad_top);
  const int64_t pad_r =
      std::max<int64_t>(0, (g.out_w - 1) * g.stride_w + g.k_w - g.in_w - g.pad_left);
  if ((g.in_h + g.pad_top + pad_b - g.k_h) / g.stride_h + 1 != g.out_h ||
      (g.in_w + g.pad_left + pad_r - g.k_w) / g.stride_w + 1 != g.out_w) {
    return std::nullopt;
  }
  ConvDescs d;
  d.operands = operands;
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

namespace {

using Args = std::unordered_map<int, memory>;

// One primitive's execution: the reorders into and out of its layouts, over buffers from
// Loom's tensor allocator, and the run. Belongs to one thread.
class Execution {
 public:
  // REQUIRES: UseThreads ran on this thread before the primitive descriptor was made.
  Execution() : stream_(CpuEngine()) {}

  // A memory in layout `want` holding the user's data at `data` (layout `user`): the user's
  // buffer itself when the layouts and types agree, else a reordered (converted) copy.
  memory Input(const memory::desc& want, const memory::desc& user, const float* data) {
    memory user_mem(user, CpuEngine(), const_cast<float*>(data));
    if (want == user) return user_mem;
    memory mem = Scratch(want);
    dnnl::reorder(user_mem, mem).execute(stream_, user_mem, mem);
    return mem;
  }

  // A memory in layout `want` for a result that belongs at `data` (layout `user`); Run()
  // reorders it there when the layouts differ.
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

dnnl::convolution_forward::primitive_desc ForwardPd(const ConvDescs& d,
                                                    const ConvEpilogue& epilogue = {}) {
  dnnl::primitive_attr attr = UserScratchpad();
  if (epilogue.relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    attr.set_post_ops(ops);
  }
  const auto kind = dnnl::prop_kind::forward_training;
  const auto algo = dnnl::algorithm::convolution_direct;
  if (epilogue.bias != nullptr) {
    const memory::desc bias({d.dst[1]}, kF32, Tag::a);
    dnnl::convolution_forward::desc desc(kind, algo, d.Src(ConvRole::kOperand),
                                         d.Weights(ConvRole::kOperand), bias,
                                         d.Dst(ConvRole::kResult), d.strides, d.pad_l, d.pad_r);
    return dnnl::convolution_forward::primitive_desc(desc, attr, CpuEngine());
  }
  dnnl::convolution_forward::desc desc(kind, algo, d.Src(ConvRole::kOperand),
                                       d.Weights(ConvRole::kOperand), d.Dst(ConvRole::kResult),
                                       d.strides, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, attr, CpuEngine());
}

dnnl::convolution_backward_data::primitive_desc BackwardDataPd(const ConvDescs& d) {
  dnnl::convolution_backward_data::desc desc(
      dnnl::algorithm::convolution_direct, d.Src(ConvRole::kResult), d.Weights(ConvRole::kOperand),
      d.Dst(ConvRole::kOperand), d.strides, d.pad_l, d.pad_r);
  return dnnl::convolution_backward_data::primitive_desc(desc, UserScratchpad(), CpuEngine(),
                                                         ForwardPd(d));
}

dnnl::convolution_backward_weights::primitive_desc BackwardWeightsPd(const ConvDescs& d) {
  dnnl::convolution_backward_weights::desc desc(
      dnnl::algorithm::convolution_direct, d.Src(ConvRole::kOperand), d.Weights(ConvRole::kResult),
      d.Dst(ConvRole::kOperand), d.strides, d.pad_l, d.pad_r);
  return dnnl::convolution_backward_weights::primitive_desc(desc, UserScratchpad(), CpuEngine(),
                                                            ForwardPd(d));
}

// oneDNN's reference kernels ("ref:any"): what it falls back to when no optimized kernel
// takes the layouts asked for; tens of times slower than either layout's kernel.
template <typename PrimitiveDesc>
bool IsReference(const PrimitiveDesc& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

}  // namespace

std::string ConvImpl(ConvOperands operands, ConvPass pass, const Geometry& g, int64_t out_c,
                     int threads) {
  const auto d = MakeConvDescs(operands, g, out_c);
  if (!d) return "";
  UseThreads(threads);
  try {
    switch (pass) {
      case ConvPass::kForward:
        return ForwardPd(*d).impl_info_str();
      case ConvPass::kBackwardData:
        return BackwardDataPd(*d).impl_info_str();
      case ConvPass::kBackwardWeights:
        return BackwardWeightsPd(*d).impl_info_str();
    }
  } catch (const dnnl::error&) {
  }
  return "";
}

bool Conv2D(ConvOperands operands, const Geometry& g, int64_t out_c, const float* x, const float* w,
            float* y, int threads, const ConvEpilogue& epilogue) {
  const auto d = MakeConvDescs(operands, g, out_c);
  if (!d) return false;
  UseThreads(threads);
  try {
    const auto pd = ForwardPd(*d, epilogue);
    if (operands == ConvOperands::kBf16Nhwc && IsReference(pd)) {
      return Conv2D(ConvOperands::kBf16, g, out_c, x, w, y, threads, epilogue);
    }
    Execution run;
    Args args = {{DNNL_ARG_SRC, run.Input(pd.src_desc(), d->src_user, x)},
                 {DNNL_ARG_WEIGHTS, run.Input(pd.weights_desc(), d->weights_user, w)},
                 {DNNL_ARG_DST, run.Output(pd.dst_desc(), d->dst_user, y)}};
    if (epilogue.bias != nullptr) {
      args.insert({DNNL_ARG_BIAS, run.Input(pd.bias_desc(), pd.bias_desc(), epilogue.bias)});
    }
    run.Run<dnnl::convolution_forward>(pd, std::move(args));
  } catch (const dnnl::error&) {
    return false;  // no primitive for this geometry (e.g. an unsupported padding) or CPU
  }
  return true;
}

bool Conv2DBackpropInput(ConvOperands operands, const Geometry& g, int64_t out_c, const float* w,
                         const float* dy, float* dx, int threads) {
  const auto d = MakeConvDescs(operands, g, out_c);
  if (!d) return false;
  UseThreads(threads);
  try {
    const auto pd = BackwardDataPd(*d);
    if (operands == ConvOperands::kBf16Nhwc && IsReference(pd)) {
      return Conv2DBackpropInput(ConvOperands::kBf16, g, out_c, w, dy, dx, threads);
    }
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

bool Conv2DBackpropFilter(ConvOperands operands, const Geometry& g, int64_t out_c, const float* x,
                          const float* dy, float* dw, int threads) {
  const auto d = MakeConvDescs(operands, g, out_c);
  if (!d) return false;
  UseThreads(threads);
  try {
    const auto pd = BackwardWeightsPd(*d);
    if (operands == ConvOperands::kBf16Nhwc && IsReference(pd)) {
      return Conv2DBackpropFilter(ConvOperands::kBf16, g, out_c, x, dy, dw, threads);
    }
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

}  // namespace loom::onednn_internal
