// Indexing array ops: Slice and StridedSlice with their gradient ops (Gather and OneHot
// are in array_gather.cc).
#include <algorithm>
#include <optional>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"

namespace loom {

using namespace array_internal;  // NOLINT: this layer's own helpers

namespace {

inline constexpr Attr<std::vector<int64_t>> kEnd{"end"};
inline constexpr Attr<std::vector<int64_t>> kStrides{"strides"};
inline constexpr Attr<int64_t> kBeginMask{"begin_mask"};
inline constexpr Attr<int64_t> kEndMask{"end_mask"};
inline constexpr Attr<int64_t> kShrinkAxisMask{"shrink_axis_mask"};
inline constexpr Attr<int64_t> kNewAxisMask{"new_axis_mask"};
inline constexpr Attr<int64_t> kEllipsisMask{"ellipsis_mask"};

// A strided box inside a tensor of shape `dims`: per dim, the first index, the step and
// the count. Its elements in row-major order form the dense side of a copy.
struct Box {
  std::vector<int64_t> start, step, count;
};

// Copies the box of `big` (shape big_dims) to/from the dense tensor `dense`:
// kGather: dense = big[box]; otherwise big[box] = dense.
template <typename T, bool kGather>
void BoxCopy(ThreadPool& pool, const std::vector<int64_t>& big_dims, T* big, T* dense,
             const Box& box) {
  const int r = static_cast<int>(big_dims.size());
  if (r == 0) {
    if constexpr (kGather)
      *dense = *big;
    else
      *big = *dense;
    return;
  }
  const std::vector<int64_t> strides = Strides(big_dims);
  std::vector<int64_t> jump(r);  // big offset per step of box index i
  int64_t base = 0;
  for (int i = 0; i < r; ++i) {
    jump[i] = box.step[i] * strides[i];
    base += box.start[i] * strides[i];
  }
  const int64_t inner = box.count[r - 1];
  const int64_t rows = Product(box.count, 0, r - 1);
  if (inner == 0 || rows == 0) return;
  const int64_t inner_jump = jump[r - 1];
  pool.ParallelFor(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(r - 1);
    int64_t rem = b, offset = base;
    for (int i = r - 2; i >= 0; --i) {
      idx[i] = rem % box.count[i];
      rem /= box.count[i];
      offset += idx[i] * jump[i];
    }
    for (int64_t row = b; row < e; ++row) {
      T* d = dense + row * inner;
      T* s = big + offset;
      if (inner_jump == 1) {
        if constexpr (kGather)
          std::copy_n(s, inner, d);
        else
          std::copy_n(d, inner, s);
      } else {
        for (int64_t k = 0; k < inner; ++k) {
          if constexpr (kGather)
            d[k] = s[k * inner_jump];
          else
            s[k * inner_jump] = d[k];
        }
      }
      for (int i = r - 2; i >= 0; --i) {
        offset += jump[i];
        if (++idx[i] < box.count[i]) break;
        offset -= idx[i] * jump[i];
        idx[i] = 0;
      }
    }
  });
}

// Output = input[box], shaped out_shape (same element count as the box).
void GatherBox(KernelContext& c, const Tensor& x, const Box& box, const Shape& out_shape) {
  Tensor y = c.AllocateOutput(0, out_shape);
  if (y.NumElements() == 0) return;
  SwitchStorage(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    BoxCopy<T, true>(c.pool(), x.shape().dims(), const_cast<T*>(Raw<T>(x)), Raw<T>(y), box);
  });
}

// Output = zeros of `dims` with dy placed at box.
void ScatterBox(KernelContext& c, const Tensor& dy, const std::vector<int64_t>& dims,
                const Box& box) {
  Tensor dx = Tensor::Zeros(dy.dtype(), Shape(dims));
  c.set_output(0, dx);
  if (dy.NumElements() == 0) return;
  SwitchStorage(dy.dtype(), [&](auto tag) {
    using T = decltype(tag);
    BoxCopy<T, false>(c.pool(), dims, Raw<T>(dx), const_cast<T*>(Raw<T>(dy)), box);
  });
}

// ---- Slice ------------------------------------------------------------------------------

// The slice's extent per dim; kUnknownDim where the input dim is unknown and size is -1.
template <typename Ctx>
std::vector<int64_t> SliceSizes(const Ctx& c, const Shape& in, const std::vector<int64_t>& begin,
                                const std::vector<int64_t>& size) {
  if (begin.size() != size.size() ||
      (in.rank_known() && static_cast<int>(begin.size()) != in.rank())) {
    c.Fail("begin ", DimsString(begin), " and size ", DimsString(size),
           " need one entry per dim of the input ", in);
  }
  std::vector<int64_t> out(size.size());
  for (size_t i = 0; i < size.size(); ++i) {
    const int64_t d = in.rank_known() ? in.dim(static_cast<int>(i)) : kUnknownDim;
    if (begin[i] < 0 || size[i] < -1) {
      c.Fail("begin ", DimsString(begin), " must be >= 0 and size ", DimsString(size),
             " >= -1 (-1: to the end)");
    }
    out[i] = size[i] == -1 ? (d < 0 ? kUnknownDim : d - begin[i]) : size[i];
    if (d >= 0 && (begin[i] > d || begin[i] + out[i] > d)) {
      c.Fail("slice begin ", DimsString(begin), " size ", DimsString(size),
             " is out of bounds for input ", in, " in dim ", i);
    }
  }
  return out;
}

const OpDef& SliceGradOp();

const OpDef& SliceOp() {
  static const OpDef op = {
      .name = "Slice",
      .num_inputs = 1,
      .attrs = {kSliceBegin.Required(), kSliceSize.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.set_output(
                0, c.input_dtype(0),
                Shape(SliceSizes(c, c.input_shape(0), c.attr(kSliceBegin), c.attr(kSliceSize))));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const auto& begin = c.attr(kSliceBegin);
            auto sizes = SliceSizes(c, x.shape(), begin, c.attr(kSliceSize));
            // A slice of whole trailing rows is a contiguous view: no copy.
            bool contiguous = true;
            for (int i = 1; i < x.rank(); ++i) contiguous &= begin[i] == 0 && sizes[i] == x.dim(i);
            if (x.rank() >= 1 && contiguous) {
              const int64_t row = Product(x.shape().dims(), 1, x.rank());
              c.set_output(
                  0, Tensor::FromBuffer(x.dtype(), Shape(sizes), x.buffer(),
                                        x.byte_offset() + begin[0] * row * DTypeSize(x.dtype())));
              return;
            }
            GatherBox(c, x, Box{begin, std::vector<int64_t>(sizes.size(), 1), sizes}, Shape(sizes));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dx = zeros like x with dy at [begin, begin + size).
        return {AddShapedGrad(g, SliceGradOp(),
                              {kSliceBegin(g.attr(kSliceBegin)), kSliceSize(g.attr(kSliceSize))})};
      },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({3, 4})},
                {kSliceBegin(std::vector<int64_t>{1, 0}), kSliceSize(std::vector<int64_t>{2, -1})}};
          },
  };
  return op;
}

// Inputs: dy and x's shape (int64 vector); output: zeros shaped like x, dy at `begin`.
const OpDef& SliceGradOp() {
  static const OpDef op = {
      .name = "SliceGrad",
      .num_inputs = 2,
      .attrs = {kSliceBegin.Required(), kSliceSize.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = ShapedLikeInput1,
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            auto dims = DimsFromTensor(c, c.input(1), "input shape");
            const auto& begin = c.attr(kSliceBegin);
            auto sizes = SliceSizes(c, Shape(dims), begin, c.attr(kSliceSize));
            if (Shape(sizes) != dy.shape()) {
              c.Fail("gradient ", dy.shape(), " does not match the slice ", DimsString(sizes));
            }
            ScatterBox(c, dy, dims, Box{begin, std::vector<int64_t>(sizes.size(), 1), sizes});
          },
      .grad =
          [](const GradContext& g) {
            return std::vector<GradOutput>{
                Slice(g.scope(), g.grad(0), g.attr(kSliceBegin), g.attr(kSliceSize)), GradOutput()};
          },
      .not_swept = "built only by Slice's gradient rule; Slice's gradient check covers it",
  };
  return op;
}

// ---- StridedSlice -----------------------------------------------------------------------

struct ResolvedSlice {
  Box box;                        // over the input dims (shrunk dims have count 1)
  std::vector<int64_t> out_dims;  // with new axes, without shrunk dims
};

// Resolves a strided-slice spec (TF's semantics) against `in`. Entries for unknown dims
// get count kUnknownDim. Returns nullopt when in's rank is unknown.
template <typename Ctx>
std::optional<ResolvedSlice> ResolveStridedSlice(const Ctx& c, const Shape& in) {
  const auto& begin = c.attr(kSliceBegin);
  const auto& end = c.attr(kEnd);
  const auto& strides = c.attr(kStrides);
  const int64_t begin_mask = c.attr(kBeginMask);
  const int64_t end_mask = c.attr(kEndMask);
  const int64_t shrink_mask = c.attr(kShrinkAxisMask);
  const int64_t new_axis_mask = c.attr(kNewAxisMask);
  const int64_t ellipsis_mask = c.attr(kEllipsisMask);
  const int n = static_cast<int>(begin.size());
  if (end.size() != begin.size() || strides.size() != begin.size()) {
    c.Fail("begin ", DimsString(begin), ", end ", DimsString(end), " and strides ",
           DimsString(strides), " must have the same length");
  }
  if ((ellipsis_mask & (ellipsis_mask - 1)) != 0) c.Fail("at most one ellipsis is allowed");
  if (!in.rank_known()) return std::nullopt;
  const int rank = in.rank();
  auto bit = [](int64_t mask, int i) { return (mask >> i) & 1; };
  int real = 0;
  bool has_ellipsis = false;
  for (int i = 0; i < n; ++i) {
    if (bit(ellipsis_mask, i))
      has_ellipsis = true;
    else if (!bit(new_axis_mask, i))
      ++real;
  }
  if (real > rank) {
    c.Fail("slice spec with ", real, " indices is too long for input ", in);
  }
  ResolvedSlice r;
  int d = 0;  // next input dim
  auto full = [&](int count) {
    for (int k = 0; k < count; ++k, ++d) {
      r.box.start.push_back(0);
      r.box.step.push_back(1);
      r.box.count.push_back(in.dim(d));
      r.out_dims.push_back(in.dim(d));
    }
  };
  for (int i = 0; i < n; ++i) {
    if (bit(ellipsis_mask, i)) {
      full(rank - real);
      continue;
    }
    if (bit(new_axis_mask, i)) {
      r.out_dims.push_back(1);
      continue;
    }
    const int64_t size = in.dim(d);
    const int64_t stride = strides[i];
    if (stride == 0) c.Fail("strides ", DimsString(strides), " must be non-zero");
    if (bit(shrink_mask, i)) {
      int64_t index = begin[i];
      if (size >= 0) {
        if (index < 0) index += size;
        if (index < 0 || index >= size) {
          c.Fail("index ", begin[i], " is out of range for dim ", d, " of size ", size, " in ", in);
        }
      }
      r.box.start.push_back(index);
      r.box.step.push_back(1);
      r.box.count.push_back(1);
      ++d;
      continue;
    }
    if (size < 0) {
      r.box.start.push_back(0);
      r.box.step.push_back(stride);
      r.box.count.push_back(kUnknownDim);
      r.out_dims.push_back(kUnknownDim);
      ++d;
      continue;
    }
    int64_t b, e, count;
    if (stride > 0) {
      b = bit(begin_mask, i) ? 0 : begin[i];
      e = bit(end_mask, i) ? size : end[i];
      if (b < 0) b += size;
      if (e < 0) e += size;
      b = std::clamp<int64_t>(b, 0, size);
      e = std::clamp<int64_t>(e, 0, size);
      count = e > b ? (e - b + stride - 1) / stride : 0;
    } else {
      b = bit(begin_mask, i) ? size - 1 : (begin[i] < 0 ? begin[i] + size : begin[i]);
      e = bit(end_mask, i) ? -1 : (end[i] < 0 ? end[i] + size : end[i]);
      b = std::clamp<int64_t>(b, -1, size - 1);
      e = std::clamp<int64_t>(e, -1, size - 1);
      count = b > e ? (b - e - stride - 1) / -stride : 0;
    }
    r.box.start.push_back(count > 0 ? b : 0);
    r.box.step.push_back(stride);
    r.box.count.push_back(count);
    r.out_dims.push_back(count);
    ++d;
  }
  if (!has_ellipsis) full(rank - d);
  return r;
}

const OpDef& StridedSliceOp();
const OpDef& StridedSliceGradOp();

// The attributes StridedSlice and StridedSliceGrad declare.
std::vector<AttrDef> StridedSliceAttrDefs() {
  return {kSliceBegin.Required(),  kEnd.Required(),         kStrides.Required(),
          kBeginMask.Default(0),   kEndMask.Default(0),     kShrinkAxisMask.Default(0),
          kNewAxisMask.Default(0), kEllipsisMask.Default(0)};
}

// The attributes StridedSlice declares, copied from `node` (StridedSlice or its grad).
AttrMap StridedSliceAttrs(const Node& node) {
  AttrMap attrs;
  for (const AttrDef& a : StridedSliceOp().attrs) attrs.Set(a.name, node.attrs().map().at(a.name));
  return attrs;
}

const OpDef& StridedSliceOp() {
  static const OpDef op = {
      .name = "StridedSlice",
      .num_inputs = 1,
      .attrs = StridedSliceAttrDefs(),
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            auto r = ResolveStridedSlice(c, c.input_shape(0));
            c.set_output(0, c.input_dtype(0), r ? Shape(r->out_dims) : Shape::Unknown());
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            auto r = ResolveStridedSlice(c, x.shape());
            GatherBox(c, x, r->box, Shape(r->out_dims));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dx = zeros like x with dy scattered back to the sliced positions.
        return {AddShapedGrad(g, StridedSliceGradOp(), StridedSliceAttrs(g.node()))};
      },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({4, 3})},
                {kSliceBegin(std::vector<int64_t>{0, 1}), kEnd(std::vector<int64_t>{4, 3}),
                 kStrides(std::vector<int64_t>{2, 1})}};
          },
  };
  return op;
}

// Inputs: dy and x's shape (int64 vector); output: zeros shaped like x with dy at the
// positions StridedSlice (same attributes) reads.
const OpDef& StridedSliceGradOp() {
  static const OpDef op = {
      .name = "StridedSliceGrad",
      .num_inputs = 2,
      .attrs = StridedSliceAttrDefs(),
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = ShapedLikeInput1,
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            auto dims = DimsFromTensor(c, c.input(1), "input shape");
            auto r = ResolveStridedSlice(c, Shape(dims));
            if (Shape(r->out_dims) != dy.shape()) {
              c.Fail("gradient ", dy.shape(), " does not match the slice ",
                     DimsString(r->out_dims));
            }
            ScatterBox(c, dy, dims, r->box);
          },
      .grad =
          [](const GradContext& g) {
            Node* n = g.scope().AddNode(StridedSliceOp(), {g.grad(0)}, StridedSliceAttrs(g.node()),
                                        "StridedSlice");
            return std::vector<GradOutput>{n->output(0), GradOutput()};
          },
      .not_swept =
          "built only by StridedSlice's gradient rule; StridedSlice's gradient check covers it",
  };
  return op;
}

}  // namespace

Output Slice(const Scope& scope, Input x, const std::vector<int64_t>& begin,
             const std::vector<int64_t>& size) {
  return scope
      .AddNode(SliceOp(), {AsOutput(scope, x)}, {kSliceBegin(begin), kSliceSize(size)}, "Slice")
      ->output(0);
}

Output StridedSlice(const Scope& scope, Input x, const std::vector<int64_t>& begin,
                    const std::vector<int64_t>& end, const std::vector<int64_t>& strides,
                    StridedSliceMasks masks) {
  return scope
      .AddNode(StridedSliceOp(), {AsOutput(scope, x)},
               {kSliceBegin(begin), kEnd(end), kStrides(strides), kBeginMask(masks.begin_mask),
                kEndMask(masks.end_mask), kShrinkAxisMask(masks.shrink_axis_mask),
                kNewAxisMask(masks.new_axis_mask), kEllipsisMask(masks.ellipsis_mask)},
               "StridedSlice")
      ->output(0);
}

namespace array_internal {

void RegisterArrayIndexOps(OpRegistry& registry) {
  for (const OpDef* op : {&SliceOp(), &SliceGradOp(), &StridedSliceOp(), &StridedSliceGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace array_internal
}  // namespace loom
