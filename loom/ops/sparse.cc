// Sparse tensor ops (sparse.h): SparseToDense (and its gradient op), SparseReorder and
// SparseBatchPadded, plus the compositions SparseReduceSum and EmbeddingLookupSparse.
#include "loom/ops/sparse.h"

#include <algorithm>
#include <numeric>

#include "loom/ops/array.h"
#include "loom/ops/array_internal.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"

namespace loom {

using namespace array_internal;  // NOLINT: the array files' own helpers

namespace {

// Checks that indices is int64 [N, R], values [N] and dense_shape int64 [R] agree; returns
// the dense dims.
std::vector<int64_t> CheckSparse(const KernelContext& c, const Tensor& indices,
                                 const Tensor& values, const Tensor& dense_shape) {
  if (indices.rank() != 2 || values.rank() != 1 || dense_shape.rank() != 1 ||
      indices.dim(0) != values.dim(0) || indices.dim(1) != dense_shape.dim(0)) {
    c.Fail("a SparseTensor needs indices [N, rank], values [N] and dense_shape [rank]; got ",
           "indices ", indices.shape(), ", values ", values.shape(), ", dense_shape ",
           dense_shape.shape());
  }
  std::vector<int64_t> dims = DimsFromTensor(c, dense_shape, "dense_shape");
  for (int64_t d : dims) {
    if (d < 0) c.Fail("dense_shape ", DimsString(dims), " has a negative dim");
  }
  return dims;
}

// The row-major offset of index row i in a tensor of `dims`; fails outside it.
int64_t OffsetOf(const KernelContext& c, const int64_t* row, const std::vector<int64_t>& dims,
                 int64_t i) {
  int64_t offset = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (row[d] < 0 || row[d] >= dims[d]) {
      std::vector<int64_t> index(row, row + dims.size());
      c.Fail("indices[", i, "] = ", DimsString(index), " is outside dense_shape ",
             DimsString(dims));
    }
    offset = offset * dims[d] + row[d];
  }
  return offset;
}

const OpDef& SparseToDenseGradOp();

// Inputs: indices, values, dense_shape, default_value (a scalar of values' dtype).
const OpDef& SparseToDenseOp() {
  static const OpDef op = {
      .name = "SparseToDense",
      .num_inputs = 4,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt64});
            c.ExpectDType(2, {kInt64});
            c.ExpectSameDType(1, 3);
            c.ExpectRank(0, 2);
            c.ExpectRank(1, 1);
            c.ExpectRank(2, 1);
            c.ExpectRank(3, 0);
            c.set_output(0, c.input_dtype(1), StaticShapeValue(c.input(2)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& values = c.input(1);
            const Tensor& fill = c.input(3);
            const std::vector<int64_t> dims = CheckSparse(c, indices, values, c.input(2));
            if (fill.NumElements() != 1) {
              c.Fail("default_value must be a scalar, got ", fill.shape());
            }
            Tensor y = c.AllocateOutput(0, Shape(dims));
            const int64_t n = indices.dim(0);
            const int64_t rank = indices.dim(1);
            std::vector<bool> written(y.NumElements(), false);
            SwitchStorage(values.dtype(), [&](auto tag) {
              using T = decltype(tag);
              T* out = Raw<T>(y);
              std::fill_n(out, y.NumElements(), Raw<T>(fill)[0]);
              const T* in = Raw<T>(values);
              const int64_t* idx = indices.data<int64_t>();
              for (int64_t i = 0; i < n; ++i) {
                const int64_t offset = OffsetOf(c, idx + i * rank, dims, i);
                if (written[offset]) {
                  std::vector<int64_t> index(idx + i * rank, idx + (i + 1) * rank);
                  c.Fail("indices[", i, "] = ", DimsString(index),
                         " repeats an earlier index; a SparseTensor holds one value per index");
                }
                written[offset] = true;
                out[offset] = in[i];
              }
              return 0;
            });
          },
      // d/dvalues[i] = dy[indices[i]]; d/ddefault = the sum of dy where no index points.
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        Output dvalues =
            s.AddNode(SparseToDenseGradOp(), {g.input(0), g.grad(0)}, {}, "SparseToDenseGrad")
                ->output(0);
        Output ddefault = Sub(s, Sum(s, g.grad(0)), Sum(s, dvalues));
        return {GradOutput(), dvalues, GradOutput(), ddefault};
      },
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 1, 1, 0}, {2, 2}),
                             Tensor::FromVector<double>({1.5, 2.5}),
                             Tensor::FromVector<int64_t>({2, 3}), Tensor::Scalar<double>(0.5)},
                            {},
                            false};
          },
  };
  return op;
}

// Inputs: indices [N, R] and dy (the dense gradient); output dy at each index, [N].
const OpDef& SparseToDenseGradOp() {
  static const OpDef op = {
      .name = "SparseToDenseGrad",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt64});
            c.ExpectRank(0, 2);
            const Shape& in = c.input_shape(0);
            c.set_output(0, c.input_dtype(1), Shape({in.rank_known() ? in.dim(0) : -1}));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& dy = c.input(1);
            if (indices.rank() != 2 || indices.dim(1) != dy.rank()) {
              c.Fail("indices ", indices.shape(), " do not index the gradient ", dy.shape());
            }
            const int64_t n = indices.dim(0);
            const int64_t rank = indices.dim(1);
            const std::vector<int64_t>& dims = dy.shape().dims();
            Tensor dvalues = c.AllocateOutput(0, Shape({n}));
            SwitchStorage(dy.dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T* in = Raw<T>(dy);
              T* out = Raw<T>(dvalues);
              const int64_t* idx = indices.data<int64_t>();
              for (int64_t i = 0; i < n; ++i) out[i] = in[OffsetOf(c, idx + i * rank, dims, i)];
              return 0;
            });
          },
      // Linear in dy: its gradient scatters back to a dense tensor shaped like dy.
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const Output dy = g.input(1);
        Output back = SparseToDense(s, {g.input(0), g.grad(0), ShapeOfOrConst(s, dy)},
                                    AsOutput(s, 0.0, dy.dtype()));
        return {GradOutput(), back};
      },
      .not_swept = "built only by SparseToDense's gradient rule; sparse_test checks it",
  };
  return op;
}

// Inputs: indices, values, dense_shape; outputs: indices and values in row-major order.
const OpDef& SparseReorderOp() {
  static const OpDef op = {
      .name = "SparseReorder",
      .num_inputs = 3,
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt64});
            c.ExpectDType(2, {kInt64});
            c.set_output(0, kInt64, c.input_shape(0));
            c.set_output(1, c.input_dtype(1), c.input_shape(1));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& values = c.input(1);
            const std::vector<int64_t> dims = CheckSparse(c, indices, values, c.input(2));
            const int64_t n = indices.dim(0);
            const int64_t rank = indices.dim(1);
            const int64_t* idx = indices.data<int64_t>();
            std::vector<int64_t> offsets(n);
            for (int64_t i = 0; i < n; ++i) offsets[i] = OffsetOf(c, idx + i * rank, dims, i);
            std::vector<int64_t> order(n);
            std::iota(order.begin(), order.end(), int64_t{0});
            std::stable_sort(order.begin(), order.end(),
                             [&](int64_t a, int64_t b) { return offsets[a] < offsets[b]; });
            Tensor out_indices = c.AllocateOutput(0, indices.shape());
            Tensor out_values = c.AllocateOutput(1, values.shape());
            int64_t* oi = out_indices.data<int64_t>();
            for (int64_t i = 0; i < n; ++i) {
              std::copy_n(idx + order[i] * rank, rank, oi + i * rank);
            }
            SwitchStorage(values.dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T* in = Raw<T>(values);
              T* out = Raw<T>(out_values);
              for (int64_t i = 0; i < n; ++i) out[i] = in[order[i]];
              return 0;
            });
          },
      .no_gradient = "it permutes indices; differentiate through SparseToDense of the input",
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<int64_t>({1, 0, 0, 1}, {2, 2}),
                 Tensor::FromVector<double>({1.5, 2.5}), Tensor::FromVector<int64_t>({2, 2})},
                {},
                false};
          },
  };
  return op;
}

// Inputs: indices [B, M, R] (rows of -1 are padding), values [B, M], dense_shapes [B, R].
const OpDef& SparseBatchPaddedOp() {
  static const OpDef op = {
      .name = "SparseBatchPadded",
      .num_inputs = 3,
      .num_outputs = 3,
      .output_dtypes = {DTypeRule::Fixed(kInt64), DTypeRule::SameAsInput(1),
                        DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt64});
            c.ExpectDType(2, {kInt64});
            c.ExpectRank(0, 3);
            c.ExpectRank(1, 2);
            c.ExpectRank(2, 2);
            const Shape& shapes = c.input_shape(2);
            const int64_t rank = shapes.rank_known() && shapes.dim(1) >= 0 ? shapes.dim(1) + 1 : -1;
            c.set_output(0, kInt64, Shape({-1, rank}));
            c.set_output(1, c.input_dtype(1), Shape({-1}));
            c.set_output(2, kInt64, Shape({rank}));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& values = c.input(1);
            const Tensor& shapes = c.input(2);
            if (indices.rank() != 3 || values.rank() != 2 || shapes.rank() != 2 ||
                indices.dim(0) != values.dim(0) || indices.dim(1) != values.dim(1) ||
                shapes.dim(0) != indices.dim(0) || shapes.dim(1) != indices.dim(2)) {
              c.Fail("needs padded indices [B, M, R], values [B, M] and dense shapes [B, R]; got ",
                     indices.shape(), ", ", values.shape(), ", ", shapes.shape());
            }
            const int64_t batch = indices.dim(0), slots = indices.dim(1), rank = indices.dim(2);
            const int64_t* idx = indices.data<int64_t>();
            const int64_t* sh = shapes.data<int64_t>();
            std::vector<int64_t> dense(rank + 1, 0);
            dense[0] = batch;
            for (int64_t b = 0; b < batch; ++b) {
              for (int64_t d = 0; d < rank; ++d)
                dense[d + 1] = std::max(dense[d + 1], sh[b * rank + d]);
            }
            // A slot is a value unless its index row is the -1 padding.
            auto present = [&](int64_t slot) { return rank == 0 || idx[slot * rank] >= 0; };
            int64_t n = 0;
            for (int64_t slot = 0; slot < batch * slots; ++slot) n += present(slot) ? 1 : 0;
            Tensor out_indices = c.AllocateOutput(0, Shape({n, rank + 1}));
            Tensor out_values = c.AllocateOutput(1, Shape({n}));
            int64_t* oi = out_indices.data<int64_t>();
            SwitchStorage(values.dtype(), [&](auto tag) {
              using T = decltype(tag);
              const T* in = Raw<T>(values);
              T* out = Raw<T>(out_values);
              for (int64_t slot = 0, k = 0; slot < batch * slots; ++slot) {
                if (!present(slot)) continue;
                oi[k * (rank + 1)] = slot / slots;
                std::copy_n(idx + slot * rank, rank, oi + k * (rank + 1) + 1);
                out[k++] = in[slot];
              }
              return 0;
            });
            c.set_output(2, Tensor::FromVector(dense));
          },
      .no_gradient = "it batches input pipeline elements",
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<int64_t>({0, 1, -1, 0, 1, 0}, {2, 3, 1}),
                             Tensor::FromVector<double>({1, 2, 0, 3, 4, 5}, {2, 3}),
                             Tensor::FromVector<int64_t>({2, 3}, {2, 1})},
                            {},
                            false};
          },
  };
  return op;
}

// d + (d == 0): a divisor that is 1 for rows without ids (whose sum is 0 anyway).
Output NonZero(const Scope& scope, Output d) {
  return Add(scope, d, Cast(scope, Equal(scope, d, AsOutput(scope, 0.0, d.dtype())), d.dtype()));
}

}  // namespace

Output SparseToDense(const Scope& scope, const SparseTensor& sp, Input default_value) {
  Output fill = AsOutput(scope, default_value, sp.values.dtype());
  return scope
      .AddNode(SparseToDenseOp(), {sp.indices, sp.values, sp.dense_shape, fill}, {},
               "SparseToDense")
      ->output(0);
}

SparseTensor SparseReorder(const Scope& scope, const SparseTensor& sp) {
  Node* node = scope.AddNode(SparseReorderOp(), {sp.indices, sp.values, sp.dense_shape}, {},
                             "SparseReorder");
  return {node->output(0), node->output(1), sp.dense_shape};
}

Output SparseReduceSum(const Scope& scope, const SparseTensor& sp, const std::vector<int64_t>& axes,
                       bool keep_dims) {
  return Sum(scope, SparseToDense(scope, sp, AsOutput(scope, 0.0, sp.dtype())), axes,
             {.keep_dims = keep_dims});
}

Output EmbeddingLookupSparse(const Scope& scope, Input params, const SparseTensor& ids,
                             const std::optional<SparseTensor>& weights,
                             const EmbeddingLookupSparseOptions& options) {
  Output table = AsOutput(scope, params);
  const DType dtype = table.dtype();
  const Shape& index_shape = ids.indices.shape();
  if (index_shape.rank_known() && index_shape.rank() == 2 && index_shape.dim(1) >= 0 &&
      index_shape.dim(1) != 2) {
    throw InvalidArgument("EmbeddingLookupSparse '", scope.prefix(), "': sp_ids must be a rank-2 ",
                          "SparseTensor [batch, ?], its indices are ", index_shape);
  }
  if (weights && weights->dtype() != dtype) {
    throw InvalidArgument("EmbeddingLookupSparse '", scope.prefix(), "': sp_weights are ",
                          DTypeName(weights->dtype()), " but params are ", DTypeName(dtype));
  }
  // The rows as a dense [batch, longest row] matrix of ids, -1 (weight 0) past a row's end.
  Output dense_ids = SparseToDense(scope, ids, AsOutput(scope, -1, ids.dtype()));
  Output present =
      Cast(scope, GreaterEqual(scope, dense_ids, AsOutput(scope, 0, ids.dtype())), dtype);
  Output w = present;
  if (weights) {
    w = Mul(scope, SparseToDense(scope, *weights, AsOutput(scope, 0.0, dtype)), present);
  }
  Output safe_ids = Maximum(scope, dense_ids, AsOutput(scope, 0, ids.dtype()));
  Output rows = Gather(scope, table, safe_ids);  // [batch, k, d...]
  Output w_rows = w;
  const Shape& ts = table.shape();
  for (int i = 1; i < (ts.rank_known() ? ts.rank() : 2); ++i)
    w_rows = ExpandDims(scope, w_rows, -1);
  Output sum = Sum(scope, Mul(scope, rows, w_rows), {1});
  auto per_row = [&](Output x) {
    Output total = Sum(scope, x, {1});
    for (int i = 1; i < (ts.rank_known() ? ts.rank() : 2); ++i)
      total = ExpandDims(scope, total, -1);
    return NonZero(scope, total);
  };
  switch (options.combiner) {
    case SparseCombiner::kSum:
      return sum;
    case SparseCombiner::kMean:
      return Div(scope, sum, per_row(w));
    case SparseCombiner::kSqrtN:
      return Div(scope, sum, Sqrt(scope, per_row(Square(scope, w))));
  }
  return sum;
}

SparseTensor SparseBatchPadded(const Scope& scope, Input indices, Input values,
                               Input dense_shapes) {
  Node* node = scope.AddNode(
      SparseBatchPaddedOp(),
      {AsOutput(scope, indices), AsOutput(scope, values), AsOutput(scope, dense_shapes)}, {},
      "SparseBatchPadded");
  return {node->output(0), node->output(1), node->output(2)};
}

void RegisterSparseOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&SparseToDenseOp(), &SparseToDenseGradOp(), &SparseReorderOp(), &SparseBatchPaddedOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
