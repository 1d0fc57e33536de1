// Array ops that join, split or repeat blocks of a tensor: Concat, Split, Tile, Pad, and
// their gradient ops.
#include <algorithm>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/attr_keys.h"
#include "loom/ops/grad_support.h"

namespace loom {

using namespace array_internal;  // NOLINT: this layer's own helpers

namespace {

using op_attrs::kAxis;
inline constexpr Attr<int64_t> kNumSplit{"num_split"};
inline constexpr Attr<std::vector<int64_t>> kMultiples{"multiples"};
inline constexpr Attr<std::vector<int64_t>> kPaddings{"paddings"};
inline constexpr Attr<double> kConstant{"constant"};

// ---- Concat / Split ---------------------------------------------------------------------

// Copies x's slabs along `axis` into the outputs, output i taking sizes[i] of them.
// Outputs are zero-copy views when the axis is the outermost non-trivial one.
void SplitKernel(KernelContext& c, const Tensor& x, int axis, const std::vector<int64_t>& sizes) {
  const std::vector<int64_t>& dims = x.shape().dims();
  const int64_t outer = Product(dims, 0, axis);
  const int64_t inner = Product(dims, axis + 1, dims.size());
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> out_dims = dims;
    out_dims[axis] = sizes[i];
    if (outer == 1) {
      c.set_output(static_cast<int>(i),
                   Tensor::FromBuffer(x.dtype(), Shape(out_dims), x.buffer(),
                                      x.byte_offset() + offset * inner * DTypeSize(x.dtype())));
    } else {
      Tensor y = c.AllocateOutput(static_cast<int>(i), Shape(out_dims));
      const int64_t chunk = sizes[i] * inner, row = dims[axis] * inner;
      SwitchStorage(x.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* in = Raw<T>(x) + offset * inner;
        T* out = Raw<T>(y);
        c.pool().ParallelFor(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, chunk)),
                             [&](int64_t b, int64_t e) {
                               for (int64_t o = b; o < e; ++o)
                                 std::copy_n(in + o * row, chunk, out + o * chunk);
                             });
      });
    }
    offset += sizes[i];
  }
}

const OpDef& ConcatGradOp();

const OpDef& ConcatOp() {
  static const OpDef op = {
      .name = "Concat",
      .num_inputs = kVariadic,
      .attrs = {kAxis.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() == 0) c.Fail("needs at least one input");
            int rank = -1;
            for (int i = 0; i < c.num_inputs(); ++i) {
              c.ExpectSameDType(0, i);
              if (c.input_shape(i).rank_known()) rank = c.input_shape(i).rank();
            }
            if (rank < 0) return c.set_output(0, c.input_dtype(0), Shape::Unknown());
            if (rank == 0) c.Fail("cannot concatenate scalars; use Stack or ExpandDims first");
            int axis = CanonicalAxis(c, c.attr(kAxis), rank);
            std::vector<int64_t> dims(rank, kUnknownDim);
            int64_t axis_size = 0;
            for (int i = 0; i < c.num_inputs(); ++i) {
              const Shape& s = c.input_shape(i);
              if (!s.rank_known()) {
                axis_size = kUnknownDim;
                continue;
              }
              if (s.rank() != rank) {
                c.Fail("input ", i, " has shape ", s, " of rank ", s.rank(),
                       "; the other inputs have rank ", rank);
              }
              for (int d = 0; d < rank; ++d) {
                if (d == axis) continue;
                if (dims[d] >= 0 && s.dim(d) >= 0 && dims[d] != s.dim(d)) {
                  c.Fail("input ", i, " has shape ", s, ", which differs from the others in dim ",
                         d, " (", s.dim(d), " vs ", dims[d], "); only dim ", axis, " may differ");
                }
                if (dims[d] < 0) dims[d] = s.dim(d);
              }
              axis_size =
                  (axis_size < 0 || s.dim(axis) < 0) ? kUnknownDim : axis_size + s.dim(axis);
            }
            dims[axis] = axis_size;
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& first = c.input(0);
            const int rank = first.rank();
            if (rank == 0) c.Fail("cannot concatenate scalars");
            const int axis = CanonicalAxis(c, c.attr(kAxis), rank);
            std::vector<int64_t> dims = first.shape().dims();
            dims[axis] = 0;
            for (int i = 0; i < c.num_inputs(); ++i) {
              const Shape& s = c.input(i).shape();
              bool ok = s.rank() == rank;
              for (int d = 0; ok && d < rank; ++d) ok = d == axis || s.dim(d) == first.dim(d);
              if (!ok) {
                c.Fail("input ", i, " has shape ", s, ", input 0 has ", first.shape(),
                       "; only dim ", axis, " may differ");
              }
              dims[axis] += s.dim(axis);
            }
            Tensor y = c.AllocateOutput(0, Shape(dims));
            const int64_t outer = Product(dims, 0, axis);
            const int64_t inner = Product(dims, axis + 1, dims.size());
            const int64_t row = dims[axis] * inner;
            SwitchStorage(first.dtype(), [&](auto tag) {
              using T = decltype(tag);
              T* out = Raw<T>(y);
              c.pool().ParallelFor(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row)),
                                   [&](int64_t b, int64_t e) {
                                     for (int64_t o = b; o < e; ++o) {
                                       T* dst = out + o * row;
                                       for (int i = 0; i < c.num_inputs(); ++i) {
                                         const Tensor& x = c.input(i);
                                         const int64_t chunk = x.dim(axis) * inner;
                                         std::copy_n(Raw<T>(x) + o * chunk, chunk, dst);
                                         dst += chunk;
                                       }
                                     }
                                   });
            });
          },
      .grad =
          [](const GradContext& g) {
            // dx_i = the slab of dy where x_i was placed.
            const Scope& s = g.scope();
            std::vector<Output> inputs = {g.grad(0)};
            for (int i = 0; i < g.node().num_inputs(); ++i) {
              inputs.push_back(ShapeOfOrConst(s, g.input(i)));
            }
            Node* split = s.AddNode(ConcatGradOp(), inputs, {kAxis(g.attr(kAxis))}, "ConcatGrad");
            std::vector<GradOutput> grads;
            grads.reserve(g.node().num_inputs());
            for (int i = 0; i < g.node().num_inputs(); ++i) grads.push_back(split->output(i));
            return grads;
          },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({2, 2})}, {kAxis(1)}};
          },
  };
  return op;
}

// Concatenates the gradients that reach `node`'s outputs, zeros for the missing ones.
Output ConcatOutputGrads(const GradContext& g, int64_t axis) {
  std::vector<Output> parts;
  parts.reserve(g.node().num_outputs());
  for (int i = 0; i < g.node().num_outputs(); ++i) {
    parts.push_back(g.grad(i).valid() ? g.grad(i) : ZerosLike(g.scope(), g.output(i)));
  }
  return Concat(g.scope(), parts, axis);
}

const OpDef& SplitOp() {
  static const OpDef op = {
      .name = "Split",
      .num_inputs = 1,
      .attrs = {kAxis.Required(), kNumSplit.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const int64_t num = c.attr(kNumSplit);
            if (num < 1) c.Fail("num_split must be at least 1, got ", num);
            const Shape& in = c.input_shape(0);
            Shape part = in;
            if (in.rank_known()) {
              if (in.rank() == 0) c.Fail("cannot split a scalar");
              int axis = CanonicalAxis(c, c.attr(kAxis), in.rank());
              if (in.dim(axis) >= 0) {
                if (in.dim(axis) % num != 0) {
                  c.Fail("cannot split dim ", axis, " of ", in, " (size ", in.dim(axis), ") into ",
                         num, " equal parts");
                }
                part.set_dim(axis, in.dim(axis) / num);
              }
            }
            for (int64_t i = 0; i < num; ++i)
              c.set_output(static_cast<int>(i), c.input_dtype(0), part);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const int64_t num = c.attr(kNumSplit);
            if (x.rank() == 0) c.Fail("cannot split a scalar");
            int axis = CanonicalAxis(c, c.attr(kAxis), x.rank());
            if (x.dim(axis) % num != 0) {
              c.Fail("cannot split dim ", axis, " of ", x.shape(), " into ", num, " equal parts");
            }
            SplitKernel(c, x, axis, std::vector<int64_t>(num, x.dim(axis) / num));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {ConcatOutputGrads(g, g.attr(kAxis))};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 4})}, {kAxis(1), kNumSplit(2)}};
          },
  };
  return op;
}

// Inputs: dy, then the shape (int64 vector) of each concatenated input; outputs: the
// slab of dy for each.
const OpDef& ConcatGradOp() {
  static const OpDef op = {
      .name = "ConcatGrad",
      .num_inputs = kVariadic,
      .attrs = {kAxis.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& dy = c.input_shape(0);
            for (int i = 1; i < c.num_inputs(); ++i) {
              Shape s = StaticShapeValue(c.input(i));
              if (s.rank_known() && dy.rank_known() && s.rank() == dy.rank()) {
                int axis = CanonicalAxis(c, c.attr(kAxis), dy.rank());
                Shape rest = dy;
                rest.set_dim(axis, s.dim(axis));
                s = s.MergeWith(rest);
              }
              c.set_output(i - 1, c.input_dtype(0), s);
            }
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            int axis = CanonicalAxis(c, c.attr(kAxis), dy.rank());
            std::vector<int64_t> sizes;
            int64_t total = 0;
            for (int i = 1; i < c.num_inputs(); ++i) {
              auto dims = DimsFromTensor(c, c.input(i), "input shape");
              if (static_cast<int>(dims.size()) != dy.rank()) {
                c.Fail("input shape ", DimsString(dims), " does not match gradient ", dy.shape());
              }
              sizes.push_back(dims[axis]);
              total += dims[axis];
            }
            if (total != dy.dim(axis)) {
              c.Fail("input sizes along dim ", axis, " sum to ", total, ", gradient has ",
                     dy.shape());
            }
            SplitKernel(c, dy, axis, sizes);
          },
      .grad =
          [](const GradContext& g) {
            std::vector<GradOutput> grads(g.node().num_inputs());
            grads[0] = ConcatOutputGrads(g, g.attr(kAxis));
            return grads;
          },
      .not_swept = "built only by Concat's gradient rule; Concat's gradient check covers it",
  };
  return op;
}

// ---- Tile -------------------------------------------------------------------------------

template <typename Ctx>
std::vector<int64_t> CheckMultiples(const Ctx& c, const std::vector<int64_t>& multiples,
                                    const Shape& in) {
  if (in.rank_known() && static_cast<int>(multiples.size()) != in.rank()) {
    c.Fail("multiples ", DimsString(multiples), " must have one entry per dim of ", in);
  }
  for (int64_t m : multiples)
    if (m < 0) c.Fail("multiples ", DimsString(multiples), " must be non-negative");
  return multiples;
}

const OpDef& TileGradOp();

const OpDef& TileOp() {
  static const OpDef op = {
      .name = "Tile",
      .num_inputs = 1,
      .attrs = {kMultiples.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const auto& m = CheckMultiples(c, c.attr(kMultiples), c.input_shape(0));
            std::vector<int64_t> dims(m.size(), kUnknownDim);
            if (c.input_shape(0).rank_known()) {
              for (size_t i = 0; i < m.size(); ++i) {
                int64_t d = c.input_shape(0).dim(i);
                dims[i] = d < 0 ? (m[i] == 0 ? 0 : kUnknownDim) : d * m[i];
              }
            }
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const auto& m = CheckMultiples(c, c.attr(kMultiples), x.shape());
            const int r = x.rank();
            std::vector<int64_t> out_dims(r);
            for (int i = 0; i < r; ++i) out_dims[i] = x.dim(i) * m[i];
            Tensor y = c.AllocateOutput(0, Shape(out_dims));
            if (y.NumElements() == 0) return;
            if (r == 0) {
              y.CopyFrom(x);
              return;
            }
            // Each output row (last dim) is the matching input row repeated m[r-1] times.
            const int64_t in_row = x.dim(r - 1), out_row = out_dims[r - 1];
            const int64_t rows = y.NumElements() / out_row;
            const std::vector<int64_t> in_strides = Strides(x.shape().dims());
            SwitchStorage(x.dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T* in = Raw<T>(x);
              T* out = Raw<T>(y);
              c.pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / out_row),
                                   [&](int64_t b, int64_t e) {
                                     for (int64_t row = b; row < e; ++row) {
                                       int64_t rem = row, src = 0;
                                       for (int i = r - 2; i >= 0; --i) {
                                         src += (rem % out_dims[i]) % x.dim(i) * in_strides[i];
                                         rem /= out_dims[i];
                                       }
                                       T* dst = out + row * out_row;
                                       for (int64_t k = 0; k < m[r - 1]; ++k)
                                         std::copy_n(in + src, in_row, dst + k * in_row);
                                     }
                                   });
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dx = the sum of dy's tiles.
        return {AddShapedGrad(g, TileGradOp(), {kMultiples(g.attr(kMultiples))})};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kMultiples(std::vector<int64_t>{2, 1})}};
          },
  };
  return op;
}

// Inputs: dy and x's shape (int64 vector); output: the sum of dy's tiles, shaped like x.
const OpDef& TileGradOp() {
  static const OpDef op = {
      .name = "TileGrad",
      .num_inputs = 2,
      .attrs = {kMultiples.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = ShapedLikeInput1,
      .kernel =
          [](KernelContext& c) {
            const Tensor& dy = c.input(0);
            auto dims = DimsFromTensor(c, c.input(1), "input shape");
            const auto& m = c.attr(kMultiples);
            const int r = static_cast<int>(dims.size());
            bool ok = r == dy.rank() && static_cast<int>(m.size()) == r;
            for (int i = 0; ok && i < r; ++i) ok = dims[i] * m[i] == dy.dim(i);
            if (!ok)
              c.Fail("gradient ", dy.shape(), " is not shape ", DimsString(dims), " tiled ",
                     DimsString(m));
            Tensor dx = Tensor::Zeros(dy.dtype(), Shape(dims));
            c.set_output(0, dx);
            if (dy.NumElements() == 0 || r == 0) {
              if (r == 0) dx.CopyFrom(dy);
              return;
            }
            const int64_t in_row = dims[r - 1], out_row = dy.dim(r - 1);
            const int64_t rows = dy.NumElements() / out_row;
            const std::vector<int64_t> strides = Strides(dims);
            SwitchNumeric(dy.dtype(), "TileGrad", [&](auto tag) {
              using T = decltype(tag);
              const T* g = dy.data<T>();
              T* out = dx.data<T>();
              for (int64_t row = 0; row < rows; ++row) {
                int64_t rem = row, dst = 0;
                for (int i = r - 2; i >= 0; --i) {
                  dst += (rem % dy.dim(i)) % dims[i] * strides[i];
                  rem /= dy.dim(i);
                }
                const T* src = g + row * out_row;
                for (int64_t k = 0; k < m[r - 1]; ++k)
                  for (int64_t j = 0; j < in_row; ++j) out[dst + j] += src[k * in_row + j];
              }
              return 0;
            });
          },
      .grad =
          [](const GradContext& g) {
            return std::vector<GradOutput>{Tile(g.scope(), g.grad(0), g.attr(kMultiples)),
                                           GradOutput()};
          },
      .not_swept = "built only by Tile's gradient rule; Tile's gradient check covers it",
  };
  return op;
}

// ---- Pad --------------------------------------------------------------------------------

template <typename Ctx>
void CheckPaddings(const Ctx& c, const std::vector<int64_t>& paddings, const Shape& in) {
  if (paddings.size() % 2 != 0 ||
      (in.rank_known() && static_cast<int>(paddings.size()) != 2 * in.rank())) {
    c.Fail("needs one (before, after) padding pair per dim of ", in, ", got ", paddings.size() / 2);
  }
  for (int64_t p : paddings)
    if (p < 0) c.Fail("paddings must be non-negative, got ", DimsString(paddings));
}

const OpDef& PadOp() {
  static const OpDef op = {
      .name = "Pad",
      .num_inputs = 1,
      .attrs = {kPaddings.Required(), kConstant.Default(0.0)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const auto& p = c.attr(kPaddings);
            const Shape& in = c.input_shape(0);
            CheckPaddings(c, p, in);
            std::vector<int64_t> dims(p.size() / 2, kUnknownDim);
            for (size_t i = 0; in.rank_known() && i < dims.size(); ++i)
              if (in.dim(i) >= 0) dims[i] = in.dim(i) + p[2 * i] + p[2 * i + 1];
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const auto& p = c.attr(kPaddings);
            CheckPaddings(c, p, x.shape());
            const int r = x.rank();
            std::vector<int64_t> out_dims(r);
            for (int i = 0; i < r; ++i) out_dims[i] = x.dim(i) + p[2 * i] + p[2 * i + 1];
            Tensor y = c.AllocateOutput(0, Shape(out_dims));
            const std::vector<int64_t> out_strides = Strides(out_dims);
            SwitchNumeric(x.dtype(), "Pad", [&](auto tag) {
              using T = decltype(tag);
              const T value = static_cast<T>(c.attr(kConstant));
              T* out = y.data<T>();
              std::fill_n(out, y.NumElements(), value);
              if (x.NumElements() == 0) return 0;
              const T* in = x.data<T>();
              const int64_t row = r == 0 ? 1 : x.dim(r - 1);
              const int64_t rows = x.NumElements() / row;
              c.pool().ParallelFor(rows, std::max<int64_t>(1, 16384 / row),
                                   [&](int64_t b, int64_t e) {
                                     for (int64_t i = b; i < e; ++i) {
                                       int64_t rem = i, dst = r == 0 ? 0 : p[2 * (r - 1)];
                                       for (int d = r - 2; d >= 0; --d) {
                                         dst += (rem % x.dim(d) + p[2 * d]) * out_strides[d];
                                         rem /= x.dim(d);
                                       }
                                       std::copy_n(in + i * row, row, out + dst);
                                     }
                                   });
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // dx = dy without the padding: dy[before_i : dim_i - after_i].
        const auto& p = g.attr(kPaddings);
        const size_t r = p.size() / 2;
        std::vector<int64_t> begin(r), end(r), strides(r, 1);
        int64_t end_mask = 0;
        for (size_t i = 0; i < r; ++i) {
          begin[i] = p[2 * i];
          end[i] = -p[2 * i + 1];
          if (p[2 * i + 1] == 0) end_mask |= int64_t{1} << i;
        }
        return {StridedSlice(g.scope(), g.grad(0), begin, end, strides, {.end_mask = end_mask})};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kPaddings(std::vector<int64_t>{1, 0, 0, 2})}};
          },
  };
  return op;
}

}  // namespace

Output Concat(const Scope& scope, const std::vector<Output>& values, int64_t axis) {
  return scope.AddNode(ConcatOp(), values, {kAxis(axis)}, "Concat")->output(0);
}

std::vector<Output> Split(const Scope& scope, Input x, int64_t num_split, int64_t axis) {
  Node* node =
      scope.AddNode(SplitOp(), {AsOutput(scope, x)}, {kNumSplit(num_split), kAxis(axis)}, "Split");
  std::vector<Output> parts;
  parts.reserve(node->num_outputs());
  for (int i = 0; i < node->num_outputs(); ++i) parts.push_back(node->output(i));
  return parts;
}

Output Tile(const Scope& scope, Input x, const std::vector<int64_t>& multiples) {
  return scope.AddNode(TileOp(), {AsOutput(scope, x)}, {kMultiples(multiples)}, "Tile")->output(0);
}

Output Pad(const Scope& scope, Input x, const std::vector<std::pair<int64_t, int64_t>>& paddings,
           double constant) {
  std::vector<int64_t> flat;
  for (const auto& [before, after] : paddings) {
    flat.push_back(before);
    flat.push_back(after);
  }
  return scope
      .AddNode(PadOp(), {AsOutput(scope, x)}, {kPaddings(flat), kConstant(constant)}, "Pad")
      ->output(0);
}

namespace array_internal {

void RegisterArrayJoinOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&ConcatOp(), &SplitOp(), &ConcatGradOp(), &TileOp(), &TileGradOp(), &PadOp()}) {
    registry.Register(*op);
  }
}

}  // namespace array_internal
}  // namespace loom
