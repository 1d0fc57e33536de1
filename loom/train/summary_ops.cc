// Summary op records: each op's signature, shape rule and kernel side by side. Every op
// outputs a serialized Summary as a string scalar and has no gradient.
#include <set>

#include "loom/train/summary_proto.h"

namespace loom::train {
namespace {

inline constexpr Attr<std::string> kTag{"tag"};
inline constexpr Attr<int64_t> kMaxImages{"max_images"};
inline constexpr Attr<std::string> kPluginName{"plugin_name"};

constexpr char kNoGradient[] = "summaries are outputs, not differentiable";

void StringScalarShape(InferenceContext& c) { c.set_output(0, kString, Shape{}); }

void SetSerialized(KernelContext& c, const proto::Summary& s) {
  c.set_output(0, Tensor::ScalarString(s.SerializeAsString()));
}

const OpDef& ScalarSummaryOp() {
  static const OpDef op = {
      .name = "ScalarSummary",
      .num_inputs = 1,
      .attrs = {kTag.Required()},
      .output_dtypes = {DTypeRule::Fixed(kString)},
      .shape =
          [](InferenceContext& c) {
            const Shape& s = c.input_shape(0);
            if (s.fully_defined() && s.num_elements() != 1) {
              c.Fail("a scalar summary needs one value, got shape ", s);
            }
            StringScalarShape(c);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            if (x.NumElements() != 1) c.Fail("a scalar summary needs one value, got ", x.shape());
            double v = 0;
            if (x.dtype() == kBool) {
              v = x.scalar<bool>() ? 1 : 0;
            } else {
              SwitchNumeric(x.dtype(), "ScalarSummary", [&](auto tag) {
                v = static_cast<double>(x.scalar<decltype(tag)>());
                return 0;
              });
            }
            SetSerialized(c, ScalarSummaryProto(c.attr(kTag), v));
          },
      .no_gradient = kNoGradient,
      .sample =
          [] {
            return OpSample{{SampleDoubles({})}, {kTag("x")}};
          },
  };
  return op;
}

const OpDef& HistogramSummaryOp() {
  static const OpDef op = {
      .name = "HistogramSummary",
      .num_inputs = 1,
      .attrs = {kTag.Required()},
      .output_dtypes = {DTypeRule::Fixed(kString)},
      .shape = StringScalarShape,
      .kernel =
          [](KernelContext& c) {
            SetSerialized(c, HistogramSummaryProto(c.attr(kTag), c.input(0)));
          },
      .no_gradient = kNoGradient,
      .sample =
          [] {
            return OpSample{{SampleDoubles({4})}, {kTag("x")}};
          },
  };
  return op;
}

const OpDef& ImageSummaryOp() {
  static const OpDef op = {
      .name = "ImageSummary",
      .num_inputs = 1,
      .attrs = {kTag.Required(), kMaxImages.Default(3)},
      .output_dtypes = {DTypeRule::Fixed(kString)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectRank(0, 4);
            StringScalarShape(c);
          },
      .kernel =
          [](KernelContext& c) {
            SetSerialized(c, ImageSummaryProto(c.attr(kTag), c.input(0),
                                               static_cast<int>(c.attr(kMaxImages))));
          },
      .no_gradient = kNoGradient,
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<float>(std::vector<float>(8, 0.5f), {2, 2, 2, 1})},
                            {kTag("x")}};
          },
  };
  return op;
}

const OpDef& TensorSummaryOp() {
  static const OpDef op = {
      .name = "TensorSummaryV2",
      .num_inputs = 1,
      .attrs = {kTag.Required(), kPluginName.Required()},
      .output_dtypes = {DTypeRule::Fixed(kString)},
      .shape = StringScalarShape,
      .kernel =
          [](KernelContext& c) {
            const std::string& plugin = c.attr(kPluginName);
            const std::string& tag = c.attr(kTag);
            SetSerialized(c, plugin == "text" ? TextSummaryProto(tag, c.input(0))
                                              : TensorSummaryProto(tag, c.input(0), plugin));
          },
      .no_gradient = kNoGradient,
      .sample =
          [] {
            return OpSample{{SampleDoubles({2})}, {kTag("x"), kPluginName("p")}};
          },
  };
  return op;
}

const OpDef& MergeSummaryOp() {
  static const OpDef op = {
      .name = "MergeSummary",
      .num_inputs = kVariadic,
      .output_dtypes = {DTypeRule::Fixed(kString)},
      .shape =
          [](InferenceContext& c) {
            for (int i = 0; i < c.num_inputs(); ++i) c.ExpectDType(i, {kString});
            StringScalarShape(c);
          },
      .kernel =
          [](KernelContext& c) {
            proto::Summary merged;
            std::set<std::string> tags;
            for (int i = 0; i < c.num_inputs(); ++i) {
              for (const std::string& bytes : c.input(i).flat<std::string>()) {
                proto::Summary s;
                if (!s.ParseFromString(bytes)) c.Fail("input ", i, " is not a serialized Summary");
                for (const auto& v : s.value()) {
                  if (!tags.insert(v.tag()).second) {
                    c.Fail("Duplicate tag ", v.tag(), " found in summary inputs");
                  }
                  *merged.add_value() = v;
                }
              }
            }
            SetSerialized(c, merged);
          },
      .no_gradient = kNoGradient,
      .sample =
          [] {
            return OpSample{{Tensor::ScalarString(""), Tensor::ScalarString("")}, {}};
          },
  };
  return op;
}

Output AddSummary(const Scope& scope, const OpDef& op, const std::string& tag, Input value,
                  AttrMap attrs = {}) {
  attrs.Set(kTag(scope.FullName(tag)));
  return scope.AddNode(op, {AsOutput(scope, value)}, std::move(attrs), tag)->output(0);
}

}  // namespace

Output ScalarSummary(const Scope& scope, const std::string& tag, Input value) {
  return AddSummary(scope, ScalarSummaryOp(), tag, value);
}

Output HistogramSummary(const Scope& scope, const std::string& tag, Input values) {
  return AddSummary(scope, HistogramSummaryOp(), tag, values);
}

Output ImageSummary(const Scope& scope, const std::string& tag, Input images, int max_images) {
  if (max_images < 1) throw InvalidArgument("ImageSummary '", tag, "': max_images must be >= 1");
  return AddSummary(scope, ImageSummaryOp(), tag, images,
                    {kMaxImages(static_cast<int64_t>(max_images))});
}

Output TextSummary(const Scope& scope, const std::string& tag, Input text) {
  return AddSummary(scope, TensorSummaryOp(), tag, text, {kPluginName(std::string("text"))});
}

Output TensorSummary(const Scope& scope, const std::string& tag, Input tensor,
                     const std::string& plugin_name) {
  return AddSummary(scope, TensorSummaryOp(), tag, tensor, {kPluginName(plugin_name)});
}

Output MergeSummary(const Scope& scope, const std::vector<Output>& inputs) {
  return scope.AddNode(MergeSummaryOp(), inputs, {}, "MergeSummary")->output(0);
}

bool IsSummaryNode(const Node& node) {
  const OpDef* op = &node.op_def();
  return op == &ScalarSummaryOp() || op == &HistogramSummaryOp() || op == &ImageSummaryOp() ||
         op == &TensorSummaryOp();
}

Output MergeAllSummaries(const Scope& scope) {
  std::vector<Output> summaries;
  const Graph& graph = scope.graph();
  for (int i = 0; i < graph.num_nodes(); ++i) {
    if (IsSummaryNode(*graph.node(i))) summaries.push_back(graph.node(i)->output(0));
  }
  if (summaries.empty()) return Output();
  return MergeSummary(scope, summaries);
}

void RegisterSummaryOps(OpRegistry& registry) {
  for (const OpDef* op : {&ScalarSummaryOp(), &HistogramSummaryOp(), &ImageSummaryOp(),
                          &TensorSummaryOp(), &MergeSummaryOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom::train
