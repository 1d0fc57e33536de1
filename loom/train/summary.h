#ifndef LOOM_TRAIN_SUMMARY_H_
#define LOOM_TRAIN_SUMMARY_H_

// TensorBoard summaries, TF1's tf.summary.*: ops that output a serialized Summary proto
// (a string scalar) for a FileWriter (file_writer.h), and the same encoders on the host.
//
//   auto loss_summary = ScalarSummary(s, "loss", loss);
//   auto w_summary = HistogramSummary(s, "weights", w);
//   auto merged = MergeSummary(s, {loss_summary, w_summary});   // or MergeAllSummaries(s)
//   writer.AddSummary(session.Eval(merged).scalar<std::string>(), step);
//
// Tags are prefixed with the scope's name scope ("train/loss"), as in TF. Encodings:
//   scalar     simple_value (float), TF1's ScalarSummary.
//   histogram  HistogramProto over TF's default buckets: limits ±1e-12·1.1^k up to 1e20,
//              then ±DBL_MAX, and 0 (1551 limits); runs of empty buckets are collapsed
//              into one, as TF's Histogram::EncodeToProto. NaN/Inf is InvalidArgument.
//   image      PNG; a batch [N, H, W, C] (C = 1, 3 or 4) gives min(N, max_images) images
//              tagged "<tag>/image/<i>" ("<tag>/image" when max_images == 1). uint8 is
//              used as is; float images are scaled per image: to [0, 255] when all values
//              are >= 0, else to [-127, 127] + 128, with non-finite pixels red.
//   text       a string tensor with plugin "text".
//   tensor     any tensor as a TensorProto, with a plugin name (default "").
// Ops are stateless and have no gradient ("summaries are outputs").
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::train {

Output ScalarSummary(const Scope& scope, const std::string& tag, Input value);
Output HistogramSummary(const Scope& scope, const std::string& tag, Input values);
Output ImageSummary(const Scope& scope, const std::string& tag, Input images, int max_images = 3);
Output TextSummary(const Scope& scope, const std::string& tag, Input text);
Output TensorSummary(const Scope& scope, const std::string& tag, Input tensor,
                     const std::string& plugin_name = "");
// Concatenates serialized Summaries (scalars or vectors of them). Duplicate tags are
// InvalidArgument at run time, as in TF.
Output MergeSummary(const Scope& scope, const std::vector<Output>& inputs);
// MergeSummary over every summary op in the graph so far (TF's merge_all, without
// collections: the graph is scanned for summary ops). Invalid Output when there are none.
Output MergeAllSummaries(const Scope& scope);
// True for nodes made by the summary builders above (MergeSummary excluded).
bool IsSummaryNode(const Node& node);

void RegisterSummaryOps(OpRegistry& registry);

// TF's default histogram bucket limits (see above), ascending, ending with DBL_MAX.
const std::vector<double>& DefaultHistogramBucketLimits();
// PNG bytes of 8-bit pixels, rows top to bottom, channels interleaved (1 gray, 2 gray +
// alpha, 3 RGB, 4 RGBA); zlib-compressed, filter type 0.
std::string EncodePng(const uint8_t* pixels, int width, int height, int channels);
// The host-side encoders the kernels run (ScalarSummaryProto, ...) return protobuf
// messages: they are in summary_proto.h, for Loom's own code.

}  // namespace loom::train

#endif  // LOOM_TRAIN_SUMMARY_H_
