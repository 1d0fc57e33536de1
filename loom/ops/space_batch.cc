// SpaceToBatchND and BatchToSpaceND (space_batch.h). Both walk the batch-side tensor
// [batch * prod(b), j_1 .. j_M, rest] and map each position to the padded space-side one
// [n, j_1 * b_1 + k_1, .., rest], a bijection; rest (the dims after the M blocked ones) is
// copied as one run.
#include "loom/ops/space_batch.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "loom/ops/array_internal.h"

namespace loom {
namespace {

using array_internal::SwitchStorage;

inline constexpr Attr<std::vector<int64_t>> kBlockShape{"block_shape"};
// 2 * M entries: {before_1, after_1, .., before_M, after_M}.
inline constexpr Attr<std::vector<int64_t>> kBlockPaddings{"paddings"};
inline constexpr Attr<std::vector<int64_t>> kBlockCrops{"crops"};

// Checks block_shape and the 2M pads / crops against a shape of known rank; the op name is in
// the context's error prefix.
template <typename Ctx>
void CheckBlocks(const Ctx& c, const std::vector<int64_t>& block, const std::vector<int64_t>& pads,
                 const char* pads_name, const Shape& shape) {
  if (block.empty()) c.Fail("block_shape must have at least one entry");
  for (int64_t b : block) {
    if (b < 1) c.Fail("block_shape entries must be at least 1, got ", AttrValueToString(block));
  }
  if (pads.size() != 2 * block.size()) {
    c.Fail(pads_name, " must have 2 entries {before, after} per block dim (", 2 * block.size(),
           "), got ", pads.size());
  }
  for (int64_t p : pads) {
    if (p < 0) c.Fail(pads_name, " must not be negative, got ", AttrValueToString(pads));
  }
  if (shape.rank_known() && shape.rank() < static_cast<int64_t>(block.size()) + 1) {
    c.Fail("input of shape ", shape, " has no batch dim and ", block.size(),
           " block dims (block_shape ", AttrValueToString(block), ")");
  }
}

// The batch-side shape of a space-side `space` (dims padded by `pads`); kUnknownDim where
// `space` is. Fails when a padded dim does not divide by its block.
template <typename Ctx>
Shape ToBatchShape(const Ctx& c, const Shape& space, const std::vector<int64_t>& block,
                   const std::vector<int64_t>& pads) {
  std::vector<int64_t> dims = space.dims();
  int64_t blocks = 1;
  for (size_t i = 0; i < block.size(); ++i) {
    blocks *= block[i];
    int64_t& d = dims[i + 1];
    if (d == kUnknownDim) continue;
    const int64_t padded = d + pads[2 * i] + pads[2 * i + 1];
    if (padded % block[i] != 0) {
      c.Fail("dim ", i + 1, " of ", space, " padded by {", pads[2 * i], ", ", pads[2 * i + 1],
             "} is ", padded, ", not a multiple of its block ", block[i]);
    }
    d = padded / block[i];
  }
  if (dims[0] != kUnknownDim) dims[0] *= blocks;
  return Shape(std::move(dims));
}

// The space-side shape (after crops) of a batch-side `batch`.
template <typename Ctx>
Shape ToSpaceShape(const Ctx& c, const Shape& batch, const std::vector<int64_t>& block,
                   const std::vector<int64_t>& crops) {
  std::vector<int64_t> dims = batch.dims();
  int64_t blocks = 1;
  for (size_t i = 0; i < block.size(); ++i) {
    blocks *= block[i];
    int64_t& d = dims[i + 1];
    if (d == kUnknownDim) continue;
    d = d * block[i] - crops[2 * i] - crops[2 * i + 1];
    if (d < 0) {
      c.Fail("crops ", AttrValueToString(crops), " remove more than dim ", i + 1, " of ", batch,
             " times its block ", block[i]);
    }
  }
  if (dims[0] != kUnknownDim) {
    if (dims[0] % blocks != 0) {
      c.Fail("batch ", dims[0], " of ", batch, " is not a multiple of the block count ", blocks,
             " (block_shape ", AttrValueToString(block), ")");
    }
    dims[0] /= blocks;
  }
  return Shape(std::move(dims));
}

// Calls fn(batch_offset, space_offset) for each run of `rest` elements: batch_offset into the
// batch-side tensor `batch`, space_offset into the space-side one `space` whose blocked dims
// are shifted by `shift` (the leading pads or crops), or -1 where the position falls in the
// padding.
template <typename Fn>
void ForEachRun(const Shape& batch, const Shape& space, const std::vector<int64_t>& block,
                const std::vector<int64_t>& shift, int64_t rest, const Fn& fn) {
  const size_t m = block.size();
  const int64_t space_batch = space.dim(0);
  std::vector<int64_t> j(m, 0), k(m, 0);
  int64_t offset = 0;
  for (int64_t ob = 0; ob < batch.dim(0); ++ob) {
    // ob = (k_1 * b_2 .. b_M + .. + k_M) * space_batch + n
    const int64_t n = ob % space_batch;
    for (int64_t r = ob / space_batch, i = static_cast<int64_t>(m) - 1; i >= 0; --i) {
      k[i] = r % block[i];
      r /= block[i];
    }
    std::fill(j.begin(), j.end(), 0);
    int64_t positions = 1;
    for (size_t i = 0; i < m; ++i) positions *= batch.dim(i + 1);
    for (int64_t p = 0; p < positions; ++p, offset += rest) {
      int64_t s = n;
      bool inside = true;
      for (size_t i = 0; i < m; ++i) {
        const int64_t x = j[i] * block[i] + k[i] - shift[i];
        inside = inside && x >= 0 && x < space.dim(i + 1);
        s = s * space.dim(i + 1) + x;
      }
      fn(offset, inside ? s * rest : -1);
      for (int64_t i = static_cast<int64_t>(m) - 1; i >= 0; --i) {  // next j, row-major
        if (++j[i] < batch.dim(i + 1)) break;
        j[i] = 0;
      }
    }
  }
}

std::vector<int64_t> Leading(const std::vector<int64_t>& pads) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < pads.size(); i += 2) out.push_back(pads[i]);
  return out;
}

int64_t RestSize(const Shape& s, size_t m) {
  int64_t rest = 1;
  for (int64_t d = static_cast<int64_t>(m) + 1; d < s.rank(); ++d) rest *= s.dim(d);
  return rest;
}

void SpaceToBatchKernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const auto& block = c.attr(kBlockShape);
  const auto& pads = c.attr(kBlockPaddings);
  CheckBlocks(c, block, pads, "paddings", x.shape());
  const Shape out_shape = ToBatchShape(c, x.shape(), block, pads);
  Tensor out = c.AllocateOutput(0, out_shape);
  const int64_t rest = RestSize(x.shape(), block.size());
  SwitchStorage(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = array_internal::Raw<T>(x);
    T* y = array_internal::Raw<T>(out);
    ForEachRun(out_shape, x.shape(), block, Leading(pads), rest, [&](int64_t o, int64_t s) {
      if (s < 0) {
        std::fill(y + o, y + o + rest, T{});
      } else {
        std::copy(in + s, in + s + rest, y + o);
      }
    });
    return 0;
  });
}

void BatchToSpaceKernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const auto& block = c.attr(kBlockShape);
  const auto& crops = c.attr(kBlockCrops);
  CheckBlocks(c, block, crops, "crops", x.shape());
  const Shape out_shape = ToSpaceShape(c, x.shape(), block, crops);
  Tensor out = c.AllocateOutput(0, out_shape);
  const int64_t rest = RestSize(x.shape(), block.size());
  SwitchStorage(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = array_internal::Raw<T>(x);
    T* y = array_internal::Raw<T>(out);
    ForEachRun(x.shape(), out_shape, block, Leading(crops), rest, [&](int64_t b, int64_t s) {
      if (s >= 0) std::copy(in + b, in + b + rest, y + s);
    });
    return 0;
  });
}

const OpDef& BatchToSpaceOp();

const OpDef& SpaceToBatchOp() {
  static const OpDef op = {
      .name = "SpaceToBatchND",
      .num_inputs = 1,
      .attrs = {kBlockShape.Required(), kBlockPaddings.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& in = c.input_shape(0);
            CheckBlocks(c, c.attr(kBlockShape), c.attr(kBlockPaddings), "paddings", in);
            c.set_output(0, c.input_dtype(0),
                         in.rank_known()
                             ? ToBatchShape(c, in, c.attr(kBlockShape), c.attr(kBlockPaddings))
                             : Shape::Unknown());
          },
      .kernel = SpaceToBatchKernel,
      // d input = BatchToSpaceND(d out) with the paddings as crops.
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {g.scope()
                    .AddNode(BatchToSpaceOp(), {g.grad(0)},
                             {kBlockShape(g.node().attr(kBlockShape)),
                              kBlockCrops(g.node().attr(kBlockPaddings))},
                             "BatchToSpaceND")
                    ->output(0)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3, 4, 2})},
                            {kBlockShape(std::vector<int64_t>{2, 2}),
                             kBlockPaddings(std::vector<int64_t>{1, 0, 0, 2})}};
          },
  };
  return op;
}

const OpDef& BatchToSpaceOp() {
  static const OpDef op = {
      .name = "BatchToSpaceND",
      .num_inputs = 1,
      .attrs = {kBlockShape.Required(), kBlockCrops.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& in = c.input_shape(0);
            CheckBlocks(c, c.attr(kBlockShape), c.attr(kBlockCrops), "crops", in);
            c.set_output(0, c.input_dtype(0),
                         in.rank_known()
                             ? ToSpaceShape(c, in, c.attr(kBlockShape), c.attr(kBlockCrops))
                             : Shape::Unknown());
          },
      .kernel = BatchToSpaceKernel,
      // d input = SpaceToBatchND(d out) with the crops as paddings.
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {g.scope()
                    .AddNode(SpaceToBatchOp(), {g.grad(0)},
                             {kBlockShape(g.node().attr(kBlockShape)),
                              kBlockPaddings(g.node().attr(kBlockCrops))},
                             "SpaceToBatchND")
                    ->output(0)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({8, 2, 3, 2})},
                            {kBlockShape(std::vector<int64_t>{2, 2}),
                             kBlockCrops(std::vector<int64_t>{1, 0, 0, 2})}};
          },
  };
  return op;
}

std::vector<int64_t> Flat(const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  std::vector<int64_t> out;
  for (const auto& [before, after] : pairs) {
    out.push_back(before);
    out.push_back(after);
  }
  return out;
}

}  // namespace

Output SpaceToBatchND(const Scope& scope, Input input, const std::vector<int64_t>& block_shape,
                      const std::vector<std::pair<int64_t, int64_t>>& paddings) {
  return scope
      .AddNode(SpaceToBatchOp(), {AsOutput(scope, input)},
               {kBlockShape(block_shape), kBlockPaddings(Flat(paddings))}, "SpaceToBatchND")
      ->output(0);
}

Output BatchToSpaceND(const Scope& scope, Input input, const std::vector<int64_t>& block_shape,
                      const std::vector<std::pair<int64_t, int64_t>>& crops) {
  return scope
      .AddNode(BatchToSpaceOp(), {AsOutput(scope, input)},
               {kBlockShape(block_shape), kBlockCrops(Flat(crops))}, "BatchToSpaceND")
      ->output(0);
}

void RegisterSpaceBatchOps(OpRegistry& registry) {
  registry.Register(SpaceToBatchOp());
  registry.Register(BatchToSpaceOp());
}

}  // namespace loom
