// The op table of the ONNX export: elementwise math, activations, matrix products,
// reductions and the NHWC convolution / pooling ops. Array and feature-column ops are in
// onnx_ops_array.cc. docs/onnx.md lists every mapping.
#include <limits>

#include "loom/estimator/onnx_builder.h"
#include "loom/estimator/onnx_ops_internal.h"

namespace loom::onnx_export {
namespace {

using Rules = std::map<std::string, OpRule>;

OpRule Same(const std::string& onnx_op) {
  return {.convert = [onnx_op = onnx_op](OnnxBuilder& b, const Node& n) {
    std::vector<std::string> inputs;
    inputs.reserve(n.num_inputs());
    for (int i = 0; i < n.num_inputs(); ++i) inputs.push_back(b.In(n, i));
    b.Emit(n, 0, onnx_op, inputs);
  }};
}

// x -> f(x) by a chain of ONNX ops built by `body`, which returns the final value.
OpRule Composite(std::function<std::string(OnnxBuilder&, const Node&)> body,
                 std::function<std::string(const Node&)> unsupported = nullptr) {
  return {.unsupported = std::move(unsupported),
          .convert = [body = std::move(body)](OnnxBuilder& b, const Node& n) {
            b.Emit(n, 0, "Identity", {body(b, n)});
          }};
}

void AddMathRules(Rules& r) {
  for (const auto& [loom_op, onnx_op] :
       std::vector<std::pair<std::string, std::string>>{{"Add", "Add"},
                                                        {"Sub", "Sub"},
                                                        {"Mul", "Mul"},
                                                        {"Div", "Div"},
                                                        {"Pow", "Pow"},
                                                        {"Maximum", "Max"},
                                                        {"Minimum", "Min"},
                                                        {"Equal", "Equal"},
                                                        {"Less", "Less"},
                                                        {"LessEqual", "LessOrEqual"},
                                                        {"Greater", "Greater"},
                                                        {"GreaterEqual", "GreaterOrEqual"},
                                                        {"LogicalAnd", "And"},
                                                        {"LogicalOr", "Or"},
                                                        {"LogicalNot", "Not"},
                                                        {"Neg", "Neg"},
                                                        {"Abs", "Abs"},
                                                        {"Exp", "Exp"},
                                                        {"Log", "Log"},
                                                        {"Sqrt", "Sqrt"},
                                                        {"Reciprocal", "Reciprocal"},
                                                        {"Floor", "Floor"},
                                                        {"Round", "Round"},
                                                        {"Ceil", "Ceil"},
                                                        {"Sin", "Sin"},
                                                        {"Cos", "Cos"},
                                                        {"Tan", "Tan"},
                                                        {"Asin", "Asin"},
                                                        {"Acos", "Acos"},
                                                        {"Atan", "Atan"},
                                                        {"Sinh", "Sinh"},
                                                        {"Cosh", "Cosh"},
                                                        {"Erf", "Erf"},
                                                        {"Sign", "Sign"},
                                                        {"Relu", "Relu"},
                                                        {"Sigmoid", "Sigmoid"},
                                                        {"Tanh", "Tanh"},
                                                        {"Softplus", "Softplus"},
                                                        {"Elu", "Elu"},
                                                        {"Identity", "Identity"},
                                                        {"StopGradient", "Identity"},
                                                        {"PlaceholderWithDefault", "Identity"},
                                                        {"EnsureShape", "Identity"},
                                                        {"AddN", "Sum"},
                                                        {"Select", "Where"},
                                                        {"BiasAdd", "Add"},
                                                        {"Shape", "Shape"},
                                                        {"Size", "Size"}}) {
    r[loom_op] = Same(onnx_op);
  }
  r["NotEqual"] = Composite([](OnnxBuilder& b, const Node& n) {
    return b.Op(n, "Not", {b.Op(n, "Equal", {b.In(n, 0), b.In(n, 1)}, "equal")}, "not");
  });
  r["Square"] = Composite([](OnnxBuilder& b, const Node& n) {
    return b.Op(n, "Mul", {b.In(n, 0), b.In(n, 0)}, "square");
  });
  r["Rsqrt"] = Composite([](OnnxBuilder& b, const Node& n) {
    return b.Op(n, "Reciprocal", {b.Op(n, "Sqrt", {b.In(n, 0)}, "sqrt")}, "reciprocal");
  });
  r["Log1p"] = Composite([](OnnxBuilder& b, const Node& n) {
    std::string one = b.Scalar(n, "one", n.input(0).dtype(), 1);
    return b.Op(n, "Log", {b.Op(n, "Add", {b.In(n, 0), one}, "plus_one")}, "log");
  });
  r["Expm1"] = Composite([](OnnxBuilder& b, const Node& n) {
    return b.Op(n, "Sub",
                {b.Op(n, "Exp", {b.In(n, 0)}, "exp"), b.Scalar(n, "one", n.input(0).dtype(), 1)},
                "minus_one");
  });
  r["Relu6"] = Composite([](OnnxBuilder& b, const Node& n) {
    const DType t = n.input(0).dtype();
    return b.Op(n, "Clip", {b.In(n, 0), b.Scalar(n, "zero", t, 0), b.Scalar(n, "six", t, 6)},
                "clip");
  });
  r["ClipByValue"] = Composite([](OnnxBuilder& b, const Node& n) {
    // Clip needs scalar bounds; Loom's broadcast, so min(max(x, lo), hi).
    return b.Op(n, "Min", {b.Op(n, "Max", {b.In(n, 0), b.In(n, 1)}, "max"), b.In(n, 2)}, "min");
  });
  r["LeakyRelu"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const float alpha = static_cast<float>(n.attr<double>("alpha"));
    b.Emit(n, 0, "LeakyRelu", {b.In(n, 0)}, [&](auto* p) { SetFloat(p, "alpha", alpha); });
  }};
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    r[op] = {.convert = [op = std::string(op)](OnnxBuilder& b, const Node& n) {
      const int64_t axis = n.attr<int64_t>("axis");
      b.Emit(n, 0, op, {b.In(n, 0)}, [&](auto* p) { SetInt(p, "axis", axis); });
    }};
  }
  r["Cast"] = {.convert = [](OnnxBuilder& b, const Node& n) {
    const int to = OnnxDType(n.attr<DType>("DstT"));
    b.Emit(n, 0, "Cast", {b.In(n, 0)}, [&](auto* p) { SetInt(p, "to", to); });
  }};
  for (const char* op : {"MatMul", "BatchMatMul"}) {
    r[op] = {.unsupported = NeedsRank, .convert = [](OnnxBuilder& b, const Node& n) {
               std::string x[2] = {b.In(n, 0), b.In(n, 1)};
               const char* attr[2] = {"transpose_a", "transpose_b"};
               for (int i = 0; i < 2; ++i) {
                 if (!n.attrs().GetOr<bool>(attr[i], false)) continue;
                 const int rank = n.input(i).shape().rank();
                 std::vector<int64_t> perm;
                 perm.reserve(rank);
                 for (int d = 0; d < rank; ++d) perm.push_back(d);
                 std::swap(perm[rank - 1], perm[rank - 2]);
                 x[i] = b.Op(n, "Transpose", {x[i]}, attr[i],
                             [&](auto* p) { SetInts(p, "perm", perm); });
               }
               b.Emit(n, 0, "MatMul", {x[0], x[1]});
             }};
  }
}

void AddReduceRules(Rules& r) {
  for (const auto& [loom_op, onnx_op] :
       std::vector<std::pair<std::string, std::string>>{{"Sum", "ReduceSum"},
                                                        {"Mean", "ReduceMean"},
                                                        {"Max", "ReduceMax"},
                                                        {"Min", "ReduceMin"},
                                                        {"Prod", "ReduceProd"}}) {
    r[loom_op] = {.convert = [onnx_op = onnx_op](OnnxBuilder& b, const Node& n) {
      const auto& axes = n.attr<std::vector<int64_t>>("axes");
      const int64_t keep = n.attrs().GetOr<bool>("keep_dims", false) ? 1 : 0;
      // Empty axes reduce every dim, in Loom and in ONNX. Opset 13 takes ReduceSum's axes
      // as an input and the others' as an attribute.
      std::vector<std::string> inputs = {b.In(n, 0)};
      if (onnx_op == "ReduceSum" && !axes.empty()) inputs.push_back(b.Int64s(n, "axes", axes));
      b.Emit(n, 0, onnx_op, inputs, [&](auto* p) {
        SetInt(p, "keepdims", keep);
        if (onnx_op != "ReduceSum" && !axes.empty()) SetInts(p, "axes", axes);
      });
    }};
  }
  for (const auto& [loom_op, onnx_op] : std::vector<std::pair<std::string, std::string>>{
           {"ArgMax", "ArgMax"}, {"ArgMin", "ArgMin"}}) {
    r[loom_op] = {.convert = [onnx_op = onnx_op](OnnxBuilder& b, const Node& n) {
      const int64_t axis = n.attr<int64_t>("axis");
      b.Emit(n, 0, onnx_op, {b.In(n, 0)}, [&](auto* p) {
        SetInt(p, "axis", axis);
        SetInt(p, "keepdims", 0);
      });
    }};
  }
}

void AddConvRules(Rules& r) {
  r["Conv2D"] = {
      .unsupported = NeedsRank4, .convert = [](OnnxBuilder& b, const Node& n) {
        // Loom: input NHWC, filter HWIO [kh, kw, in, out]; ONNX: NCHW and OIHW.
        const std::string w = b.Op(n, "Transpose", {b.In(n, 1)}, "filter_oihw", [](auto* p) {
          SetInts(p, "perm", {3, 2, 0, 1});
        });
        const auto strides = Spatial(n.attr<std::vector<int64_t>>("strides"));
        const std::string y = b.Op(n, "Conv", {ToNchw(b, n, b.In(n, 0)), w}, "conv", [&](auto* p) {
          SetString(p, "auto_pad", AutoPad(n));
          SetInts(p, "strides", strides);
          const Shape& f = n.input(1).shape();
          if (f.rank_known() && f.dim(0) >= 0 && f.dim(1) >= 0)
            SetInts(p, "kernel_shape", {f.dim(0), f.dim(1)});
        });
        EmitFromNchw(b, n, y);
      }};
  for (const auto& [loom_op, onnx_op] : std::vector<std::pair<std::string, std::string>>{
           {"MaxPool", "MaxPool"}, {"AvgPool", "AveragePool"}}) {
    r[loom_op] = {
        .unsupported = NeedsRank4, .convert = [onnx_op = onnx_op](OnnxBuilder& b, const Node& n) {
          // AveragePool's default count_include_pad = 0 averages over the window inside the
          // image, as TF's SAME padding does.
          const auto ksize = Spatial(n.attr<std::vector<int64_t>>("ksize"));
          const auto strides = Spatial(n.attr<std::vector<int64_t>>("strides"));
          const std::string y = b.Op(n, onnx_op, {ToNchw(b, n, b.In(n, 0))}, "pool", [&](auto* p) {
            SetString(p, "auto_pad", AutoPad(n));
            SetInts(p, "kernel_shape", ksize);
            SetInts(p, "strides", strides);
          });
          EmitFromNchw(b, n, y);
        }};
  }
}

}  // namespace

const std::map<std::string, OpRule>& OpRules() {
  static const Rules* rules = [] {
    auto* r = new Rules();
    AddMathRules(*r);
    AddReduceRules(*r);
    AddConvRules(*r);
    AddConvFamilyRules(*r);
    AddComposedRules(*r);
    AddArrayRules(*r);
    AddNumericRules(*r);
    AddFeatureColumnRules(*r);
    return r;
  }();
  return *rules;
}

std::string WhyNotMapped(const std::string& op) {
  static const std::map<std::string, std::string> reasons = {
      {"HashBucket",
       "hash bucket ids use Loom's FNV-1a + fmix64 hash, which no ONNX op computes; use a "
       "vocabulary column (it maps to ai.onnx.ml LabelEncoder) or compute the ids before the "
       "model and feed them to an identity column"},
      {"FingerprintKeys",
       "crossed columns hash raw keys with Loom's FNV-1a hash, which no ONNX "
       "op computes; leave crossed columns out of the exported model"},
      {"CrossIds",
       "crossed columns hash id combinations with Loom's hash, which no ONNX op "
       "computes; leave crossed columns out of the exported model"},
      {"IteratorGetNext",
       "the graph reads an input pipeline; export with a serving input "
       "receiver of placeholders"},
      {"Dropout", "dropout is random; build the PREDICT graph with training = false"},
      {"Switch",
       "tf.cond (Switch / Merge) is not exported as an ONNX If; decide the branch while "
       "building the PREDICT graph (a Python or C++ if on the mode) or select with Where"},
      {"Merge",
       "tf.cond (Switch / Merge) is not exported as an ONNX If; decide the branch while "
       "building the PREDICT graph (a Python or C++ if on the mode) or select with Where"},
      {"RandomUniform", "random numbers in a PREDICT graph"},
      {"RandomNormal", "random numbers in a PREDICT graph"},
      {"TruncatedNormal", "random numbers in a PREDICT graph"},
      {"RandomUniformInt", "random numbers in a PREDICT graph"},
      {"Assign", "it changes a variable; a PREDICT graph only reads them"},
      {"AssignAdd", "it changes a variable; a PREDICT graph only reads them"},
      {"AssignSub", "it changes a variable; a PREDICT graph only reads them"},
      {"While",
       "Loom's functional while loop has no ONNX Loop translation; export a PREDICT graph "
       "without the loop (unroll it when its trip count is fixed)"},
  };
  auto it = reasons.find(op);
  return it == reasons.end() ? "" : it->second;
}

}  // namespace loom::onnx_export
