// One sweep over every registered op record (AllOps()): sample inputs from the record's
// signature, then check that
//   - the shape rule's output dtypes and shapes equal what the kernel produces, and the
//     dtypes equal what the record's output dtype rules say,
//   - a differentiable op passes the float64 numeric gradient check,
//   - the node round-trips through GraphDef (same op, attributes and inferred outputs).
// An op with at most three inputs and attributes that all have defaults is sampled from
// its record alone (float64 [2,3] inputs in [0.5, 1.5)); any other op brings its sample
// in its record (OpDef::sample) or says in OpDef::not_swept why the sweep cannot run it.
// A new op that does neither fails the sweep, which names it.
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

using Sample = OpSample;

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
  for (int i = 0; i < op.num_inputs; ++i) s.inputs.push_back(SampleDoubles({2, 3}, i + 1));
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
    const DTypeRule* rule = OutputDTypeRule(op, i);
    ASSERT_NE(rule, nullptr) << op.name << " output " << i << " has no dtype rule";
    if (rule->kind() != DTypeRule::Kind::kByShapeRule) {
      EXPECT_EQ(values[i].dtype(), rule->Resolve(*node, i))
          << op.name << " output " << i << ": the kernel's dtype against the rule "
          << rule->ToString();
    }
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

// The sample the sweep runs `op` on: the record's own, else the generic one; nullopt when
// the record gives neither a sample nor a not_swept reason and the generic one does not
// build.
std::optional<Sample> SampleOf(const OpDef& op) {
  if (op.sample) return op.sample();
  return GenericSample(op);
}

// The ops of `registry` the sweep cannot cover: no sample, no reason.
std::vector<std::string> OpsWithoutSample(const OpRegistry& registry) {
  std::vector<std::string> missing;
  for (const std::string& name : registry.Names()) {
    const OpDef& op = registry.Get(name);
    if (op.not_swept.empty() && !SampleOf(op)) missing.push_back(name);
  }
  return missing;
}

TEST(OpSweepTest, EveryRegisteredOpIsSweptOrSaysWhyNot) {
  std::vector<std::string> swept;
  for (const std::string& name : AllOps().Names()) {
    const OpDef& op = AllOps().Get(name);
    if (!op.not_swept.empty()) continue;
    std::optional<Sample> sample = SampleOf(op);
    if (!sample) continue;  // reported by OpsWithoutSample below
    SCOPED_TRACE(name);
    swept.push_back(name);
    CheckShapesAgainstKernel(op, *sample);
    CheckGraphDefRoundTrip(op, *sample);
    if (op.grad && !op.stateful && sample->check_gradient && AllFloat64(*sample)) {
      CheckGradient(op, *sample);
    }
  }
  const std::vector<std::string> missing = OpsWithoutSample(AllOps());
  EXPECT_TRUE(missing.empty())
      << "ops with neither a sample (OpDef::sample) nor a not_swept reason: "
      << StrJoin(missing, ", ");
  EXPECT_GT(swept.size(), 100u);
}

// A record the generic sample cannot build (a required attribute) and that brings no
// sample of its own: the sweep names it.
TEST(OpSweepTest, AnOpWithoutASampleIsNamed) {
  static const Attr<int64_t> kWidth{"width"};
  static const OpDef unsampled = {
      .name = "UnsampledForTest",
      .num_inputs = 1,
      .attrs = {kWidth.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output_shape(0, c.input_shape(0)); },
      .kernel = [](KernelContext& c) { c.set_output(0, c.input(0)); },
      .no_gradient = "test op",
  };
  OpDef sampled = unsampled;
  sampled.name = "SampledForTest";
  sampled.sample = [] { return OpSample{{SampleDoubles({2})}, {kWidth(2)}}; };
  OpDef excused = unsampled;
  excused.name = "ExcusedForTest";
  excused.not_swept = "a test op";
  OpRegistry registry;
  registry.Register(unsampled);
  registry.Register(sampled);
  registry.Register(excused);
  EXPECT_EQ(OpsWithoutSample(registry), std::vector<std::string>{"UnsampledForTest"});
}

// A record whose kernel disagrees with its shape rule: [2] inferred, [3] produced.
[[maybe_unused]] const OpDef& LyingOp() {  // used only where the check is compiled in
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
