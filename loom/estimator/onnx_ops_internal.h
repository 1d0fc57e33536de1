#ifndef LOOM_ESTIMATOR_ONNX_OPS_INTERNAL_H_
#define LOOM_ESTIMATOR_ONNX_OPS_INTERNAL_H_

// The parts of the ONNX op table (onnx_builder.h OpRules) in onnx_ops_array.cc, and what
// onnx_ops.cc and onnx_ops_array.cc share.
#include <map>
#include <string>

#include "loom/estimator/onnx_builder.h"

namespace loom::onnx_export {

// An OpRule's `unsupported` check: "" when input 0's rank is known, else why not.
inline std::string NeedsRank(const Node& n) {
  return n.input(0).shape().rank_known() ? "" : "the input's rank must be known";
}

// Input i of `node` as int64 (a Cast unless it is already).
std::string AsInt64(OnnxBuilder& b, const Node& n, int i);

// Reshape, Transpose, ExpandDims, Squeeze, Concat, Split, Slice, StridedSlice, Gather,
// OneHot, Tile, Pad, Fill, Rank, ZerosLike / OnesLike, Const.
void AddArrayRules(std::map<std::string, OpRule>& rules);
// FloorDiv, FloorMod, Range, Cumsum, TopKV2, Where, GatherNd, ScatterNd,
// UnsortedSegmentSum (onnx_ops_numeric.cc).
void AddNumericRules(std::map<std::string, OpRule>& rules);
// Bucketize, VocabularyLookup, CheckIds, IdsToStrings.
void AddFeatureColumnRules(std::map<std::string, OpRule>& rules);

}  // namespace loom::onnx_export

#endif  // LOOM_ESTIMATOR_ONNX_OPS_INTERNAL_H_
