#ifndef LOOM_ESTIMATOR_ONNX_OPS_INTERNAL_H_
#define LOOM_ESTIMATOR_ONNX_OPS_INTERNAL_H_

// The parts of the ONNX op table (onnx_builder.h OpRules) in onnx_ops_array.cc, and what
// onnx_ops.cc and onnx_ops_array.cc share.
#include <map>
#include <string>
#include <vector>

#include "loom/estimator/onnx_builder.h"

namespace loom::onnx_export {

// An OpRule's `unsupported` check: "" when input 0's rank is known, else why not.
inline std::string NeedsRank(const Node& n) {
  return n.input(0).shape().rank_known() ? "" : "the input's rank must be known";
}

// NHWC <-> NCHW around the ops ONNX defines for NCHW only.
inline std::string ToNchw(OnnxBuilder& b, const Node& n, const std::string& x) {
  return b.Op(n, "Transpose", {x}, "to_nchw", [](auto* p) { SetInts(p, "perm", {0, 3, 1, 2}); });
}
inline void EmitFromNchw(OnnxBuilder& b, const Node& n, const std::string& y) {
  b.Emit(n, 0, "Transpose", {y}, [](auto* p) { SetInts(p, "perm", {0, 2, 3, 1}); });
}
// A windowed op's padding attribute as ONNX's auto_pad: TF's SAME puts the extra row /
// column at the end, as SAME_UPPER.
inline std::string AutoPad(const Node& n) {
  return n.attr<std::string>("padding") == "SAME" ? "SAME_UPPER" : "VALID";
}
// {h, w} of an NHWC attribute [1, h, w, 1].
inline std::vector<int64_t> Spatial(const std::vector<int64_t>& nhwc) { return {nhwc[1], nhwc[2]}; }
// An OpRule's `unsupported` check for NHWC ops: "" when input 0 is known to be rank 4.
inline std::string NeedsRank4(const Node& n) {
  const Shape& s = n.input(0).shape();
  return s.rank_known() && s.rank() == 4 ? "" : "the input's rank must be known to be 4 (NHWC)";
}

// Input i of `node` as int64 (a Cast unless it is already).
std::string AsInt64(OnnxBuilder& b, const Node& n, int i);

// Reshape, Transpose, ExpandDims, Squeeze, Concat, Split, Slice, StridedSlice, Gather,
// OneHot, Tile, Pad, Fill, Rank, ZerosLike / OnesLike, Const.
void AddArrayRules(std::map<std::string, OpRule>& rules);
// FloorDiv, FloorMod, Range, Cumsum, TopKV2, Where, GatherNd, ScatterNd,
// UnsortedSegmentSum (onnx_ops_numeric.cc).
void AddNumericRules(std::map<std::string, OpRule>& rules);
// DepthwiseConv2dNative, Conv2DTranspose (onnx_ops_conv.cc).
void AddConvFamilyRules(std::map<std::string, OpRule>& rules);
// Atan2, Cumprod, SpaceToBatchND, BatchToSpaceND, MaxPoolWithArgmax: composed from ONNX
// ops (onnx_ops_composed.cc).
void AddComposedRules(std::map<std::string, OpRule>& rules);
// Bucketize, VocabularyLookup, CheckIds, IdsToStrings.
void AddFeatureColumnRules(std::map<std::string, OpRule>& rules);

}  // namespace loom::onnx_export

#endif  // LOOM_ESTIMATOR_ONNX_OPS_INTERNAL_H_
