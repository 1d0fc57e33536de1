// The ONNX op table, continued: array ops and the feature-column ops (docs/onnx.md).
#include <limits>
#include <numeric>

#include "loom/estimator/onnx_ops_internal.h"

namespace loom::onnx_export {
namespace {

using Rules = std::map<std::string, OpRule>;
constexpr int64_t kToEnd = std::numeric_limits<int64_t>::max();

// A ConstantOfShape filled with `value` of `dtype`.
std::string Filled(OnnxBuilder& b, const Node& n, const std::string& shape, DType dtype,
                   double value) {
  onnx::GraphProto scratch;
  OnnxBuilder tmp(&scratch);
  tmp.Scalar(n, "value", dtype, value);
  onnx::TensorProto t = scratch.initializer(0);
  t.clear_name();
  t.add_dims(1);
  return b.Op(n, "ConstantOfShape", {shape}, "filled", [&](auto* p) {
    onnx::AttributeProto* a = p->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = t;
  });
}

void AddShapeRules(Rules& r) {
  r["Const"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    Output out(const_cast<Node*>(&n), 0);
    b.Bind(out, b.Initializer(out.name(), n.attr<Tensor>("value")));
  }};
  r["Reshape"] = {
      .unsupported = [](const Node& n) -> std::string {
        for (int64_t d : n.attr<std::vector<int64_t>>("shape"))
          if (d == 0) return "a target shape with a 0 dim (opset 13's Reshape reads 0 as 'copy')";
        return "";
      },
      .convert =
          [](OnnxBuilder& b, const Node& n) {
            b.Emit(n, 0, "Reshape",
                   {b.In(n, 0), b.Int64s(n, "shape", n.attr<std::vector<int64_t>>("shape"))});
          }};
  r["ReshapeDynamic"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Reshape", {b.In(n, 0), AsInt64(b, n, 1)});
  }};
  r["ReshapeLike"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Reshape", {b.In(n, 0), b.Op(n, "Shape", {b.In(n, 1)}, "shape")});
  }};
  r["Transpose"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const auto& perm = n.attr<std::vector<int64_t>>("perm");
    b.Emit(n, 0, "Transpose", {b.In(n, 0)}, [&](auto* p) { SetInts(p, "perm", perm); });
  }};
  r["ExpandDims"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // Negative axes count from the end of the output in both.
    b.Emit(n, 0, "Unsqueeze", {b.In(n, 0), b.Int64s(n, "axes", {n.attr<int64_t>("axis")})});
  }};
  r["Squeeze"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const auto& axes = n.attr<std::vector<int64_t>>("axes");
    std::vector<std::string> inputs = {b.In(n, 0)};
    if (!axes.empty()) inputs.push_back(b.Int64s(n, "axes", axes));
    b.Emit(n, 0, "Squeeze", inputs);
  }};
  r["Rank"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Size", {b.Op(n, "Shape", {b.In(n, 0)}, "shape")});
  }};
  r["Fill"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Expand", {b.In(n, 0), b.Int64s(n, "dims", n.attr<std::vector<int64_t>>("dims"))});
  }};
  r["FillDynamic"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Expand", {b.In(n, 1), AsInt64(b, n, 0)});
  }};
  for (const auto& [op, value] :
       std::vector<std::pair<std::string, double>>{{"ZerosLike", 0}, {"OnesLike", 1}}) {
    r[op] = {.convert = [value = value](OnnxBuilder& b, const Node& n) {
      const std::string shape = b.Op(n, "Shape", {b.In(n, 0)}, "shape");
      b.Emit(n, 0, "Identity", {Filled(b, n, shape, n.input(0).dtype(), value)});
    }};
  }
}

void AddIndexRules(Rules& r) {
  r["Concat"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    std::vector<std::string> inputs;
    inputs.reserve(n.num_inputs());
    for (int i = 0; i < n.num_inputs(); ++i) inputs.push_back(b.In(n, i));
    const int64_t axis = n.attr<int64_t>("axis");
    b.Emit(n, 0, "Concat", inputs, [&](auto* p) { SetInt(p, "axis", axis); });
  }};
  r["Split"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    std::vector<std::string> outs;
    outs.reserve(n.num_outputs());
    for (int i = 0; i < n.num_outputs(); ++i)
      outs.push_back(Output(const_cast<Node*>(&n), i).name());
    onnx::NodeProto* p = b.AddNode("Split", {b.In(n, 0)}, outs);
    SetInt(p, "axis", n.attr<int64_t>("axis"));
    for (int i = 0; i < n.num_outputs(); ++i) b.Bind(Output(const_cast<Node*>(&n), i), outs[i]);
  }};
  r["Slice"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const auto& begin = n.attr<std::vector<int64_t>>("begin");
    const auto& size = n.attr<std::vector<int64_t>>("size");
    std::vector<int64_t> ends(begin.size()), axes(begin.size());
    for (size_t i = 0; i < begin.size(); ++i) {
      ends[i] = size[i] < 0 ? kToEnd : begin[i] + size[i];
      axes[i] = static_cast<int64_t>(i);
    }
    b.Emit(n, 0, "Slice",
           {b.In(n, 0), b.Int64s(n, "starts", begin), b.Int64s(n, "ends", ends),
            b.Int64s(n, "axes", axes)});
  }};
  r["StridedSlice"] = {
      .unsupported = NeedsRank, .convert = [](OnnxBuilder& b, const Node& n) {
        // TF's slice specs as one Slice over the input dims, then Squeeze of the shrunk dims
        // and Unsqueeze of the new ones (at their output positions).
        const auto& begin = n.attr<std::vector<int64_t>>("begin");
        const auto& end = n.attr<std::vector<int64_t>>("end");
        const auto& strides = n.attr<std::vector<int64_t>>("strides");
        auto bit = [&](const char* mask, size_t i) { return (n.attr<int64_t>(mask) >> i) & 1; };
        const int rank = n.input(0).shape().rank();
        int specs_on_dims = 0;
        for (size_t i = 0; i < begin.size(); ++i)
          if (!bit("new_axis_mask", i) && !bit("ellipsis_mask", i)) ++specs_on_dims;
        std::vector<int64_t> starts, ends, axes, steps, shrink, new_axes;
        int64_t dim = 0, out = 0;
        for (size_t i = 0; i < begin.size(); ++i) {
          if (bit("ellipsis_mask", i)) {
            const int64_t full = rank - specs_on_dims;
            dim += full;
            out += full;
          } else if (bit("new_axis_mask", i)) {
            new_axes.push_back(out++);
          } else if (bit("shrink_axis_mask", i)) {
            starts.push_back(begin[i]);
            ends.push_back(begin[i] == -1 ? kToEnd : begin[i] + 1);
            axes.push_back(dim);
            steps.push_back(1);
            shrink.push_back(dim++);
          } else {
            const int64_t s = strides[i];
            starts.push_back(bit("begin_mask", i) ? (s > 0 ? 0 : kToEnd) : begin[i]);
            ends.push_back(bit("end_mask", i)
                               ? (s > 0 ? kToEnd : std::numeric_limits<int64_t>::min())
                               : end[i]);
            axes.push_back(dim++);
            steps.push_back(s);
            ++out;
          }
        }
        std::string y = b.In(n, 0);
        if (!axes.empty()) {
          y = b.Op(n, "Slice",
                   {y, b.Int64s(n, "starts", starts), b.Int64s(n, "ends", ends),
                    b.Int64s(n, "axes", axes), b.Int64s(n, "steps", steps)},
                   "slice");
        }
        if (!shrink.empty()) y = b.Op(n, "Squeeze", {y, b.Int64s(n, "shrink", shrink)}, "squeeze");
        if (!new_axes.empty())
          y = b.Op(n, "Unsqueeze", {y, b.Int64s(n, "new_axes", new_axes)}, "unsqueeze");
        b.Emit(n, 0, "Identity", {y});
      }};
  r["Gather"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const int64_t axis = n.attr<int64_t>("axis");
    b.Emit(n, 0, "Gather", {b.In(n, 0), b.In(n, 1)}, [&](auto* p) { SetInt(p, "axis", axis); });
  }};
  r["OneHot"] = {.unsupported = NeedsRank, .convert = [](OnnxBuilder& b, const Node& n) {
                   // Not ONNX's OneHot: that counts negative indices from the end, while Loom's
                   // gives an all-`off` row for any index outside [0, depth) (the -1 of absent
                   // ids). So: where(unsqueeze(indices, axis) == range(depth) shaped along axis,
                   // on, off).
                   const int64_t depth = n.attr<int64_t>("depth");
                   const int64_t out_rank = n.input(0).shape().rank() + 1;
                   int64_t axis = n.attr<int64_t>("axis");
                   if (axis < 0) axis += out_rank;
                   std::vector<int64_t> range(depth);
                   std::iota(range.begin(), range.end(), 0);
                   std::vector<int64_t> range_shape = {depth};
                   for (int64_t d = axis + 1; d < out_rank; ++d) range_shape.push_back(1);
                   const std::string ids =
                       b.Op(n, "Unsqueeze", {AsInt64(b, n, 0), b.Int64s(n, "axis", {axis})}, "ids");
                   const std::string classes = b.Initializer(
                       b.NewName(n, "range"), Tensor::FromVector(range, Shape(range_shape)));
                   const std::string hot = b.Op(n, "Equal", {ids, classes}, "hot");
                   const DType t = n.attr<DType>("dtype");
                   b.Emit(n, 0, "Where",
                          {hot, b.Scalar(n, "on", t, n.attr<double>("on")),
                           b.Scalar(n, "off", t, n.attr<double>("off"))});
                 }};
  r["Tile"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    b.Emit(n, 0, "Tile",
           {b.In(n, 0), b.Int64s(n, "multiples", n.attr<std::vector<int64_t>>("multiples"))});
  }};
  r["Pad"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // Loom: [before_0, after_0, before_1, ...]; ONNX: all befores, then all afters.
    const auto& p = n.attr<std::vector<int64_t>>("paddings");
    std::vector<int64_t> pads(p.size());
    const size_t r = p.size() / 2;
    for (size_t i = 0; i < r; ++i) {
      pads[i] = p[2 * i];
      pads[r + i] = p[2 * i + 1];
    }
    b.Emit(n, 0, "Pad",
           {b.In(n, 0), b.Int64s(n, "pads", pads),
            b.Scalar(n, "constant", n.input(0).dtype(), n.attr<double>("constant"))});
  }};
}

// LabelEncoder (ai.onnx.ml, opset 2) from int64 or string keys.
void LabelEncoder(OnnxBuilder& b, const Node& n, const std::string& keys,
                  const std::function<void(onnx::NodeProto*)>& set_attrs) {
  b.Emit(n, 0, "LabelEncoder", {keys}, set_attrs, "ai.onnx.ml");
}

void AddFeatureColumnRulesImpl(Rules& r) {
  r["Bucketize"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // bucket = #{i : boundaries[i] <= x}, compared in float64 as Loom's kernel does.
    const auto& boundaries = n.attr<std::vector<double>>("boundaries");
    std::string x = b.Op(n, "Cast", {b.In(n, 0)}, "as_double",
                         [](auto* p) { SetInt(p, "to", onnx::TensorProto::DOUBLE); });
    x = b.Op(n, "Unsqueeze", {x, b.Int64s(n, "last", {-1})}, "column");
    const std::string ge =
        b.Op(n, "GreaterOrEqual",
             {x, b.Initializer(b.NewName(n, "boundaries"), Tensor::FromVector(boundaries))},
             "at_or_above");
    const std::string counts = b.Op(n, "Cast", {ge}, "as_int64",
                                    [](auto* p) { SetInt(p, "to", onnx::TensorProto::INT64); });
    b.Emit(n, 0, "ReduceSum", {counts, b.Int64s(n, "axes", {-1})},
           [](auto* p) { SetInt(p, "keepdims", 0); });
  }};
  r["VocabularyLookup"] = {
      .unsupported = [](const Node& n) -> std::string {
        if (n.attr<int64_t>("num_oov_buckets") > 0) {
          return "out-of-vocabulary buckets hash keys with Loom's FNV-1a hash, which no ONNX "
                 "op computes; use num_oov_buckets = 0 (with a default_value) for export";
        }
        if (n.attr<bool>("strict"))
          return "a strict lookup fails on unknown keys at run time, which ONNX cannot";
        return "";
      },
      .convert =
          [](OnnxBuilder& b, const Node& n) {
            // The padding key ("" or -1) is an extra entry mapping to -1, so a default_value
            // other than -1 applies to unknown keys only, as in Loom.
            const int64_t default_value = n.attr<int64_t>("default_value");
            std::vector<int64_t> ids;
            if (const auto* vocab = n.attrs().Find<std::vector<std::string>>("string_vocabulary")) {
              std::vector<std::string> keys = *vocab;
              for (size_t i = 0; i < keys.size(); ++i) ids.push_back(static_cast<int64_t>(i));
              keys.push_back("");
              ids.push_back(-1);
              LabelEncoder(b, n, b.In(n, 0), [&](auto* p) {
                SetStrings(p, "keys_strings", keys);
                SetInts(p, "values_int64s", ids);
                SetInt(p, "default_int64", default_value);
              });
              return;
            }
            std::vector<int64_t> keys = n.attr<std::vector<int64_t>>("int_vocabulary");
            for (size_t i = 0; i < keys.size(); ++i) ids.push_back(static_cast<int64_t>(i));
            keys.push_back(-1);
            ids.push_back(-1);
            LabelEncoder(b, n, AsInt64(b, n, 0), [&](auto* p) {
              SetInts(p, "keys_int64s", keys);
              SetInts(p, "values_int64s", ids);
              SetInt(p, "default_int64", default_value);
            });
          }};
  r["CheckIds"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    // With a default_value, ids outside [0, num_buckets) other than -1 become it. Without
    // one Loom fails at run time; ONNX has no such check, so the ids pass unchanged (a
    // Gather of an embedding or linear weight then rejects them, docs/onnx.md).
    const std::string ids = AsInt64(b, n, 0);
    if (!n.attr<bool>("has_default")) return b.Emit(n, 0, "Identity", {ids});
    const std::string below = b.Op(n, "Less", {ids, b.Scalar(n, "minus_one", kInt64, -1)}, "below");
    const std::string above =
        b.Op(n, "GreaterOrEqual",
             {ids, b.Scalar(n, "num_buckets", kInt64, n.attr<int64_t>("num_buckets"))}, "above");
    const std::string bad = b.Op(n, "Or", {below, above}, "outside");
    b.Emit(n, 0, "Where",
           {bad, b.Scalar(n, "default", kInt64, n.attr<int64_t>("default_value")), ids});
  }};
  r["IdsToStrings"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const auto& vocabulary = n.attr<std::vector<std::string>>("vocabulary");
    if (vocabulary.empty()) {
      return b.Emit(n, 0, "Cast", {b.In(n, 0)},
                    [](auto* p) { SetInt(p, "to", onnx::TensorProto::STRING); });
    }
    std::vector<int64_t> keys(vocabulary.size());
    std::iota(keys.begin(), keys.end(), 0);
    LabelEncoder(b, n, AsInt64(b, n, 0), [&](auto* p) {
      SetInts(p, "keys_int64s", keys);
      SetStrings(p, "values_strings", vocabulary);
      SetString(p, "default_string", "");
    });
  }};
}

}  // namespace

std::string AsInt64(OnnxBuilder& b, const Node& n, int i) {
  if (n.input(i).dtype() == kInt64) return b.In(n, i);
  return b.Op(n, "Cast", {b.In(n, i)}, "as_int64",
              [](auto* p) { SetInt(p, "to", onnx::TensorProto::INT64); });
}

void AddArrayRules(std::map<std::string, OpRule>& rules) {
  AddShapeRules(rules);
  AddIndexRules(rules);
}

void AddFeatureColumnRules(std::map<std::string, OpRule>& rules) {
  AddFeatureColumnRulesImpl(rules);
}

}  // namespace loom::onnx_export
