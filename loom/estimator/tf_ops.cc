#include "loom/estimator/tf_ops.h"

#include <algorithm>
#include <functional>
#include <set>

#include "loom/estimator/tf_ops_internal.h"
#include "loom/graph/op_def.h"
#include "loom/io/example.h"
#include "loom/ops/array.h"
#include "loom/ops/control.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"

namespace loom::tf_import {

DType DTypeFromTf(int tf_dtype, std::string_view what) {
  if (tf_dtype > 100) tf_dtype -= 100;  // TF1 reference types (DT_FLOAT_REF)
  if (tf_dtype == 0 || !IsValidDType(tf_dtype)) {
    throw Unimplemented(what, ": TF dtype ", tf_dtype, " has no Loom type");
  }
  return static_cast<DType>(tf_dtype);
}

Shape ShapeFromTf(const proto::TensorShapeProto& p) {
  if (p.unknown_rank()) return Shape::Unknown();
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) dims.push_back(d.size() < 0 ? -1 : d.size());
  return Shape(std::move(dims));
}

namespace {

inline constexpr Attr<std::vector<std::string>> kSparseKeys{"sparse_keys"};
inline constexpr Attr<std::vector<DType>> kSparseTypes{"sparse_types"};
inline constexpr Attr<std::vector<std::string>> kDenseKeys{"dense_keys"};
inline constexpr Attr<std::vector<DType>> kDenseTypes{"dense_types"};
inline constexpr Attr<std::vector<Shape>> kDenseShapes{"dense_shapes"};

// A variable's value from variables/. A TF1 partitioned variable's part "name/part_K" is
// not a checkpoint key: the checkpoint holds the full tensor "name" and its slices.
Output VariableValue(OpContext& c) {
  const std::string& name = c.node.name();
  if (c.variables == nullptr) {
    throw NotFound(c.source, ": TF variable '", name, "' (", c.node.op(),
                   ") needs the SavedModel's variables/ checkpoint, which is missing");
  }
  Tensor value;
  if (c.variables->Contains(name)) {
    value = c.variables->Get(name);
  } else {
    const size_t slash = name.rfind("/part_");
    const std::string base = slash == std::string::npos ? "" : name.substr(0, slash);
    const std::string digits = slash == std::string::npos ? "" : name.substr(slash + 6);
    if (base.empty() || digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char ch) { return ch >= '0' && ch <= '9'; }) ||
        !c.variables->Contains(base)) {
      throw NotFound(c.source, ": TF variable '", name, "' (", c.node.op(),
                     ") has no value in the SavedModel's variables/ checkpoint '",
                     c.variables->prefix(), "'");
    }
    value = c.variables->GetPart(base, std::stoi(digits));
  }
  if (auto it = c.node.attr().find("shape"); it != c.node.attr().end()) {
    const Shape declared = ShapeFromTf(it->second.shape());
    if (declared.fully_defined() && !(declared == value.shape())) {
      throw InvalidArgument(c.source, ": TF variable '", name, "' is declared ",
                            declared.ToString(), " but its checkpoint value is ",
                            value.shape().ToString());
    }
  }
  return Const(c.named, value);
}

// TF's ParseExample: serialized tf.Example records [batch] and one default per dense
// feature in; out, in TF's order, for each sparse (VarLenFeature) feature its indices
// int64 [n, 2], values [n] and dense shape int64 [2] = [batch, longest list], then one
// [batch] + dense_shapes[i] tensor per dense (FixedLenFeature) feature. Runs io's
// ParseExampleBatch on the host; no gradient.
const OpDef& ParseExampleOp() {
  static const OpDef op = {
      .name = "TfParseExample",
      .num_inputs = kVariadic,
      .attrs = {kSparseKeys.Required(), kSparseTypes.Required(), kDenseKeys.Required(),
                kDenseTypes.Required(), kDenseShapes.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::ByShapeRule(
          "per sparse key: int64 indices, then values of sparse_types[i], then int64 dense_shape; "
          "then per dense key dense_types[i]")},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kString});
            const auto& sparse_types = c.attr(kSparseTypes);
            const auto& types = c.attr(kDenseTypes);
            const auto& shapes = c.attr(kDenseShapes);
            const Shape& in = c.input_shape(0);
            const int64_t batch = in.rank_known() && in.rank() == 1 ? in.dim(0) : -1;
            const int num_sparse = static_cast<int>(sparse_types.size());
            for (int i = 0; i < num_sparse; ++i) {
              c.set_output(i, kInt64, Shape({-1, 2}));
              c.set_output(num_sparse + i, sparse_types[i], Shape({-1}));
              c.set_output(2 * num_sparse + i, kInt64, Shape({2}));
            }
            for (size_t i = 0; i < types.size(); ++i) {
              c.set_output(3 * num_sparse + i, types[i], shapes[i].WithLeadingDim(batch));
            }
          },
      .kernel =
          [](KernelContext& c) {
            const auto& sparse_keys = c.attr(kSparseKeys);
            const auto& sparse_types = c.attr(kSparseTypes);
            const auto& keys = c.attr(kDenseKeys);
            const auto& types = c.attr(kDenseTypes);
            const auto& shapes = c.attr(kDenseShapes);
            const Tensor& serialized = c.input(0);
            if (serialized.rank() != 1) {
              c.Fail("the serialized tf.Example input must be a vector of records, is ",
                     serialized.shape().ToString());
            }
            ExampleSpec spec;
            for (size_t i = 0; i < sparse_keys.size(); ++i) {
              spec.var_len[sparse_keys[i]] = {.dtype = sparse_types[i]};
            }
            for (size_t i = 0; i < keys.size(); ++i) {
              FixedLenFeature f{.dtype = types[i], .shape = shapes[i]};
              const Tensor& fallback = c.input(1 + i);
              if (fallback.NumElements() > 0) f.default_value = fallback;
              spec.fixed[keys[i]] = f;
            }
            ParsedFeatures parsed = ParseExampleBatch(serialized.flat<std::string>(), spec);
            const int num_sparse = static_cast<int>(sparse_keys.size());
            const int64_t batch = serialized.NumElements();
            for (int i = 0; i < num_sparse; ++i) {
              ParsedFeature& f = parsed.at(sparse_keys[i]);
              const auto splits = f.row_splits.flat<int64_t>();
              Tensor indices(kInt64, {f.values.NumElements(), 2});
              int64_t* at = indices.data<int64_t>();
              int64_t longest = 0;
              for (int64_t b = 0; b < batch; ++b) {
                longest = std::max(longest, splits[b + 1] - splits[b]);
                for (int64_t j = 0; j < splits[b + 1] - splits[b]; ++j) {
                  *at++ = b;
                  *at++ = j;
                }
              }
              c.set_output(i, std::move(indices));
              c.set_output(num_sparse + i, std::move(f.values));
              c.set_output(2 * num_sparse + i, Tensor::FromVector<int64_t>({batch, longest}));
            }
            for (size_t i = 0; i < keys.size(); ++i) {
              c.set_output(3 * num_sparse + i, parsed.at(keys[i]).values);
            }
          },
      .no_gradient = "it parses records",
      .not_swept = "needs serialized tf.Example records (tf_saved_model_test covers it)",
  };
  return op;
}

// The string values of a constant input (ParseExample's keys).
std::string ConstString(const OpContext& c, size_t i) {
  Output x = c.In(i);
  if (x.node->op_def().role != OpRole::kConst || x.node->attr(kConstValue).dtype() != kString ||
      x.node->attr(kConstValue).NumElements() != 1) {
    throw Unimplemented(c.source, ": TF node '", c.node.name(), "': input ", i,
                        " must be a constant string");
  }
  return x.node->attr(kConstValue).flat<std::string>()[0];
}

std::vector<DType> TypeList(const OpContext& c, const std::string& attr) {
  std::vector<DType> types;
  if (!c.node.attr().count(attr)) return types;
  for (int t : c.Attr(attr).list().type()) {
    const DType dtype = DTypeFromTf(t, c.node.name());
    if (dtype != kFloat32 && dtype != kInt64 && dtype != kString) {
      throw InvalidArgument(c.source, ": ParseExample '", c.node.name(), "': ", attr, " holds ",
                            DTypeName(dtype), "; tf.Example features are float32, int64 or string");
    }
    types.push_back(dtype);
  }
  return types;
}

Output ParseExampleRule(OpContext& c) {
  const int64_t num_sparse = c.node.attr().count("Nsparse") ? c.node.attr().at("Nsparse").i() : 0;
  const int64_t num_dense = c.node.attr().count("Ndense") ? c.node.attr().at("Ndense").i() : 0;
  // Inputs: serialized, names, sparse_keys[Nsparse], dense_keys[Ndense], dense_defaults[Ndense].
  std::vector<std::string> sparse_keys, keys;
  std::vector<Output> inputs = {c.In(0)};
  for (int64_t i = 0; i < num_sparse; ++i) sparse_keys.push_back(ConstString(c, 2 + i));
  for (int64_t i = 0; i < num_dense; ++i) keys.push_back(ConstString(c, 2 + num_sparse + i));
  for (int64_t i = 0; i < num_dense; ++i) inputs.push_back(c.In(2 + num_sparse + num_dense + i));
  const std::vector<DType> sparse_types = TypeList(c, "sparse_types");
  const std::vector<DType> types = TypeList(c, "Tdense");
  std::vector<Shape> shapes;
  if (num_dense > 0) {
    for (const auto& shape : c.Attr("dense_shapes").list().shape()) {
      shapes.push_back(ShapeFromTf(shape));
      if (!shapes.back().fully_defined()) {
        throw Unimplemented(c.source, ": ParseExample '", c.node.name(), "': dense feature '",
                            keys[shapes.size() - 1], "' has shape ", shapes.back().ToString(),
                            "; Loom parses fully defined dense shapes only");
      }
    }
  }
  if (static_cast<int64_t>(types.size()) != num_dense ||
      static_cast<int64_t>(shapes.size()) != num_dense ||
      static_cast<int64_t>(sparse_types.size()) != num_sparse) {
    throw InvalidArgument(c.source, ": ParseExample '", c.node.name(),
                          "': sparse_types / Tdense / dense_shapes do not have Nsparse / Ndense "
                          "entries");
  }
  std::set<std::string> seen;
  std::vector<std::string> all_keys = sparse_keys;
  all_keys.insert(all_keys.end(), keys.begin(), keys.end());
  for (const auto& key : all_keys) {
    if (!seen.insert(key).second) {
      throw InvalidArgument(c.source, ": ParseExample '", c.node.name(), "': feature '", key,
                            "' is parsed twice");
    }
  }
  return Output(c.named.AddNode(ParseExampleOp(), inputs,
                                {kSparseKeys(sparse_keys), kSparseTypes(sparse_types),
                                 kDenseKeys(keys), kDenseTypes(types), kDenseShapes(shapes)}),
                0);
}

// TF's RandomUniform: the shape is a tensor (tf.shape(x) in dropout). TF's (seed, seed2)
// are (graph seed, op seed), (0, 0) unseeded: a seeded op is seeded in Loom by its op seed
// (the same numbers every load, not TF's numbers), an unseeded one draws anew each load.
Output RandomUniformRule(OpContext& c) {
  const int64_t seed = c.node.attr().count("seed") ? c.node.attr().at("seed").i() : 0;
  const int64_t seed2 = c.node.attr().count("seed2") ? c.node.attr().at("seed2").i() : 0;
  return RandomUniform(c.named, c.In(0), DTypeFromTf(c.Attr("dtype").type(), c.node.name()), 0.0,
                       1.0, seed == 0 && seed2 == 0 ? kNoSeed : seed2);
}

// TF's FusedBatchNorm / V2 / V3 (NHWC, per channel): y = (x - mean) * rsqrt(variance +
// epsilon) * scale + offset, with the batch's mean and biased variance over N, H, W when
// is_training (Keras' training branch), else inputs 3 and 4 (the moving statistics). Only
// output 0 (y) is translated: a graph that uses the batch statistics or reserve outputs
// (the moving-average updates) is refused naming the output.
Output FusedBatchNormRule(OpContext& c) {
  c.RequireNhwc();
  const double epsilon = c.node.attr().count("epsilon") ? c.node.attr().at("epsilon").f() : 1e-4;
  Output x = c.In(0);
  Output mean, variance;
  if (c.AttrB("is_training", true)) {
    mean = Mean(c.helper, x, {0, 1, 2});
    variance = Mean(c.helper, Square(c.helper, Sub(c.helper, x, mean)), {0, 1, 2});
  } else {
    mean = c.In(3);
    variance = c.In(4);
  }
  Output inv = Mul(c.helper, Rsqrt(c.helper, Add(c.helper, variance, epsilon)), c.In(1));
  return Add(c.named, Mul(c.helper, Sub(c.helper, x, mean), inv), c.In(2));
}

// Switch(data, pred) -> (output_false, output_true), one of them dead; RefSwitch is the
// same on a TF1 ref input (a variable read here, so a value).
Output SwitchRule(OpContext& c) { return Switch(c.named, c.In(0), c.In(1)).output_false; }

// Merge(inputs) -> (the live input, value_index); dead when every input is.
Output MergeRule(OpContext& c) {
  if (c.in.empty()) {
    throw InvalidArgument(c.source, ": TF node '", c.node.name(), "' (", c.node.op(),
                          ") has no data inputs; a Merge joins the branches of a cond");
  }
  return Merge(c.named, c.in).output;
}

// The rules of this file; tf_ops_array.cc adds the rest (AddArrayRules).
std::map<std::string, TfOp> CoreRules() {
  return {
      {"Identity", [](OpContext& c) { return Identity(c.named, c.In(0)); }},
      {"NoOp", [](OpContext& c) { return Output(NoOp(c.named).node, 0); }},
      {"Switch", SwitchRule},
      {"RefSwitch", SwitchRule},
      {"Merge", MergeRule},
      {"RefMerge", MergeRule},
      {"Assert",
       [](OpContext& c) {
         std::vector<Output> data(c.in.begin() + (c.in.empty() ? 0 : 1), c.in.end());
         const int64_t summarize =
             c.node.attr().count("summarize") ? c.node.attr().at("summarize").i() : 3;
         return Output(Assert(c.named, c.In(0), data, summarize).node, 0);
       }},
      {"RandomUniform", RandomUniformRule},
      {"FusedBatchNorm", FusedBatchNormRule},
      {"FusedBatchNormV2", FusedBatchNormRule},
      {"FusedBatchNormV3", FusedBatchNormRule},
      {"Equal", [](OpContext& c) { return Binary(c, Equal); }},
      {"NotEqual", [](OpContext& c) { return Binary(c, NotEqual); }},
      {"Less", [](OpContext& c) { return Binary(c, Less); }},
      {"LessEqual", [](OpContext& c) { return Binary(c, LessEqual); }},
      {"Greater", [](OpContext& c) { return Binary(c, Greater); }},
      {"GreaterEqual", [](OpContext& c) { return Binary(c, GreaterEqual); }},
      {"LogicalAnd", [](OpContext& c) { return Binary(c, LogicalAnd); }},
      {"LogicalNot", [](OpContext& c) { return Unary(c, LogicalNot); }},
      {"Floor", [](OpContext& c) { return Unary(c, Floor); }},
      {"Round", [](OpContext& c) { return Unary(c, Round); }},
      // (x - y)^2: nn.moments' variance, as in a Keras BatchNormalization.
      {"SquaredDifference",
       [](OpContext& c) { return Square(c.named, Sub(c.helper, c.In(0), c.In(1))); }},
      {"ParseExample", ParseExampleRule},
      {"Snapshot", [](OpContext& c) { return Identity(c.named, c.In(0)); }},
      {"StopGradient", [](OpContext& c) { return Identity(c.named, c.In(0)); }},
      // Not fed: its default value.
      {"PlaceholderWithDefault", [](OpContext& c) { return Identity(c.named, c.In(0)); }},
      {"ReadVariableOp", [](OpContext& c) { return Identity(c.named, c.In(0)); }},
      {"VariableV2", VariableValue},
      {"VarHandleOp", VariableValue},
      {"MatMul",
       [](OpContext& c) {
         return MatMul(c.named, c.In(0), c.In(1),
                       {.transpose_a = c.AttrB("transpose_a", false),
                        .transpose_b = c.AttrB("transpose_b", false)});
       }},
      {"BiasAdd",
       [](OpContext& c) {
         c.RequireNhwc();
         return BiasAdd(c.named, c.In(0), c.In(1));
       }},
      {"Add", [](OpContext& c) { return Binary(c, Add); }},
      {"AddV2", [](OpContext& c) { return Binary(c, Add); }},
      {"Sub", [](OpContext& c) { return Binary(c, Sub); }},
      {"Mul", [](OpContext& c) { return Binary(c, Mul); }},
      {"RealDiv", [](OpContext& c) { return Binary(c, Div); }},
      // TF's Div and TruncateDiv truncate integer quotients, as Loom's Div does.
      {"Div", [](OpContext& c) { return Binary(c, Div); }},
      {"TruncateDiv", [](OpContext& c) { return Binary(c, Div); }},
      {"FloorDiv", [](OpContext& c) { return Binary(c, FloorDiv); }},
      {"FloorMod", [](OpContext& c) { return Binary(c, FloorMod); }},
      {"Range", [](OpContext& c) { return Range(c.named, c.In(0), c.In(1), c.In(2)); }},
      {"Cumsum",
       [](OpContext& c) {
         return Cumsum(
             c.named, c.In(0), c.ConstInts(1).at(0),
             {.exclusive = c.AttrB("exclusive", false), .reverse = c.AttrB("reverse", false)});
       }},
      {"Cumprod",
       [](OpContext& c) {
         return Cumprod(
             c.named, c.In(0), c.ConstInts(1).at(0),
             {.exclusive = c.AttrB("exclusive", false), .reverse = c.AttrB("reverse", false)});
       }},
      {"Maximum", [](OpContext& c) { return Binary(c, Maximum); }},
      {"Minimum", [](OpContext& c) { return Binary(c, Minimum); }},
      {"Neg", [](OpContext& c) { return Unary(c, Neg); }},
      {"Abs", [](OpContext& c) { return Unary(c, Abs); }},
      {"Square", [](OpContext& c) { return Unary(c, Square); }},
      {"Sqrt", [](OpContext& c) { return Unary(c, Sqrt); }},
      {"Rsqrt", [](OpContext& c) { return Unary(c, Rsqrt); }},
      {"Exp", [](OpContext& c) { return Unary(c, Exp); }},
      {"Log", [](OpContext& c) { return Unary(c, Log); }},
      {"Relu", [](OpContext& c) { return Relu(c.named, c.In(0)); }},
      {"Relu6", [](OpContext& c) { return Relu6(c.named, c.In(0)); }},
      {"Sigmoid", [](OpContext& c) { return Sigmoid(c.named, c.In(0)); }},
      {"Tanh", [](OpContext& c) { return Tanh(c.named, c.In(0)); }},
      {"Softmax", [](OpContext& c) { return Softmax(c.named, c.In(0)); }},
      {"Conv2D",
       [](OpContext& c) {
         c.RequireNhwc();
         c.RequireNoDilations();
         return Conv2D(c.named, c.In(0), c.In(1), c.AttrInts("strides"), c.Attr("padding").s());
       }},
      {"MaxPool",
       [](OpContext& c) {
         c.RequireNhwc();
         return MaxPool(c.named, c.In(0), c.AttrInts("ksize"), c.AttrInts("strides"),
                        c.Attr("padding").s());
       }},
      {"AvgPool",
       [](OpContext& c) {
         c.RequireNhwc();
         return AvgPool(c.named, c.In(0), c.AttrInts("ksize"), c.AttrInts("strides"),
                        c.Attr("padding").s());
       }},
      {"Reshape",
       [](OpContext& c) { return Reshape(c.named, c.In(0), Cast(c.helper, c.In(1), kInt64)); }},
      {"Squeeze",
       [](OpContext& c) {
         auto it = c.node.attr().find("squeeze_dims");
         std::vector<int64_t> axes;
         if (it != c.node.attr().end())
           axes.assign(it->second.list().i().begin(), it->second.list().i().end());
         return Squeeze(c.named, c.In(0), axes);
       }},
      {"ExpandDims",
       [](OpContext& c) { return ExpandDims(c.named, c.In(0), c.ConstInts(1).at(0)); }},
      {"ConcatV2",
       [](OpContext& c) {
         c.In(1);  // at least one value and the axis: a clear error otherwise
         std::vector<Output> values(c.in.begin(), c.in.end() - 1);
         return Concat(c.named, values, c.ConstInts(c.in.size() - 1).at(0));
       }},
      {"Pack",
       [](OpContext& c) {
         const int64_t axis = c.node.attr().count("axis") ? c.node.attr().at("axis").i() : 0;
         std::vector<Output> parts;
         for (const Output& x : c.in) parts.push_back(ExpandDims(c.helper, x, axis));
         return Concat(c.named, parts, axis);
       }},
      {"Shape",
       [](OpContext& c) {
         const DType out = c.node.attr().count("out_type")
                               ? DTypeFromTf(c.node.attr().at("out_type").type(), c.node.name())
                               : kInt32;
         return Cast(c.named, ShapeOf(c.helper, c.In(0)), out);
       }},
      {"StridedSlice",
       [](OpContext& c) {
         auto mask = [&](const char* name) {
           return c.node.attr().count(name) ? c.node.attr().at(name).i() : int64_t{0};
         };
         return StridedSlice(c.named, c.In(0), c.ConstInts(1), c.ConstInts(2), c.ConstInts(3),
                             {.begin_mask = mask("begin_mask"),
                              .end_mask = mask("end_mask"),
                              .shrink_axis_mask = mask("shrink_axis_mask"),
                              .new_axis_mask = mask("new_axis_mask"),
                              .ellipsis_mask = mask("ellipsis_mask")});
       }},
      {"Cast",
       [](OpContext& c) {
         return Cast(c.named, c.In(0), DTypeFromTf(c.Attr("DstT").type(), c.node.name()));
       }},
      {"ArgMax",
       [](OpContext& c) {
         Output index = ArgMax(c.helper, c.In(0), c.ConstInts(1).at(0));
         const DType out = c.node.attr().count("output_type")
                               ? DTypeFromTf(c.node.attr().at("output_type").type(), c.node.name())
                               : kInt64;
         return Cast(c.named, index, out);
       }},
  };
}

const std::map<std::string, TfOp>& OpTable() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, TfOp>(CoreRules());
    AddArrayRules(*t);
    AddNnRules(*t);
    return t;
  }();
  return *table;
}

}  // namespace

bool IsSupportedTfOp(const std::string& op) {
  return op == "Const" || op == "Placeholder" || OpTable().count(op) > 0;
}

bool IsTf1LoopOp(const std::string& op) {
  return op == "Enter" || op == "RefEnter" || op == "Exit" || op == "RefExit" ||
         op == "NextIteration" || op == "RefNextIteration" || op == "LoopCond";
}

std::vector<std::string> SupportedTfOps() {
  std::vector<std::string> ops = {"Const", "Placeholder"};
  for (const auto& [op, rule] : OpTable()) ops.push_back(op);
  std::sort(ops.begin(), ops.end());
  return ops;
}

Output TranslateTfNode(const proto::NodeDef& node, std::vector<Output> inputs,
                       const std::vector<Node*>& control_inputs, Graph& graph,
                       const TfCheckpointReader* variables, const std::string& source) {
  auto rule = OpTable().find(node.op());
  if (rule == OpTable().end()) {
    throw Unimplemented(source, ": TF op ", node.op(), " (node '", node.name(),
                        "') is not supported");
  }
  const std::vector<Operation> deps(control_inputs.begin(), control_inputs.end());
  Scope root = Scope(graph).WithControlDependencies(deps);
  OpContext c{node,
              std::move(inputs),
              root.WithOpName(node.name()),
              root.NewSubScope("_tf_import"),
              variables,
              source};
  try {
    return rule->second(c);
  } catch (const Error& e) {
    throw WithContext(e, source, ": translating TF node '", node.name(), "' (", node.op(), ")");
  }
}

void RegisterTfImportOps(OpRegistry& registry) { registry.Register(ParseExampleOp()); }

}  // namespace loom::tf_import
