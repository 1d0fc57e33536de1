// One sweep over every registered op record (AllOps()): sample inputs from the record's
// signature, then check that
//   - the shape rule's output dtypes and shapes equal what the kernel produces,
//   - a differentiable op passes the float64 numeric gradient check,
//   - the node round-trips through GraphDef (same op, attributes and inferred outputs).
// An op with only float inputs and attributes that all have defaults is sampled from its
// record alone (float64 [2,3] inputs in [0.5, 1.5)); any other op names its sample in
// kSamples, or its reason in kNotSwept. A new op that is neither fails the sweep.
// A second test checks the registration lists against the sources: every record a source
// file defines is in its family's Register*Ops list, and every Register*Ops function is
// reached from AllOps().
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "loom/estimator/all_ops.h"
#include "loom/graph/graph_def.h"
#include "loom/graph/graph_def_proto.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

// Inputs (Const nodes for the shape check, float64 ones fed as placeholders for the
// gradient check) and attributes for one op.
struct Sample {
  std::vector<Tensor> inputs;
  AttrMap attrs;
  // False where a float64 gradient check does not apply (e.g. integer inputs besides).
  bool check_gradient = true;
};

Tensor Doubles(const Shape& shape, uint64_t seed = 1) {
  return RandomDoubles(shape, seed, 0.5, 1.5);
}
Tensor Ints(std::vector<int64_t> v) { return Tensor::FromVector<int64_t>(v); }
Tensor Floats(std::vector<float> v, const Shape& shape) {
  return Tensor::FromVector<float>(v, shape);
}

// Samples for ops the record alone cannot sample: required attributes, integer or shape
// inputs, or inputs whose shapes must agree in a particular way.
std::map<std::string, Sample> Samples() {
  using V = std::vector<int64_t>;
  std::map<std::string, Sample> s;
  s["Cast"] = {{Doubles({2, 3})}, {{"DstT", kFloat32}}, false};
  s["AddN"] = {{Doubles({2, 3}, 1), Doubles({2, 3}, 2), Doubles({2, 3}, 3)}, {}};
  s["LogicalAnd"] = {
      {Tensor::FromVector<bool>({true, false}), Tensor::FromVector<bool>({true, true})}, {}};
  s["LogicalOr"] = {
      {Tensor::FromVector<bool>({true, false}), Tensor::FromVector<bool>({false, false})}, {}};
  s["LogicalNot"] = {{Tensor::FromVector<bool>({true, false})}, {}};
  s["ScaleRows"] = {{Doubles({2, 3}), Doubles({2})}, {{"scale", 2.0}}};
  // No gradient flows through StopGradient by definition, and DropoutGrad's mask input is
  // not differentiable: the numeric check would differ on purpose.
  s["StopGradient"] = {{Doubles({2, 3})}, {}, false};
  s["DropoutGrad"] = {{Doubles({2, 3}), Doubles({2, 3}, 2)}, {}, false};
  s["Sum"] = {{Doubles({2, 3})}, {{"axes", V{1}}}};
  s["Mean"] = {{Doubles({2, 3})}, {{"axes", V{0}}, {"keep_dims", true}}};
  s["Max"] = {{Doubles({2, 3})}, {{"axes", V{1}}}};
  s["Min"] = {{Doubles({2, 3})}, {{"axes", V{1}}}};
  s["Prod"] = {{Doubles({2, 3})}, {{"axes", V{0, 1}}}};
  s["ProdExclusive"] = {{Doubles({2, 3})}, {{"axes", V{1}}}, false};
  s["ArgMax"] = {{Doubles({2, 3})}, {{"axis", int64_t{1}}}};
  s["ArgMin"] = {{Doubles({2, 3})}, {{"axis", int64_t{0}}}};
  s["BroadcastToShapeOf"] = {{Doubles({3}), Doubles({2, 3})}, {{"axes", V{}}}, false};
  s["SumToShapeOf"] = {{Doubles({2, 3}), Doubles({3})}, {}, false};
  s["SizeRatio"] = {{Doubles({2, 3}), Doubles({3})}, {}, false};
  s["MatMul"] = {{Doubles({2, 3}), Doubles({3, 4})}, {}};
  s["BatchMatMul"] = {{Doubles({2, 2, 3}), Doubles({2, 3, 2})}, {{"transpose_a", false}}};
  s["Select"] = {
      {Tensor::FromVector<bool>({true, false, true}), Doubles({3}), Doubles({3})}, {}, false};
  s["Reshape"] = {{Doubles({2, 3})}, {{"shape", V{3, -1}}}};
  s["ReshapeDynamic"] = {{Doubles({2, 3}), Ints({6})}, {}, false};
  s["ExpandDims"] = {{Doubles({2, 3})}, {{"axis", int64_t{1}}}};
  s["Squeeze"] = {{Doubles({2, 1, 3})}, {{"axes", V{1}}}};
  s["Transpose"] = {{Doubles({2, 3})}, {{"perm", V{1, 0}}}};
  s["Fill"] = {{Tensor::Scalar<double>(2.0)}, {{"dims", V{2, 3}}}};
  s["FillDynamic"] = {{Ints({2, 3}), Tensor::Scalar<double>(2.0)}, {}, false};
  s["Shape"] = {{Doubles({2, 3})}, {}};
  s["Size"] = {{Doubles({2, 3})}, {}};
  s["Rank"] = {{Doubles({2, 3})}, {}};
  s["Slice"] = {{Doubles({3, 4})}, {{"begin", V{1, 0}}, {"size", V{2, -1}}}};
  s["StridedSlice"] = {{Doubles({4, 3})},
                       {{"begin", V{0, 1}}, {"end", V{4, 3}}, {"strides", V{2, 1}}}};
  s["Gather"] = {{Doubles({4, 3}), Ints({3, 0, 3})}, {{"axis", int64_t{0}}}, false};
  s["OneHot"] = {{Ints({0, 2, 1})}, {{"depth", int64_t{3}}}};
  s["Concat"] = {{Doubles({2, 3}), Doubles({2, 2})}, {{"axis", int64_t{1}}}};
  s["Split"] = {{Doubles({2, 4})}, {{"axis", int64_t{1}}, {"num_split", int64_t{2}}}};
  s["Tile"] = {{Doubles({2, 3})}, {{"multiples", V{2, 1}}}};
  s["Pad"] = {{Doubles({2, 3})}, {{"paddings", V{1, 0, 0, 2}}}};
  s["Conv2D"] = {{Doubles({1, 4, 4, 2}), Doubles({2, 2, 2, 3})},
                 {{"strides", V{1, 1, 1, 1}}, {"padding", std::string("SAME")}}};
  s["MaxPool"] = {
      {Doubles({1, 4, 4, 2})},
      {{"ksize", V{1, 2, 2, 1}}, {"strides", V{1, 2, 2, 1}}, {"padding", std::string("VALID")}}};
  s["AvgPool"] = {
      {Doubles({1, 4, 4, 2})},
      {{"ksize", V{1, 2, 2, 1}}, {"strides", V{1, 1, 1, 1}}, {"padding", std::string("SAME")}}};
  s["BiasAdd"] = {{Doubles({2, 3}), Doubles({3})}, {}};
  s["L2Loss"] = {{Doubles({2, 3})}, {}};
  s["GlobalNorm"] = {{Doubles({2, 3}), Doubles({4})}, {}};
  s["ClipToGlobalNorm"] = {
      {Doubles({2, 3}), Tensor::Scalar<double>(3.0), Tensor::Scalar<double>(1.0)}, {}};
  s["SoftmaxCrossEntropyWithLogits"] = {{Doubles({2, 3}, 2), Doubles({2, 3})}, {}};
  s["SparseSoftmaxCrossEntropyWithLogits"] = {{Ints({0, 2}), Doubles({2, 3})}, {}, false};
  s["SigmoidCrossEntropyWithLogits"] = {{Doubles({2, 3}, 2), Doubles({2, 3})}, {}};
  s["Dropout"] = {{Doubles({2, 3})}, {{"rate", 0.5}, {"seed", int64_t{1}}}, false};
  s["RandomUniform"] = {{}, {{"shape", Shape{2, 3}}, {"dtype", kFloat64}, {"seed", int64_t{1}}}};
  s["RandomNormal"] = {{}, {{"shape", Shape{2, 3}}, {"dtype", kFloat32}, {"seed", int64_t{1}}}};
  s["TruncatedNormal"] = {{}, {{"shape", Shape{2, 3}}, {"dtype", kFloat32}, {"seed", int64_t{1}}}};
  s["RandomUniformInt"] = {
      {}, {{"shape", Shape{4}}, {"dtype", kInt32}, {"minval", int64_t{0}}, {"maxval", int64_t{5}}}};
  s["LeakyRelu"] = {{Doubles({2, 3})}, {{"alpha", 0.1}}};
  s["Const"] = {{}, {{"value", Doubles({2})}}};
  s["PlaceholderWithDefault"] = {{Doubles({2})}, {{"shape", Shape{-1}}}};
  s["ConstantFill"] = {{}, {{"dtype", kFloat32}, {"shape", Shape{2}}, {"value", 3.0}}};
  s["ExponentialDecay"] = {{Tensor::Scalar<int64_t>(5), Tensor::Scalar<double>(0.1)},
                           {{"decay_steps", int64_t{10}}, {"decay_rate", 0.5}},
                           false};
  s["PolynomialDecay"] = {{Tensor::Scalar<int64_t>(5), Tensor::Scalar<double>(0.1)},
                          {{"decay_steps", int64_t{10}}},
                          false};
  s["CosineDecay"] = {{Tensor::Scalar<int64_t>(5), Tensor::Scalar<double>(0.1)},
                      {{"decay_steps", int64_t{10}}},
                      false};
  s["PiecewiseConstant"] = {{Tensor::Scalar<int64_t>(5)},
                            {{"boundaries", V{3}}, {"values", std::vector<double>{1, 2}}}};
  s["ScalarSummary"] = {{Doubles({})}, {{"tag", std::string("x")}}};
  s["HistogramSummary"] = {{Doubles({4})}, {{"tag", std::string("x")}}};
  s["ImageSummary"] = {{Floats(std::vector<float>(2 * 2 * 2 * 1, 0.5f), {2, 2, 2, 1})},
                       {{"tag", std::string("x")}}};
  s["TensorSummaryV2"] = {{Doubles({2})},
                          {{"tag", std::string("x")}, {"plugin_name", std::string("p")}}};
  s["MergeSummary"] = {{Tensor::ScalarString(""), Tensor::ScalarString("")}, {}};
  s["ThresholdConfusionCounts"] = {
      {Tensor::FromVector<bool>({true, false}), Doubles({2}), Doubles({2})},
      {{"thresholds", std::vector<double>{0.5, 1.0}}},
      false};
  s["InTopK"] = {{Doubles({2, 3}), Ints({0, 2})}, {{"k", int64_t{2}}}, false};
  s["ConfusionMatrixCounts"] = {
      {Ints({0, 1}), Ints({1, 1}), Doubles({2})}, {{"num_classes", int64_t{2}}}, false};
  s["Bucketize"] = {{Doubles({3})}, {{"boundaries", std::vector<double>{0.8, 1.2}}}, false};
  s["HashBucket"] = {{Tensor::FromVector<std::string>({"a", "b"})}, {{"num_buckets", int64_t{4}}}};
  s["FingerprintKeys"] = {{Tensor::FromVector<std::string>({"a", "b"})}, {}};
  s["VocabularyLookup"] = {
      {Tensor::FromVector<std::string>({"a", "c"})},
      {{"string_vocabulary", std::vector<std::string>{"a", "b"}}, {"num_oov_buckets", int64_t{1}}}};
  s["IdsToStrings"] = {{Ints({0, 1})}, {{"vocabulary", std::vector<std::string>{"a", "b"}}}};
  s["CheckIds"] = {{Ints({0, 1})},
                   {{"num_buckets", int64_t{2}},
                    {"has_default", false},
                    {"default_value", int64_t{-1}},
                    {"context", std::string("ids")}}};
  s["CheckLabelRange"] = {
      {Ints({0, 1})},
      {{"max_label", 2.0}, {"exclusive", true}, {"context", std::string("labels")}}};
  s["CrossIds"] = {{Ints({0, 1}), Ints({1, 0})},
                   {{"hash_bucket_size", int64_t{5}}, {"hash_key", int64_t{7}}}};
  return s;
}

// Ops the sweep does not sample, each with its reason.
const std::map<std::string, std::string>& NotSwept() {
  static const auto* reasons = new std::map<std::string, std::string>{
      {"Placeholder", "must be fed; fed placeholders carry every other sample"},
      {"VariableV2", "a variable needs an initializer run first (state_test covers it)"},
      {"Assign", "needs a variable input (ref input); covered by state and saver tests"},
      {"AssignAdd", "needs a variable input (ref input)"},
      {"AssignSub", "needs a variable input (ref input)"},
      {"ScaleVariable", "needs a variable input (ref input)"},
      {"NoOp", "no inputs, no outputs"},
      {"MakeIterator", "needs a host-side dataset (iterator_ops_test covers it)"},
      {"IteratorGetNext", "needs an initialized iterator (iterator_ops_test covers it)"},
      {"TfParseExample", "needs serialized tf.Example records (tf_saved_model_test covers it)"},
      {"IndexedSlicesToDense", "built by Gradients for sparse gradients only"},
  };
  return *reasons;
}

bool IsApplyOp(const std::string& name) {
  return name.starts_with("Apply") || name.starts_with("SparseApply");
}

// Grad-only helpers (built by a gradient rule from the forward op's outputs): the
// forward op's gradient check covers them.
bool IsGradHelper(const std::string& name) {
  return name.ends_with("Grad") || name.find("Backprop") != std::string::npos;
}

// A node of `op` over Const inputs, or nullptr when construction throws.
Node* TryBuild(Graph& graph, const OpDef& op, const Sample& sample, std::string* error) {
  Scope root(graph);
  std::vector<Output> inputs;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    inputs.push_back(Const(root.WithOpName("in" + std::to_string(i)), sample.inputs[i]));
  }
  try {
    return root.AddNode(op, inputs, sample.attrs, op.name);
  } catch (const Error& e) {
    *error = e.message();
    return nullptr;
  }
}

// The generic sample: float64 [2,3] inputs, default attributes.
std::optional<Sample> GenericSample(const OpDef& op) {
  if (op.num_inputs == kVariadic || op.num_inputs > 3 || !op.ref_inputs.empty())
    return std::nullopt;
  for (const AttrDef& a : op.attrs) {
    if (!a.default_value && !a.optional) return std::nullopt;
  }
  Sample s;
  for (int i = 0; i < op.num_inputs; ++i) s.inputs.push_back(Doubles({2, 3}, i + 1));
  Graph g;
  std::string error;
  if (TryBuild(g, op, s, &error) == nullptr) return std::nullopt;
  return s;
}

void CheckShapesAgainstKernel(const OpDef& op, const Sample& sample) {
  Graph graph;
  std::string error;
  Node* node = TryBuild(graph, op, sample, &error);
  ASSERT_NE(node, nullptr) << op.name << ": " << error;
  std::vector<Output> fetches;
  for (int i = 0; i < node->num_outputs(); ++i) fetches.push_back(node->output(i));
  Session session(graph, {.intra_op_threads = 1});
  std::vector<Tensor> values;
  try {
    values = session.Run({}, fetches, {Operation(node)});
  } catch (const Error& e) {
    FAIL() << op.name << ": the kernel failed on the sample: " << e.message();
  }
  for (int i = 0; i < node->num_outputs(); ++i) {
    EXPECT_EQ(values[i].dtype(), node->output_dtype(i)) << op.name << " output " << i;
    EXPECT_TRUE(node->output_shape(i).IsCompatibleWith(values[i].shape()))
        << op.name << " output " << i << ": inferred " << node->output_shape(i) << ", kernel "
        << values[i].shape();
  }
}

void CheckGraphDefRoundTrip(const OpDef& op, const Sample& sample) {
  Graph graph;
  std::string error;
  Node* node = TryBuild(graph, op, sample, &error);
  ASSERT_NE(node, nullptr) << op.name << ": " << error;
  const proto::GraphDef def = ToGraphDef(graph);
  Graph loaded;
  try {
    ImportGraphDef(def, AllOps(), loaded);
  } catch (const Error& e) {
    FAIL() << op.name << ": import failed: " << e.message();
  }
  Node* back = loaded.FindNode(node->name());
  ASSERT_NE(back, nullptr) << op.name;
  EXPECT_EQ(&back->op_def(), &op) << op.name;
  ASSERT_EQ(back->num_outputs(), node->num_outputs()) << op.name;
  for (int i = 0; i < node->num_outputs(); ++i) {
    EXPECT_EQ(back->output_dtype(i), node->output_dtype(i)) << op.name;
    EXPECT_EQ(back->output_shape(i), node->output_shape(i)) << op.name;
  }
  for (const AttrDef& a : op.attrs) {
    const auto it = node->attrs().map().find(a.name);
    if (it == node->attrs().map().end()) continue;
    const auto back_it = back->attrs().map().find(a.name);
    ASSERT_NE(back_it, back->attrs().map().end()) << op.name << " lost attribute " << a.name;
    // Floats are stored as float32 in a GraphDef, so compare their text at that precision.
    if (a.type == AttrType::kFloat) {
      EXPECT_FLOAT_EQ(std::get<double>(back_it->second), std::get<double>(it->second));
    } else if (a.type != AttrType::kFloatList && a.type != AttrType::kTensor) {
      EXPECT_TRUE(AttrValueEquals(back_it->second, it->second))
          << op.name << " attribute " << a.name << ": " << AttrValueToString(it->second) << " vs "
          << AttrValueToString(back_it->second);
    }
  }
  EXPECT_EQ(SerializeGraphDef(ToGraphDef(loaded)), SerializeGraphDef(def)) << op.name;
}

bool AllFloat64(const Sample& s) {
  if (s.inputs.empty()) return false;
  for (const Tensor& t : s.inputs)
    if (t.dtype() != kFloat64) return false;
  return true;
}

void CheckGradient(const OpDef& op, const Sample& sample) {
  Graph probe;
  std::string error;
  Node* node = TryBuild(probe, op, sample, &error);
  if (node == nullptr || node->num_outputs() == 0 || node->output_dtype(0) != kFloat64) return;
  const double err = MaxGradientError(
      [&](const Scope& s, const std::vector<Output>& xs) {
        return s.AddNode(op, xs, sample.attrs, op.name)->output(0);
      },
      sample.inputs);
  EXPECT_LT(err, 1e-5) << op.name << ": symbolic and numeric gradients differ";
}

TEST(OpSweepTest, EveryRegisteredOpIsSweptOrListedWithAReason) {
  const std::map<std::string, Sample> samples = Samples();
  std::vector<std::string> unsampled, swept;
  for (const std::string& name : AllOps().Names()) {
    const OpDef& op = AllOps().Get(name);
    if (NotSwept().count(name)) continue;
    if (IsApplyOp(name)) continue;  // optimizer updates: ref inputs (optimizer_test covers)
    std::optional<Sample> sample;
    if (auto it = samples.find(name); it != samples.end()) {
      sample = it->second;
    } else {
      sample = GenericSample(op);
    }
    if (!sample) {
      if (!IsGradHelper(name)) unsampled.push_back(name);
      continue;
    }
    SCOPED_TRACE(name);
    swept.push_back(name);
    CheckShapesAgainstKernel(op, *sample);
    CheckGraphDefRoundTrip(op, *sample);
    if (op.grad && !op.stateful && sample->check_gradient && AllFloat64(*sample)) {
      CheckGradient(op, *sample);
    }
  }
  EXPECT_TRUE(unsampled.empty()) << "ops with neither a sample nor a reason: "
                                 << StrJoin(unsampled, ", ");
  EXPECT_GT(swept.size(), 80u);
}

TEST(OpSweepTest, ListedOpsExist) {
  for (const auto& [name, sample] : Samples()) {
    EXPECT_NE(AllOps().Find(name), nullptr) << name << " has a sample but is not registered";
  }
  for (const auto& [name, reason] : NotSwept()) {
    EXPECT_NE(AllOps().Find(name), nullptr) << name << " is listed but is not registered";
  }
}

// A record whose kernel disagrees with its shape rule: [2] inferred, [3] produced.
const OpDef& LyingOp() {
  static const OpDef op = {
      .name = "Lying",
      .num_inputs = 0,
      .shape = [](InferenceContext& c) { c.set_output(0, kFloat32, Shape{2}); },
      .kernel = [](KernelContext& c) { c.AllocateOutput(0, Shape{3}); },
      .no_gradient = "test op",
  };
  return op;
}

TEST(OpSweepTest, DebugSessionsCheckKernelShapesAgainstTheShapeRule) {
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  Graph graph;
  Scope root(graph);
  Output y = root.AddNode(LyingOp(), {}, {}, "liar")->output(0);
  Session session(graph);
  try {
    session.Eval(y);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(e.message().find("Lying 'liar' produced shape [3] for output 0, but its shape rule "
                               "inferred [2]"),
              std::string::npos)
        << e.message();
  }
#else
  GTEST_SKIP() << "release builds do not check kernel shapes (the sweep does, once per op)";
#endif
}

// ---------------------------------------------------------------------------------------
// The registration lists against the sources.

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The bodies of the Register*Ops(OpRegistry&) functions defined in `text`.
std::map<std::string, std::string> RegisterBodies(const std::string& text) {
  std::map<std::string, std::string> bodies;
  static const std::regex def(R"(void\s+(?:\w+::)*(Register\w*Ops)\(OpRegistry&\s*\w*\)\s*\{)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), def); it != std::sregex_iterator();
       ++it) {
    const size_t begin = it->position() + it->length();
    const size_t end = text.find("\n}", begin);
    bodies[(*it)[1]] = text.substr(begin, end - begin);
  }
  return bodies;
}

TEST(OpSweepTest, EveryRecordIsRegisteredAndEveryRegisterFunctionIsReached) {
  const std::filesystem::path root = std::filesystem::path(LOOM_SOURCE_DIR) / "loom";
  // Register functions of layers below the estimator, reached by their own registries.
  const std::set<std::string> not_in_all_ops = {"RegisterDistributeOps"};
  std::map<std::string, std::string> bodies;
  std::vector<std::string> problems;
  std::vector<std::pair<std::string, std::string>> records, record_sets;  // (file, function)
  static const std::regex record(R"(const OpDef& (\w+)\(\)\s*\{)");
  static const std::regex record_set(R"(const \w+Ops& (\w+Ops)\(\)\s*\{)");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string path = entry.path().string();
    // Test files and test-only records (train/test_ops.cc) are not in AllOps().
    if (entry.path().extension() != ".cc" || path.ends_with("_test.cc") ||
        entry.path().filename().string().starts_with("test_")) {
      continue;
    }
    const std::string text = ReadFile(entry.path());
    for (const auto& [name, body] : RegisterBodies(text)) bodies[name] = body;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), record);
         it != std::sregex_iterator(); ++it) {
      records.emplace_back(path, (*it)[1]);
    }
    for (auto it = std::sregex_iterator(text.begin(), text.end(), record_set);
         it != std::sregex_iterator(); ++it) {
      record_sets.emplace_back(path, (*it)[1]);
    }
  }
  std::string registered;
  for (const auto& [name, body] : bodies) registered += body;
  for (const auto& [path, fn] : records) {
    if (!std::regex_search(registered, std::regex("\\b" + fn + "\\(\\)"))) {
      problems.push_back(StrCat(path, ": record ", fn, "() is in no Register*Ops list"));
    }
  }
  for (const auto& [path, fn] : record_sets) {
    if (registered.find(fn + "().dense") == std::string::npos ||
        registered.find(fn + "().sparse") == std::string::npos) {
      problems.push_back(StrCat(path, ": record pair ", fn, "() is not registered"));
    }
  }
  // Reachability from AllOps().
  const std::string all_ops = ReadFile(root / "estimator" / "all_ops.cc");
  std::set<std::string> reached;
  std::vector<std::string> todo;
  auto visit = [&](const std::string& text) {
    static const std::regex call(R"((Register\w*Ops)\()");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), call);
         it != std::sregex_iterator(); ++it) {
      if (reached.insert((*it)[1]).second) todo.push_back((*it)[1]);
    }
  };
  visit(all_ops);
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (auto it = bodies.find(name); it != bodies.end()) visit(it->second);
  }
  for (const auto& [name, body] : bodies) {
    if (!reached.count(name) && !not_in_all_ops.count(name)) {
      problems.push_back(StrCat(name, " is not called from AllOps() (estimator/all_ops.cc)"));
    }
  }
  EXPECT_TRUE(problems.empty()) << StrJoin(problems, "\n");
  EXPECT_GT(bodies.size(), 15u);
}

}  // namespace
}  // namespace loom
