// The ONNX op table, continued: Python's // and % (FloorDiv, FloorMod), the sequence ops
// (Range, Cumsum) and selection (TopKV2, Where) (docs/onnx.md).
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
  r["Where"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // NonZero gives [rank, count]; tf.where's coordinates are [count, rank].
    b.Emit(n, 0, "Transpose", {b.Op(n, "NonZero", {b.In(n, 0)}, "nonzero")}, [](auto* p) {
      SetInts(p, "perm", {1, 0});
    });
  }};
}

}  // namespace loom::onnx_export
