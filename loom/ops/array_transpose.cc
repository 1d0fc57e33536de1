// Transpose: a permutation of the axes, copied through the strided-copy helpers.
#include <algorithm>
#include <cstring>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"

namespace loom {

using namespace array_internal;  // NOLINT: the array files' own helpers

namespace {

inline constexpr Attr<std::vector<int64_t>> kPerm{"perm"};

template <typename Ctx>
void CheckPerm(const Ctx& c, const std::vector<int64_t>& perm, int rank) {
  std::vector<char> seen(perm.size(), 0);
  bool ok = static_cast<int>(perm.size()) == rank;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = 1;
  }
  if (!ok) {
    c.Fail("perm ", DimsString(perm), " is not a permutation of the ", rank, " dims of the input");
  }
}

template <typename T>
void TransposeKernel(KernelContext& c, const Tensor& x, const std::vector<int64_t>& perm,
                     Tensor& y) {
  // Drop size-1 dims and merge input axes that stay adjacent in the output, so
  // [B,M,N] perm [0,2,1] is a batch of 2-D transposes and [B,M,1] perm [0,2,1] a copy.
  std::vector<int64_t> kept_axis(x.rank(), -1);
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (x.dim(i) != 1) {
      kept_axis[i] = static_cast<int64_t>(dims.size());
      dims.push_back(x.dim(i));
    }
  }
  std::vector<int64_t> p;
  for (int64_t a : perm)
    if (kept_axis[a] >= 0) p.push_back(kept_axis[a]);
  // Groups of consecutive input axes, in output order.
  std::vector<std::pair<int64_t, int64_t>> groups;  // (first input axis, count)
  for (size_t i = 0; i < p.size(); ++i) {
    if (i > 0 && p[i] == p[i - 1] + 1) {
      ++groups.back().second;
    } else {
      groups.push_back({p[i], 1});
    }
  }
  // Input axis order of the groups -> merged input dims; merged perm.
  std::vector<size_t> by_input(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) by_input[i] = i;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return groups[a].first < groups[b].first; });
  std::vector<int64_t> in_dims(groups.size()), mperm(groups.size());
  for (size_t k = 0; k < by_input.size(); ++k) {
    const auto& g = groups[by_input[k]];
    in_dims[k] = Product(dims, g.first, g.first + g.second);
    mperm[by_input[k]] = static_cast<int64_t>(k);
  }
  const int r = static_cast<int>(in_dims.size());
  const T* in = Raw<T>(x);
  T* out = Raw<T>(y);
  const int64_t n = x.NumElements();
  if (r <= 1) {
    std::copy_n(in, n, out);
    return;
  }
  if (r == 2 || (r == 3 && mperm[0] == 0 && mperm[1] == 2)) {
    const int64_t batch = r == 3 ? in_dims[0] : 1;
    const int64_t rows = in_dims[r - 2], cols = in_dims[r - 1];
    const int64_t tiles = (cols + 31) / 32;
    c.pool().ParallelFor(batch * tiles, std::max<int64_t>(1, 16384 / (32 * rows)),
                         [&](int64_t b, int64_t e) {
                           for (int64_t u = b; u < e; ++u) {
                             const int64_t bi = u / tiles, t = u % tiles;
                             Transpose2D(in + bi * rows * cols, cols, out + bi * rows * cols, rows,
                                         rows, t * 32, std::min(cols, t * 32 + 32));
                           }
                         });
    return;
  }
  const std::vector<int64_t> in_strides = Strides(in_dims);
  std::vector<int64_t> out_dims(r), stride(r);
  for (int i = 0; i < r; ++i) {
    out_dims[i] = in_dims[mperm[i]];
    stride[i] = in_strides[mperm[i]];
  }
  const int64_t inner = out_dims[r - 1], inner_stride = stride[r - 1];
  const int64_t rows = n / inner;
  c.pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(r - 1);
    int64_t rem = b, offset = 0;
    for (int i = r - 2; i >= 0; --i) {
      idx[i] = rem % out_dims[i];
      rem /= out_dims[i];
      offset += idx[i] * stride[i];
    }
    for (int64_t row = b; row < e; ++row) {
      T* o = out + row * inner;
      const T* src = in + offset;
      if (inner_stride == 1) {
        std::copy_n(src, inner, o);
      } else {
        for (int64_t k = 0; k < inner; ++k) o[k] = src[k * inner_stride];
      }
      for (int i = r - 2; i >= 0; --i) {  // odometer step
        offset += stride[i];
        if (++idx[i] < out_dims[i]) break;
        offset -= idx[i] * stride[i];
        idx[i] = 0;
      }
    }
  });
}

const OpDef& TransposeOp() {
  static const OpDef op = {
      .name = "Transpose",
      .num_inputs = 1,
      .attrs = {kPerm.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const auto& perm = c.attr(kPerm);
            const Shape& in = c.input_shape(0);
            CheckPerm(c, perm, in.rank_known() ? in.rank() : static_cast<int>(perm.size()));
            std::vector<int64_t> dims(perm.size(), kUnknownDim);
            if (in.rank_known())
              for (size_t i = 0; i < perm.size(); ++i) dims[i] = in.dim(perm[i]);
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const auto& perm = c.attr(kPerm);
            CheckPerm(c, perm, x.rank());
            std::vector<int64_t> dims(perm.size());
            for (size_t i = 0; i < perm.size(); ++i) dims[i] = x.dim(perm[i]);
            // Moving only size-1 dims keeps the element order: a zero-copy view.
            int64_t last = -1;
            bool in_order = true;
            for (int64_t p : perm) {
              if (x.dim(p) == 1) continue;
              in_order &= p > last;
              last = p;
            }
            if (in_order) return c.set_output(0, x.Reshaped(Shape(dims)));
            Tensor y = c.AllocateOutput(0, Shape(dims));
            SwitchStorage(x.dtype(),
                          [&](auto tag) { TransposeKernel<decltype(tag)>(c, x, perm, y); });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dx = transpose(dy, inverse(perm)).
        const auto& perm = g.attr(kPerm);
        std::vector<int64_t> inverse(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
        return {Transpose(g.scope(), g.grad(0), inverse)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kPerm(std::vector<int64_t>{1, 0})}};
          },
  };
  return op;
}

}  // namespace

Output Transpose(const Scope& scope, Input x, const std::vector<int64_t>& perm) {
  return scope.AddNode(TransposeOp(), {AsOutput(scope, x)}, {kPerm(perm)}, "Transpose")->output(0);
}

void array_internal::RegisterArrayTransposeOps(OpRegistry& registry) {
  registry.Register(TransposeOp());
}

}  // namespace loom
