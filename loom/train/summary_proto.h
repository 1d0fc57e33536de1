#ifndef LOOM_TRAIN_SUMMARY_PROTO_H_
#define LOOM_TRAIN_SUMMARY_PROTO_H_

// The host-side summary encoders (what the summary kernels run), which build protobuf
// messages: for Loom's own code (the kernels, hooks, tests). Internal to Loom: not
// installed, so summary.h, the public header, exposes no protobuf type.
#include <string>
#include <vector>

#include "loom/io/proto/summary.pb.h"
#include "loom/train/summary.h"

namespace loom::train {

proto::Summary ScalarSummaryProto(const std::string& tag, double value);
// Throws InvalidArgument naming the tag for a NaN or infinity.
proto::Summary HistogramSummaryProto(const std::string& tag, const Tensor& values);
proto::HistogramProto HistogramFromValues(const std::vector<double>& values,
                                          const std::string& tag = "");
proto::Summary ImageSummaryProto(const std::string& tag, const Tensor& images, int max_images = 3);
proto::Summary TextSummaryProto(const std::string& tag, const Tensor& text);
proto::Summary TensorSummaryProto(const std::string& tag, const Tensor& tensor,
                                  const std::string& plugin_name = "");
// The TensorProto of a tensor (values as tensor_content, strings as string_val).
void TensorToProto(const Tensor& tensor, proto::TensorProto* out);

}  // namespace loom::train

#endif  // LOOM_TRAIN_SUMMARY_PROTO_H_
