// GatherNd, ScatterNd and UnsortedSegmentSum (scatter.h).
#include "loom/ops/scatter.h"

#include <algorithm>
#include <vector>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"

namespace loom {

using array_internal::DimsFromTensor;
using array_internal::Product;
using array_internal::Raw;
using array_internal::SwitchStorage;

namespace {

// TF's SegmentSum (tf.math.segment_sum) is UnsortedSegmentSum over ids that must be
// non-negative and non-decreasing; with this attribute set the kernel checks that, as TF's
// kernel does, instead of dropping a negative id's row.
inline constexpr Attr<bool> kSortedIds{"sorted_ids"};

int64_t CoordinateAt(const Tensor& t, int64_t i) {
  return t.dtype() == kInt32 ? static_cast<int64_t>(Raw<int32_t>(t)[i]) : Raw<int64_t>(t)[i];
}

// The flat offset of each index tuple (the last dim of `indices`) into a row-major table
// whose leading dims are `dims[0, M)`, in units of the slice dims[M:]; fails naming a
// coordinate outside its dimension.
std::vector<int64_t> SliceOffsets(const KernelContext& c, const Tensor& indices,
                                  const std::vector<int64_t>& dims) {
  if (indices.rank() == 0) c.Fail("indices must be at least 1-D, got a scalar");
  const int64_t m = indices.shape().dims().back();
  if (m > static_cast<int64_t>(dims.size())) {
    c.Fail("index tuples have ", m, " coordinates for a tensor of rank ", dims.size());
  }
  const int64_t n = m == 0 ? indices.NumElements() : indices.NumElements() / m;
  std::vector<int64_t> offsets(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < m; ++d) {
      const int64_t v = CoordinateAt(indices, i * m + d);
      if (v < 0 || v >= dims[d]) {
        c.Fail("index ", v, " (tuple ", i, ", coordinate ", d, ") is outside [0, ", dims[d], ")");
      }
      offset = offset * dims[d] + v;
    }
    offsets[i] = offset;
  }
  return offsets;
}

// indices.shape[:-1] + dims[M:] (unknown where the ranks or M are).
Shape NdSliceShape(const Shape& indices, const Shape& table) {
  if (!indices.rank_known() || indices.rank() == 0 || !table.rank_known()) return Shape::Unknown();
  const int64_t m = indices.dims().back();
  if (m < 0) return Shape::Unknown();
  std::vector<int64_t> dims(indices.dims().begin(), indices.dims().end() - 1);
  for (int64_t d = m; d < table.rank(); ++d) dims.push_back(table.dim(d));
  return Shape(std::move(dims));
}

const OpDef& ScatterNdOp();

const OpDef& GatherNdOp() {
  static const OpDef op = {
      .name = "GatherNd",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(1, {kInt32, kInt64});
            const Shape& in = c.input_shape(0);
            const Shape& idx = c.input_shape(1);
            if (idx.rank_known() && idx.rank() == 0) c.Fail("indices must be at least 1-D");
            if (idx.rank_known() && in.rank_known() && idx.dims().back() > in.rank()) {
              c.Fail("index tuples of ", idx.dims().back(), " coordinates for params of rank ",
                     in.rank(), " (", in, ")");
            }
            c.set_output(0, c.input_dtype(0), NdSliceShape(idx, in));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& params = c.input(0);
            const Tensor& indices = c.input(1);
            const std::vector<int64_t>& dims = params.shape().dims();
            const std::vector<int64_t> offsets = SliceOffsets(c, indices, dims);
            const size_t m = indices.shape().dims().back();
            const int64_t slice = Product(dims, m, dims.size());
            std::vector<int64_t> out_dims(indices.shape().dims().begin(),
                                          indices.shape().dims().end() - 1);
            out_dims.insert(out_dims.end(), dims.begin() + m, dims.end());
            Tensor out = c.AllocateOutput(0, Shape(out_dims));
            SwitchStorage(params.dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T* in = Raw<T>(params);
              T* o = Raw<T>(out);
              for (size_t i = 0; i < offsets.size(); ++i)
                std::copy_n(in + offsets[i] * slice, slice, o + i * slice);
            });
            c.set_output(0, std::move(out));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // d params = the output's gradient added back at the gathered slices.
        Output shape = array_internal::ShapeOfOrConst(g.scope(), g.input(0));
        return {ScatterNd(g.scope(), g.input(1), g.grad(), shape), GradOutput()};
      },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({2, 3}), Tensor::FromVector<int64_t>({1, 0, 0, 2}, {2, 2})}, {}};
          },
  };
  return op;
}

const OpDef& ScatterNdOp() {
  static const OpDef op = {
      .name = "ScatterNd",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.ExpectDType(1, {kFloat32, kFloat64, kInt32, kInt64});
            c.ExpectDType(2, {kInt32, kInt64});
            const Shape out = StaticShapeValue(c.input(2));
            const Shape want = NdSliceShape(c.input_shape(0), out);
            if (want.rank_known() && c.input_shape(1).rank_known() &&
                !c.input_shape(1).IsCompatibleWith(want)) {
              c.Fail("updates ", c.input_shape(1),
                     " must have shape indices[:-1] + shape[M:] = ", want);
            }
            c.set_output(0, c.input_dtype(1), out);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& updates = c.input(1);
            const std::vector<int64_t> dims = DimsFromTensor(c, c.input(2), "shape");
            const std::vector<int64_t> offsets = SliceOffsets(c, indices, dims);
            const size_t m = indices.shape().dims().back();
            const int64_t slice = Product(dims, m, dims.size());
            if (updates.NumElements() != static_cast<int64_t>(offsets.size()) * slice) {
              c.Fail("updates ", updates.shape(), " do not hold ", offsets.size(), " slices of ",
                     slice, " elements");
            }
            Tensor out = c.AllocateOutput(0, Shape(dims));
            SwitchNumeric(updates.dtype(), "ScatterNd", [&](auto tag) {
              using T = decltype(tag);
              T* o = Raw<T>(out);
              std::fill(o, o + out.NumElements(), T{});
              const T* u = Raw<T>(updates);
              for (size_t i = 0; i < offsets.size(); ++i) {
                for (int64_t j = 0; j < slice; ++j) o[offsets[i] * slice + j] += u[i * slice + j];
              }
            });
            c.set_output(0, std::move(out));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // d updates[i] = d out at the slice it was added to.
        return {GradOutput(), GatherNd(g.scope(), g.grad(), g.input(0)), GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({1, 0, 1}, {3, 1}), SampleDoubles({3, 2}),
                             Tensor::FromVector<int64_t>({2, 2})},
                            {}};
          },
  };
  return op;
}

const OpDef& UnsortedSegmentSumOp() {
  static const OpDef op = {
      .name = "UnsortedSegmentSum",
      .num_inputs = 3,
      .attrs = {kSortedIds.Default(false)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64});
            c.ExpectDType(1, {kInt32, kInt64});
            c.ExpectDType(2, {kInt32, kInt64});
            c.ExpectRank(2, 0);
            const Shape& data = c.input_shape(0);
            const Shape& ids = c.input_shape(1);
            if (!data.rank_known() || !ids.rank_known()) {
              c.set_output(0, c.input_dtype(0), Shape::Unknown());
              return;
            }
            if (ids.rank() > data.rank() ||
                !Shape(std::vector<int64_t>(data.dims().begin(), data.dims().begin() + ids.rank()))
                     .IsCompatibleWith(ids)) {
              c.Fail("segment_ids ", ids, " must be a prefix of data's shape ", data);
            }
            int64_t segments = kUnknownDim;
            if (const Tensor* n = c.input_constant(2)) segments = CoordinateAt(*n, 0);
            std::vector<int64_t> dims = {segments};
            dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
            c.set_output(0, c.input_dtype(0), Shape(std::move(dims)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& data = c.input(0);
            const Tensor& ids = c.input(1);
            const int64_t segments = CoordinateAt(c.input(2), 0);
            if (segments < 0) c.Fail("num_segments must be >= 0, got ", segments);
            const std::vector<int64_t>& dims = data.shape().dims();
            if (ids.rank() > data.rank() ||
                !std::equal(ids.shape().dims().begin(), ids.shape().dims().end(), dims.begin())) {
              c.Fail("segment_ids ", ids.shape(), " must be a prefix of data's shape ",
                     data.shape());
            }
            if (c.attr(kSortedIds)) {
              for (int64_t i = 0; i < ids.NumElements(); ++i) {
                const int64_t id = CoordinateAt(ids, i);
                if (id < 0) {
                  c.Fail("segment id ", id, " (position ", i,
                         ") is negative; sorted segment ids (tf.math.segment_sum) must be >= 0: "
                         "use unsorted_segment_sum to drop rows by a negative id");
                }
                if (i > 0 && id < CoordinateAt(ids, i - 1)) {
                  c.Fail("segment ids are not increasing: ", id, " at position ", i, " follows ",
                         CoordinateAt(ids, i - 1),
                         "; tf.math.segment_sum needs sorted ids (use unsorted_segment_sum "
                         "for ids in any order)");
                }
              }
            }
            const int64_t slice = Product(dims, ids.rank(), dims.size());
            std::vector<int64_t> out_dims = {segments};
            out_dims.insert(out_dims.end(), dims.begin() + ids.rank(), dims.end());
            Tensor out = c.AllocateOutput(0, Shape(out_dims));
            SwitchNumeric(data.dtype(), "UnsortedSegmentSum", [&](auto tag) {
              using T = decltype(tag);
              T* o = Raw<T>(out);
              std::fill(o, o + out.NumElements(), T{});
              const T* in = Raw<T>(data);
              for (int64_t i = 0; i < ids.NumElements(); ++i) {
                const int64_t id = CoordinateAt(ids, i);
                if (id < 0) continue;  // dropped, as TF's
                if (id >= segments) {
                  c.Fail("segment id ", id, " (position ", i, ") is outside [0, ", segments, ")");
                }
                for (int64_t j = 0; j < slice; ++j) o[id * slice + j] += in[i * slice + j];
              }
            });
            c.set_output(0, std::move(out));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // d data[i] = d out[segment_ids[i]], zero where the id was negative (dropped): the
        // gathered rows times a 0 / 1 mask shaped ids.shape + [1] * (rank(data) - rank(ids)).
        const Scope& s = g.scope();
        Output ids = Cast(s, g.input(1), kInt64);
        Output kept = GreaterEqual(s, ids, int64_t{0});
        Output rows = Gather(s, g.grad(), Maximum(s, ids, int64_t{0}));
        Output mask = Cast(s, kept, g.grad().dtype());
        const Shape& data = g.input(0).shape();
        const Shape& id_shape = g.input(1).shape();
        if (data.rank_known() && id_shape.rank_known()) {
          for (int d = id_shape.rank(); d < data.rank(); ++d) mask = ExpandDims(s, mask, -1);
        } else {
          const Output one = Const(s, Tensor::Scalar<int64_t>(1));
          Output extra = Sub(s, Rank(s, g.input(0)), Rank(s, g.input(1)));
          Output ones = Fill(s, Reshape(s, extra, {1}), one);
          mask = Reshape(s, mask, Concat(s, {ShapeOf(s, mask), ones}, 0));
        }
        return {Mul(s, rows, mask), GradOutput(), GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({3, 2}), Tensor::FromVector<int64_t>({1, 0, 1}),
                             Tensor::Scalar<int64_t>(2)},
                            {},
                            false};
          },
  };
  return op;
}

}  // namespace

Output GatherNd(const Scope& scope, Input params, Input indices) {
  return scope
      .AddNode(GatherNdOp(), {AsOutput(scope, params), AsOutput(scope, indices, kInt64)}, {},
               "GatherNd")
      ->output(0);
}

Output ScatterNd(const Scope& scope, Input indices, Input updates, Input shape) {
  return scope
      .AddNode(ScatterNdOp(),
               {AsOutput(scope, indices, kInt64), AsOutput(scope, updates),
                AsOutput(scope, shape, kInt64)},
               {}, "ScatterNd")
      ->output(0);
}

Output UnsortedSegmentSum(const Scope& scope, Input data, Input segment_ids, Input num_segments) {
  return scope
      .AddNode(UnsortedSegmentSumOp(),
               {AsOutput(scope, data), AsOutput(scope, segment_ids, kInt64),
                AsOutput(scope, num_segments, kInt64)},
               {}, "UnsortedSegmentSum")
      ->output(0);
}

Output SegmentSum(const Scope& scope, Input data, Input segment_ids, Input num_segments) {
  return scope
      .AddNode(UnsortedSegmentSumOp(),
               {AsOutput(scope, data), AsOutput(scope, segment_ids, kInt64),
                AsOutput(scope, num_segments, kInt64)},
               {kSortedIds(true)}, "SegmentSum")
      ->output(0);
}

void RegisterScatterOps(OpRegistry& registry) {
  for (const OpDef* op : {&GatherNdOp(), &ScatterNdOp(), &UnsortedSegmentSumOp()})
    registry.Register(*op);
}

}  // namespace loom
