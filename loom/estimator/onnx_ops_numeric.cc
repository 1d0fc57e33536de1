// The ONNX op table, continued: Python's // and % (FloorDiv, FloorMod), the sequence ops
// (Range, Cumsum), selection (TopKV2, Where, Unique) and indexed reads and sums (GatherNd,
// ScatterNd, UnsortedSegmentSum) (docs/onnx.md).
#include <limits>

#include "loom/estimator/onnx_ops_internal.h"

namespace loom::onnx_export {
namespace {

bool IsSignedInt(DType t) { return t == kInt32 || t == kInt64; }

// (r != 0) and ((r < 0) != (y < 0)): where a truncated quotient or remainder must move one
// step toward -inf to become the floored one.
std::string NeedsFloorStep(OnnxBuilder& b, const Node& n, const std::string& r) {
  const DType t = n.input(0).dtype();
  const std::string zero = b.Scalar(n, "zero", t, 0);
  const std::string nonzero =
      b.Op(n, "Not", {b.Op(n, "Equal", {r, zero}, "r_is_zero")}, "r_nonzero");
  const std::string signs = b.Op(
      n, "Xor",
      {b.Op(n, "Less", {r, zero}, "r_negative"), b.Op(n, "Less", {b.In(n, 1), zero}, "y_negative")},
      "signs_differ");
  return b.Op(n, "And", {nonzero, signs}, "floor_step");
}

// ONNX's Mod with fmod = 1: C's truncated remainder (the dividend's sign), any dtype.
std::string TruncatedMod(OnnxBuilder& b, const Node& n) {
  return b.Op(n, "Mod", {b.In(n, 0), b.In(n, 1)}, "fmod", [](auto* p) { SetInt(p, "fmod", 1); });
}

// Scatter-add of rows: out[r[i], :] += rows[i, :] for r (int64 [N]) in [0, count) (other
// values drop the row), as onehot(r, count)^T x rows: ONNX's ScatterND adds repeated
// indices only from opset 16 (reduction = "add"), and this lowering works from 13 on.
// Returns the [count, S] sums; `dtype` is the rows' Loom dtype.
std::string RowSums(OnnxBuilder& b, const Node& n, const std::string& r, const std::string& count,
                    const std::string& rows, DType dtype) {
  const std::string classes =
      b.Op(n, "Range", {b.Scalar(n, "zero", kInt64, 0), count, b.Scalar(n, "one", kInt64, 1)},
           "classes");
  const std::string hot =
      b.Op(n, "Equal", {b.Op(n, "Unsqueeze", {r, b.Int64s(n, "last", {1})}, "r_column"), classes},
           "hot");
  const std::string weights =
      b.Op(n, "Cast", {hot}, "hot_weights", [&](auto* p) { SetInt(p, "to", OnnxDType(dtype)); });
  const std::string hot_t = b.Op(n, "Transpose", {weights}, "hot_t", [](auto* p) {
    SetInts(p, "perm", {1, 0});
  });
  return b.Op(n, "MatMul", {hot_t, rows}, "sums");
}

// x reshaped to [len(r), -1] (one row per index).
std::string AsRows(OnnxBuilder& b, const Node& n, const std::string& x, const std::string& r) {
  const std::string shape =
      b.Op(n, "Concat", {b.Op(n, "Shape", {r}, "r_count"), b.Int64s(n, "rest", {-1})}, "rows_shape",
           [](auto* p) { SetInt(p, "axis", 0); });
  return b.Op(n, "Reshape", {x, shape}, "rows");
}

std::string NeedsStaticTupleLength(const Node& n) {
  const Shape& idx = n.input(0).shape();
  return idx.rank_known() && idx.rank() > 0 && idx.dims().back() > 0
             ? ""
             : "the index tuples' length (indices' last dim) must be known and positive";
}

}  // namespace

void AddNumericRules(std::map<std::string, OpRule>& r) {
  r["FloorDiv"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const DType t = n.input(0).dtype();
    const std::string q = b.Op(n, "Div", {b.In(n, 0), b.In(n, 1)}, "quotient");
    if (t == kFloat32 || t == kFloat64) return b.Emit(n, 0, "Floor", {q});
    if (!IsSignedInt(t)) return b.Emit(n, 0, "Identity", {q});  // uint8: truncation is floor
    // ONNX's integer Div truncates toward zero; Python's // floors: one less where the
    // remainder is nonzero and its sign differs from the divisor's (-7 // 2 = -4).
    const std::string lower = b.Op(n, "Sub", {q, b.Scalar(n, "one", t, 1)}, "lower");
    b.Emit(n, 0, "Where", {NeedsFloorStep(b, n, TruncatedMod(b, n)), lower, q});
  }};
  r["FloorMod"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const DType t = n.input(0).dtype();
    if (t != kFloat32 && t != kFloat64) {
      // Integer Mod with fmod = 0 takes the divisor's sign, as Python's % (-7 % 2 = 1).
      return b.Emit(n, 0, "Mod", {b.In(n, 0), b.In(n, 1)}, [](auto* p) { SetInt(p, "fmod", 0); });
    }
    // As Loom's and TF's kernels: fmod, then + y where its sign differs from y's (exact,
    // where x - floor(x / y) * y would round).
    const std::string rem = TruncatedMod(b, n);
    const std::string moved = b.Op(n, "Add", {rem, b.In(n, 1)}, "moved");
    b.Emit(n, 0, "Where", {NeedsFloorStep(b, n, rem), moved, rem});
  }};
  r["Range"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Range", {b.In(n, 0), b.In(n, 1), b.In(n, 2)});
  }};
  r["Cumsum"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const int64_t exclusive = n.attr<bool>("exclusive") ? 1 : 0;
    const int64_t reverse = n.attr<bool>("reverse") ? 1 : 0;
    const std::string axis =
        b.Scalar(n, "axis", kInt64, static_cast<double>(n.attr<int64_t>("axis")));
    b.Emit(n, 0, "CumSum", {b.In(n, 0), axis}, [&](auto* p) {
      SetInt(p, "exclusive", exclusive);
      SetInt(p, "reverse", reverse);
    });
  }};
  r["TopKV2"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // ONNX's TopK takes k as an int64 [1] and gives int64 indices; Loom's are int32. Its
    // ties keep the lower index first, as Loom's.
    std::string k = b.In(n, 1);
    if (n.input(1).dtype() != kInt64) {
      k = b.Op(n, "Cast", {k}, "k_int64",
               [](auto* p) { SetInt(p, "to", onnx::TensorProto::INT64); });
    }
    k = b.Op(n, "Reshape", {k, b.Int64s(n, "one", {1})}, "k");
    const Output values(const_cast<Node*>(&n), 0), indices(const_cast<Node*>(&n), 1);
    const std::string wide = b.NewName(n, "indices_int64");
    onnx::NodeProto* p = b.AddNode("TopK", {b.In(n, 0), k}, {values.name(), wide});
    SetInt(p, "axis", -1);
    SetInt(p, "largest", 1);
    SetInt(p, "sorted", 1);
    b.Bind(values, values.name());
    b.Emit(n, 1, "Cast", {wide}, [](auto* c) { SetInt(c, "to", onnx::TensorProto::INT32); });
  }};
  r["GatherNd"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "GatherND", {b.In(n, 0), AsInt64(b, n, 1)});
  }};
  r["ScatterNd"] = {
      .unsupported = NeedsStaticTupleLength, .convert = [](OnnxBuilder& b, const Node& n) {
        // Each index tuple's row of the table shape[:M] (r = ((i0 * d1) + i1) * d2 + ...),
        // summed as rows of updates [N, S], reshaped to `shape`.
        const int64_t m = n.input(0).shape().dims().back();
        const std::string idx = AsInt64(b, n, 0);
        const std::string shape = AsInt64(b, n, 2);
        auto pick = [&](const std::string& x, int64_t d, int64_t axis, std::string_view what) {
          return b.Op(n, "Gather", {x, b.Scalar(n, "d", kInt64, static_cast<double>(d))}, what,
                      [&](auto* p) { SetInt(p, "axis", axis); });
        };
        std::string r = pick(idx, 0, -1, "i0");
        std::string count = pick(shape, 0, 0, "d0");
        for (int64_t d = 1; d < m; ++d) {
          const std::string dim = pick(shape, d, 0, "dim");
          r = b.Op(n, "Add", {b.Op(n, "Mul", {r, dim}, "r_scaled"), pick(idx, d, -1, "i")}, "r");
          count = b.Op(n, "Mul", {count, dim}, "count");
        }
        r = b.Op(n, "Reshape", {r, b.Int64s(n, "flat", {-1})}, "r_flat");
        const std::string sums =
            RowSums(b, n, r, count, AsRows(b, n, b.In(n, 1), r), n.input(1).dtype());
        b.Emit(n, 0, "Reshape", {sums, shape});
      }};
  r["UnsortedSegmentSum"] = {
      .unsupported = [](const Node& n) -> std::string {
        return n.input(1).shape().rank_known() ? "" : "the segment ids' rank must be known";
      },
      .convert =
          [](OnnxBuilder& b, const Node& n) {
            // Negative ids match no class of the one-hot, so their rows drop, as Loom's.
            const int64_t k = n.input(1).shape().rank();
            const std::string r =
                b.Op(n, "Reshape", {AsInt64(b, n, 1), b.Int64s(n, "flat", {-1})}, "r_flat");
            const std::string count =
                b.Op(n, "Reshape", {AsInt64(b, n, 2), b.Int64s(n, "scalar", {})}, "count");
            const std::string sums =
                RowSums(b, n, r, count, AsRows(b, n, b.In(n, 0), r), n.input(0).dtype());
            const std::string rest =
                b.Op(n, "Slice",
                     {b.Op(n, "Shape", {b.In(n, 0)}, "data_shape"), b.Int64s(n, "k", {k}),
                      b.Int64s(n, "end", {std::numeric_limits<int64_t>::max()})},
                     "rest");
            const std::string shape = b.Op(
                n, "Concat", {b.Op(n, "Reshape", {count, b.Int64s(n, "one", {1})}, "count1"), rest},
                "out_shape", [](auto* p) { SetInt(p, "axis", 0); });
            b.Emit(n, 0, "Reshape", {sums, shape});
          }};
  r["Unique"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // sorted = 0 keeps the order of first occurrence, as Loom's; the inverse indices are
    // int64 in ONNX.
    const Output y(const_cast<Node*>(&n), 0);
    const std::string first = b.NewName(n, "first_indices");
    const std::string inverse = b.NewName(n, "inverse_int64");
    const std::string counts = b.NewName(n, "counts");
    onnx::NodeProto* p = b.AddNode("Unique", {b.In(n, 0)}, {y.name(), first, inverse, counts});
    SetInt(p, "sorted", 0);
    b.Bind(y, y.name());
    const int to = OnnxDType(n.attr<DType>("out_idx"));
    b.Emit(n, 1, "Cast", {inverse}, [&](auto* c) { SetInt(c, "to", to); });
  }};
  r["Where"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // NonZero gives [rank, count]; tf.where's coordinates are [count, rank].
    b.Emit(n, 0, "Transpose", {b.Op(n, "NonZero", {b.In(n, 0)}, "nonzero")}, [](auto* p) {
      SetInts(p, "perm", {1, 0});
    });
  }};
}

}  // namespace loom::onnx_export
