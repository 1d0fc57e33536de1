// The ONNX op table, continued: Loom ops that ONNX has no operator for, composed from ONNX
// ones (docs/onnx.md): Atan2 (Atan, Div and Where's quadrant fixes), Cumprod (unrolled
// Muls), SpaceToBatchND / BatchToSpaceND (Pad, Reshape, Transpose, Slice) and
// MaxPoolWithArgmax (MaxPool's NCHW Indices converted to TF's NHWC flat index).
#include <numbers>

#include "loom/estimator/onnx_ops_internal.h"

namespace loom::onnx_export {
namespace {

// The longest Cumprod axis unrolled: one Mul per element.
constexpr int64_t kMaxUnrolledCumprod = 1024;

// "" when dims [first, rank) of input 0 are known, else why not (`what` says what needs them).
std::string NeedsStaticDims(const Node& n, int first, const char* what) {
  const Shape& s = n.input(0).shape();
  if (!s.rank_known()) return std::string("the input's rank must be known (") + what + ")";
  for (int i = first; i < s.rank(); ++i) {
    if (s.dim(i) == kUnknownDim) {
      return std::string("the input's dims after the batch must be known (") + what +
             "); its shape is " + s.ToString();
    }
  }
  return "";
}

std::vector<int64_t> Pairs(const Node& n, const char* attr, int which) {
  const auto& flat = n.attr<std::vector<int64_t>>(attr);
  std::vector<int64_t> out;
  for (size_t i = which; i < flat.size(); i += 2) out.push_back(flat[i]);
  return out;
}

// x = prod over each [k*b, k*b + b) block: Pad, then [B, J1, b1, .., JM, bM, rest] moved to
// [b1, .., bM, B, J1, .., JM, rest] (loom/ops/space_batch.h's order).
void SpaceToBatch(OnnxBuilder& b, const Node& n) {
  const Shape& s = n.input(0).shape();
  const auto& block = n.attr<std::vector<int64_t>>("block_shape");
  const int m = static_cast<int>(block.size()), rank = s.rank();
  const std::vector<int64_t> before = Pairs(n, "paddings", 0), after = Pairs(n, "paddings", 1);
  std::vector<int64_t> pads(2 * rank, 0);
  for (int i = 0; i < m; ++i) {
    pads[1 + i] = before[i];
    pads[rank + 1 + i] = after[i];
  }
  const std::string padded = b.Op(n, "Pad", {b.In(n, 0), b.Int64s(n, "pads", pads)}, "padded");
  std::vector<int64_t> split = {-1}, perm, merged = {-1};
  for (int i = 0; i < m; ++i) {
    const int64_t j = (s.dim(1 + i) + before[i] + after[i]) / block[i];
    split.insert(split.end(), {j, block[i]});
    merged.push_back(j);
  }
  for (int i = 0; i < m; ++i) perm.push_back(2 + 2 * i);
  perm.push_back(0);
  for (int i = 0; i < m; ++i) perm.push_back(1 + 2 * i);
  for (int i = 1 + m; i < rank; ++i) {
    split.push_back(s.dim(i));
    merged.push_back(s.dim(i));
    perm.push_back(static_cast<int64_t>(m + i));
  }
  const std::string blocks =
      b.Op(n, "Reshape", {padded, b.Int64s(n, "split_shape", split)}, "blocks");
  const std::string moved =
      b.Op(n, "Transpose", {blocks}, "moved", [&](auto* p) { SetInts(p, "perm", perm); });
  b.Emit(n, 0, "Reshape", {moved, b.Int64s(n, "merged_shape", merged)});
}

// The inverse: [b1, .., bM, B, J1, .., JM, rest] back to [B, J1 * b1, .., rest], then crops.
void BatchToSpace(OnnxBuilder& b, const Node& n) {
  const Shape& s = n.input(0).shape();
  const auto& block = n.attr<std::vector<int64_t>>("block_shape");
  const int m = static_cast<int>(block.size()), rank = s.rank();
  const std::vector<int64_t> before = Pairs(n, "crops", 0), after = Pairs(n, "crops", 1);
  std::vector<int64_t> split(block.begin(), block.end()), perm = {m}, merged = {-1};
  split.push_back(-1);
  std::vector<int64_t> starts, ends, axes;
  for (int i = 0; i < m; ++i) {
    split.push_back(s.dim(1 + i));
    perm.insert(perm.end(), {m + 1 + i, i});
    merged.push_back(s.dim(1 + i) * block[i]);
    starts.push_back(before[i]);
    ends.push_back(s.dim(1 + i) * block[i] - after[i]);
    axes.push_back(1 + i);
  }
  for (int i = 1 + m; i < rank; ++i) {
    split.push_back(s.dim(i));
    merged.push_back(s.dim(i));
    perm.push_back(m + i);
  }
  const std::string blocks =
      b.Op(n, "Reshape", {b.In(n, 0), b.Int64s(n, "split_shape", split)}, "blocks");
  const std::string moved =
      b.Op(n, "Transpose", {blocks}, "moved", [&](auto* p) { SetInts(p, "perm", perm); });
  const std::string merged_value =
      b.Op(n, "Reshape", {moved, b.Int64s(n, "merged_shape", merged)}, "uncropped");
  b.Emit(n, 0, "Slice",
         {merged_value, b.Int64s(n, "starts", starts), b.Int64s(n, "ends", ends),
          b.Int64s(n, "axes", axes)});
}

std::string NeedsStaticScanAxis(const Node& n) {
  const Shape& s = n.input(0).shape();
  if (!s.rank_known()) return "the input's rank must be known";
  int64_t axis = n.attr<int64_t>("axis");
  if (axis < 0) axis += s.rank();
  const int64_t len = s.dim(static_cast<int>(axis));
  if (len == kUnknownDim || len > kMaxUnrolledCumprod) {
    return "ONNX has no cumulative product, so the export unrolls it into one Mul per element "
           "along the axis, whose length must be known and at most " +
           std::to_string(kMaxUnrolledCumprod) + " (it is " +
           (len == kUnknownDim ? std::string("unknown") : std::to_string(len)) +
           "); compute it after the model otherwise";
  }
  return "";
}

// y_k = y_(k-1) * x_k from the first element (the last with reverse), the product in Loom's
// kernel's order, so the values are the same; exclusive shifts in a 1.
void UnrolledCumprod(OnnxBuilder& b, const Node& n) {
  const Shape& s = n.input(0).shape();
  int64_t axis = n.attr<int64_t>("axis");
  if (axis < 0) axis += s.rank();
  const int64_t len = s.dim(static_cast<int>(axis));
  const bool exclusive = n.attr<bool>("exclusive"), reverse = n.attr<bool>("reverse");
  std::vector<std::string> pieces;
  for (int64_t k = 0; k < len; ++k) pieces.push_back(b.NewName(n, "element"));
  onnx::NodeProto* split =
      b.AddNode("Split", {b.In(n, 0), b.Int64s(n, "ones", std::vector<int64_t>(len, 1))}, pieces);
  SetInt(split, "axis", axis);
  std::vector<std::string> out(len);
  std::string acc;
  for (int64_t step = 0; step < len; ++step) {
    const int64_t k = reverse ? len - 1 - step : step;
    if (exclusive) {
      // The first output is 1: ones of an element's shape.
      out[k] = step == 0 ? b.Op(n, "Expand",
                                {b.Scalar(n, "identity", n.input(0).dtype(), 1),
                                 b.Op(n, "Shape", {pieces[k]}, "element_shape")},
                                "ones")
                         : acc;
      if (step + 1 == len) break;  // the full product is no output
    }
    acc = step == 0 ? pieces[k] : b.Op(n, "Mul", {acc, pieces[k]}, "product");
    if (!exclusive) out[k] = acc;
  }
  b.Emit(n, 0, "Concat", out, [&](auto* p) { SetInt(p, "axis", axis); });
}

// atan2(y, x) = atan(y / x), + pi (y >= 0) or - pi (y < 0) where x < 0; where x == 0:
// pi / 2, -pi / 2 or 0 by y's sign. Where evaluates every branch; the quotient's inf / NaN
// at x == 0 are not selected.
void Atan2(OnnxBuilder& b, const Node& n) {
  const DType t = n.input(0).dtype();
  const std::string& y = b.In(n, 0);
  const std::string& x = b.In(n, 1);
  const std::string zero = b.Scalar(n, "zero", t, 0);
  const std::string pi = b.Scalar(n, "pi", t, std::numbers::pi);
  const std::string minus_pi = b.Scalar(n, "minus_pi", t, -std::numbers::pi);
  const std::string atan = b.Op(n, "Atan", {b.Op(n, "Div", {y, x}, "ratio")}, "atan");
  const std::string turn =
      b.Op(n, "Where", {b.Op(n, "GreaterOrEqual", {y, zero}, "y_nonnegative"), pi, minus_pi},
           "half_turn");
  const std::string left = b.Op(n, "Add", {atan, turn}, "left_half");
  const std::string off_axis =
      b.Op(n, "Where", {b.Op(n, "Less", {x, zero}, "x_negative"), left, atan}, "off_axis");
  const std::string on_axis = b.Op(
      n, "Where",
      {b.Op(n, "Greater", {y, zero}, "y_positive"), b.Scalar(n, "half_pi", t, std::numbers::pi / 2),
       b.Op(n, "Where",
            {b.Op(n, "Less", {y, zero}, "y_negative"),
             b.Scalar(n, "minus_half_pi", t, -std::numbers::pi / 2), zero},
            "below_or_zero")},
      "on_axis");
  b.Emit(n, 0, "Where", {b.Op(n, "Equal", {x, zero}, "x_zero"), on_axis, off_axis});
}

// ONNX MaxPool's Indices flatten NCHW positions, ((b * C + c) * H + h) * W + w; TF's argmax
// is (h * W + w) * C + c, plus b * H * W * C with include_batch_in_index. Both pick the first
// maximum of a window in row-major order (ONNX Runtime's strict >), so the indices agree.
void MaxPoolWithArgmax(OnnxBuilder& b, const Node& n) {
  const Shape& s = n.input(0).shape();
  const int64_t h = s.dim(1), w = s.dim(2), c = s.dim(3);
  const auto ksize = Spatial(n.attr<std::vector<int64_t>>("ksize"));
  const auto strides = Spatial(n.attr<std::vector<int64_t>>("strides"));
  const std::string values = b.NewName(n, "pool");
  const std::string indices = b.NewName(n, "nchw_indices");
  onnx::NodeProto* pool = b.AddNode("MaxPool", {ToNchw(b, n, b.In(n, 0))}, {values, indices});
  SetString(pool, "auto_pad", AutoPad(n));
  SetInts(pool, "kernel_shape", ksize);
  SetInts(pool, "strides", strides);
  EmitFromNchw(b, n, values);
  const std::string nhwc = b.Op(n, "Transpose", {indices}, "indices_nhwc", [](auto* p) {
    SetInts(p, "perm", {0, 2, 3, 1});
  });
  const std::string plane = b.Scalar(n, "plane", kInt64, static_cast<double>(h * w));
  std::vector<int64_t> channel(c);
  for (int64_t i = 0; i < c; ++i) channel[i] = i;
  std::string index = b.Op(n, "Add",
                           {b.Op(n, "Mul",
                                 {b.Op(n, "Mod", {nhwc, plane}, "position"),
                                  b.Scalar(n, "channels", kInt64, static_cast<double>(c))},
                                 "position_times_c"),
                            b.Int64s(n, "channel", channel)},
                           "tf_index");
  if (n.attr<bool>("include_batch_in_index")) {
    const std::string image = b.Scalar(n, "image", kInt64, static_cast<double>(h * w * c));
    index = b.Op(
        n, "Add",
        {index, b.Op(n, "Mul", {b.Op(n, "Div", {nhwc, image}, "batch"), image}, "batch_offset")},
        "tf_index_with_batch");
  }
  const DType targmax = n.attr<DType>("Targmax");
  b.Emit(n, 1, "Cast", {index}, [&](auto* p) { SetInt(p, "to", OnnxDType(targmax)); });
}

}  // namespace

void AddComposedRules(std::map<std::string, OpRule>& r) {
  r["SpaceToBatchND"] = {
      .unsupported =
          [](const Node& n) { return NeedsStaticDims(n, 1, "they give the Reshapes' shapes"); },
      .convert = SpaceToBatch};
  r["BatchToSpaceND"] = {
      .unsupported =
          [](const Node& n) { return NeedsStaticDims(n, 1, "they give the Reshapes' shapes"); },
      .convert = BatchToSpace};
  r["Cumprod"] = {.unsupported = NeedsStaticScanAxis, .convert = UnrolledCumprod};
  r["Atan2"] = {.convert = Atan2};
  r["MaxPoolWithArgmax"] = {.unsupported =
                                [](const Node& n) {
                                  if (std::string why = NeedsRank4(n); !why.empty()) return why;
                                  return NeedsStaticDims(
                                      n, 1,
                                      "height, width and channels convert ONNX MaxPool's NCHW "
                                      "Indices to TF's NHWC argmax");
                                },
                            .convert = MaxPoolWithArgmax};
}

}  // namespace loom::onnx_export
