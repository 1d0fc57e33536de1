#include "loom/estimator/tf_saved_model.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>

#include "loom/estimator/all_ops.h"
#include "loom/estimator/saved_model.h"
#include "loom/estimator/tf_graph_translator.h"
#include "loom/estimator/tf_ops.h"
#include "loom/graph/graph.h"
#include "loom/graph/graph_def_proto.h"
#include "loom/graph/op_def.h"
#include "loom/graph/scope.h"
#include "loom/io/proto/saved_model.pb.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

using tf_import::CanonicalTensorName;
using tf_import::DTypeFromTf;
using tf_import::ParseTensorName;
using tf_import::ShapeFromTf;

// `ops`: unsupported op -> count; `loop_nodes`: the TF1 while-loop nodes among them, as
// "name (op)", in graph order.
std::string DescribeUnsupported(const std::map<std::string, int>& ops,
                                const std::vector<std::string>& loop_nodes,
                                const std::string& where = "") {
  std::vector<std::string> parts;
  parts.reserve(ops.size());
  for (const auto& [op, count] : ops) parts.push_back(StrCat(op, " x", count));
  std::string loops;
  if (!loop_nodes.empty()) {
    std::vector<std::string> shown(loop_nodes.begin(),
                                   loop_nodes.begin() + std::min<size_t>(loop_nodes.size(), 4));
    if (loop_nodes.size() > shown.size()) {
      shown.push_back(StrCat("and ", loop_nodes.size() - shown.size(), " more"));
    }
    loops = StrCat(
        loop_nodes.size() == 1 ? "; TF node " : "; TF nodes ", StrJoin(shown, ", "),
        where.empty() ? "" : " of ", where, loop_nodes.size() == 1 ? " belongs" : " belong",
        " to a TF1 while loop (Enter/Exit/NextIteration/LoopCond frames), which Loom "
        "cannot import: its loops are a functional While op (docs/engine.md, \"While loops\"). "
        "Freeze a graph whose outputs do not need the loop (unroll it to a fixed number of "
        "steps in Python), or rebuild the loop with loom::WhileLoop or tf.while_loop in Loom");
  }
  return StrCat("unsupported TF ops: ", StrJoin(parts, ", "), loops);
}

}  // namespace

struct TfModel::Compiled {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Session> session;
  std::map<std::string, Output> inputs;
  std::map<std::string, Output> outputs;
};

// Builds each signature's graph and session.
class TfModelBuilder {
 public:
  // variables_missing: why `variables` is null, for the error of a signature that reads a
  // variable (e.g. "'DIR/variables/' does not exist").
  static void Build(TfModel& model, const proto::GraphDef& def, const TfCheckpointReader* variables,
                    const std::string& source, const std::string& variables_missing) {
    // Unsupported nodes of every signature, by node name (a node two signatures share is
    // counted once in the load error).
    std::map<std::string, std::string> all_unsupported;
    std::vector<std::string> all_loop_nodes;
    for (auto& [key, sig] : model.signatures_) {
      const std::string where = StrCat(source, " signature '", key, "'");
      auto compiled = std::make_unique<TfModel::Compiled>();
      compiled->graph = std::make_unique<Graph>();
      tf_import::GraphTranslator t(def, variables, *compiled->graph, where);
      Scope root(*compiled->graph);
      for (const auto& [name, info] : sig.inputs) {
        Output p = Placeholder(root.WithOpName("_tf_input/" + name), info.dtype, info.shape);
        t.Cut(info.name, p);
        compiled->inputs[name] = p;
      }
      std::vector<std::string> outputs;
      for (const auto& [name, info] : sig.outputs) outputs.push_back(info.name);
      const std::vector<const proto::NodeDef*> needed = t.Needed(outputs);
      std::map<std::string, int> unsupported;
      std::vector<std::string> loop_nodes;
      for (const proto::NodeDef* n : needed) {
        if (tf_import::IsSupportedTfOp(n->op())) continue;
        ++unsupported[n->op()];
        if (tf_import::IsTf1LoopOp(n->op())) {
          loop_nodes.push_back(StrCat("'", n->name(), "' (", n->op(), ")"));
          if (!all_unsupported.count(n->name())) all_loop_nodes.push_back(loop_nodes.back());
        }
        all_unsupported[n->name()] = n->op();
      }
      FindExampleInput(t, needed, sig);
      if (variables == nullptr) CheckNoVariableIsRead(needed, where, variables_missing);
      if (!unsupported.empty()) {
        model.unavailable_[key] = DescribeUnsupported(unsupported, loop_nodes, where);
        continue;
      }
      for (const auto& [name, info] : sig.outputs) {
        compiled->outputs[name] =
            Identity(root.WithOpName("_tf_output/" + name), t.Tensor(info.name));
      }
      compiled->graph->Finalize();
      compiled->session = std::make_unique<Session>(*compiled->graph);
      model.compiled_[key] = std::move(compiled);
    }
    if (model.compiled_.empty()) {
      std::map<std::string, int> counts;
      for (const auto& [node, op] : all_unsupported) ++counts[op];
      throw Unimplemented(source, ": no signature can run in Loom (",
                          DescribeUnsupported(counts, all_loop_nodes),
                          "); supported ops: ", StrJoin(TfModel::SupportedOps(), ", "));
    }
  }

 private:
  // Without a checkpoint, a signature that reads a variable cannot run: one error naming the
  // variable and the missing files, before any node is translated.
  static void CheckNoVariableIsRead(const std::vector<const proto::NodeDef*>& needed,
                                    const std::string& where, const std::string& why) {
    std::vector<std::string> reads;
    for (const proto::NodeDef* n : needed) {
      if (n->op() == "VariableV2" || n->op() == "VarHandleOp") reads.push_back(n->name());
    }
    if (reads.empty()) return;
    throw NotFound(where, ": it reads TF variable '", reads.front(), "'",
                   reads.size() > 1 ? StrCat(" and ", reads.size() - 1, " more") : std::string(),
                   ", but ", why);
  }

  // Sets sig.example_input / example_features when one ParseExample node reads a string
  // input of the signature.
  static void FindExampleInput(const tf_import::GraphTranslator& t,
                               const std::vector<const proto::NodeDef*>& needed, TfSignature& sig) {
    for (const proto::NodeDef* n : needed) {
      if (n->op() != "ParseExample" || n->input_size() == 0) continue;
      const std::string source = t.Resolve(n->input(0));
      for (const auto& [name, info] : sig.inputs) {
        if (info.dtype != kString || CanonicalTensorName(info.name) != source) continue;
        if (auto features = t.ExampleFeatures(*n)) {
          sig.example_input = name;
          sig.example_features = std::move(*features);
          return;
        }
      }
    }
  }
};

TfModel::TfModel() = default;
TfModel::~TfModel() = default;

namespace {

// dir/saved_model.pb, and in it the MetaGraphDef whose tag set equals `tags`.
const proto::MetaGraphDef& ReadMetaGraph(Env* env, const std::string& dir,
                                         const std::set<std::string>& tags,
                                         proto::SavedModel& saved) {
  const std::string pb = JoinPath(dir, "saved_model.pb");
  if (!env->FileExists(pb) && env->FileExists(JoinPath(dir, kSavedModelJson))) {
    throw InvalidArgument("'", dir, "' is a Loom SavedModel (", kSavedModelJson,
                          ", from loom export), not a TensorFlow one (saved_model.pb): predict "
                          "with the job that exported it (loom predict JOB.toml), or load it "
                          "with SavedModelPredictor (loom/estimator/saved_model.h)");
  }
  if (!env->FileExists(pb)) {
    throw NotFound("TF SavedModel '", dir,
                   "': no saved_model.pb (a SavedModel directory holds "
                   "saved_model.pb and variables/)");
  }
  if (!saved.ParseFromString(ReadFileToString(env, pb))) {
    throw DataLoss("TF SavedModel '", pb, "' does not parse as a SavedModel protobuf");
  }
  std::vector<std::string> available;
  for (const proto::MetaGraphDef& m : saved.meta_graphs()) {
    std::set<std::string> these(m.meta_info_def().tags().begin(), m.meta_info_def().tags().end());
    if (these == tags) return m;
    available.push_back(StrCat("{", StrJoin(these, ","), "}"));
  }
  if (available.empty()) {
    // An empty file parses as an empty SavedModel.
    throw DataLoss("TF SavedModel '", pb, "' holds no MetaGraphDef at all (", env->GetFileSize(pb),
                   " bytes): it is empty or not a SavedModel; copy it again");
  }
  throw NotFound("TF SavedModel '", dir, "' has no MetaGraphDef with tags {", StrJoin(tags, ","),
                 "}; it has ", StrJoin(available, " "));
}

// The SignatureDefs. strict: an input dtype Loom lacks is an error; else it is kInvalid.
std::map<std::string, TfSignature> SignaturesOf(const proto::MetaGraphDef& meta,
                                                const std::string& dir, bool strict) {
  std::map<std::string, TfSignature> out;
  for (const auto& [key, s] : meta.signature_def()) {
    TfSignature sig{.method_name = s.method_name()};
    const std::string where = StrCat(JoinPath(dir, "saved_model.pb"), " signature '", key, "'");
    auto info = [&](const proto::TensorInfo& i, bool required) {
      TfTensorInfo t{i.name()};
      t.shape = i.has_tensor_shape() ? ShapeFromTf(i.tensor_shape()) : Shape::Unknown();
      // An output's dtype is informational (the graph computes it); unset is allowed.
      if (required || (i.dtype() != 0 && IsValidDType(i.dtype() % 100))) {
        t.dtype = DTypeFromTf(i.dtype(), where);
      }
      return t;
    };
    for (const auto& [name, i] : s.inputs()) sig.inputs[name] = info(i, strict);
    for (const auto& [name, i] : s.outputs()) sig.outputs[name] = info(i, false);
    out[key] = std::move(sig);
  }
  return out;
}

}  // namespace

std::map<std::string, TfSignature> ReadTfSavedModelSignatures(Env* env, const std::string& dir,
                                                              const std::set<std::string>& tags) {
  proto::SavedModel saved;
  return SignaturesOf(ReadMetaGraph(env, dir, tags, saved), dir, /*strict=*/false);
}

std::unique_ptr<TfModel> TfModel::LoadSavedModel(Env* env, const std::string& dir,
                                                 const std::set<std::string>& tags) {
  proto::SavedModel saved;
  const proto::MetaGraphDef& meta = ReadMetaGraph(env, dir, tags, saved);
  std::unique_ptr<TfModel> model(new TfModel());
  model->tags_.assign(tags.begin(), tags.end());
  model->signatures_ = SignaturesOf(meta, dir, /*strict=*/true);
  if (model->signatures_.empty()) {
    throw InvalidArgument("TF SavedModel '", dir, "' has no signatures to run");
  }
  std::unique_ptr<TfCheckpointReader> variables;
  const std::string prefix = JoinPath(dir, "variables/variables");
  std::string variables_missing;
  if (IsTfCheckpoint(env, prefix)) {
    variables = TfCheckpointReader::Open(env, prefix);
  } else {
    const std::string vars_dir = JoinPath(dir, "variables");
    std::string what;
    if (!env->IsDirectory(vars_dir)) {
      what = StrCat("'", vars_dir, "/' does not exist");
    } else {
      std::vector<std::string> children = env->GetChildren(vars_dir);
      what = StrCat("'", TfCheckpointIndexPath(prefix), "' does not exist (",
                    children.empty() ? std::string("variables/ is empty")
                                     : StrCat("variables/ holds ", StrJoin(children, ", ")),
                    ")");
    }
    variables_missing = StrCat(
        "a SavedModel keeps their values in variables/variables.index and variables.data-*, and ",
        what, "; copy the whole SavedModel directory (saved_model.pb and variables/)");
  }
  TfModelBuilder::Build(*model, meta.graph_def(), variables.get(),
                        StrCat("TF SavedModel '", dir, "'"), variables_missing);
  return model;
}

std::unique_ptr<TfModel> TfModel::LoadFrozenGraph(
    Env* env, const std::string& path, const std::map<std::string, std::string>& inputs,
    const std::map<std::string, std::string>& outputs) {
  if (!env->FileExists(path)) throw NotFound("TF GraphDef '", path, "' does not exist");
  proto::GraphDef def;
  if (!def.ParseFromString(ReadFileToString(env, path))) {
    throw DataLoss("TF GraphDef '", path, "' does not parse as a GraphDef protobuf");
  }
  if (outputs.empty()) throw InvalidArgument("TF GraphDef '", path, "': no outputs named");
  std::map<std::string, const proto::NodeDef*> by_name;
  for (const proto::NodeDef& n : def.node()) by_name[n.name()] = &n;
  std::unique_ptr<TfModel> model(new TfModel());
  TfSignature sig{.method_name = "tensorflow/serving/predict"};
  std::map<std::string, std::string> fed = inputs;
  if (fed.empty()) {
    // Every Placeholder the outputs need, keyed by its name.
    std::set<std::string> seen;
    std::vector<std::string> stack;
    stack.reserve(outputs.size());
    for (const auto& [key, tensor] : outputs) stack.push_back(ParseTensorName(tensor).first);
    while (!stack.empty()) {
      const std::string name = stack.back();
      stack.pop_back();
      auto it = by_name.find(name);
      if (it == by_name.end() || !seen.insert(name).second) continue;
      if (it->second->op() == "Placeholder") fed[name] = name + ":0";
      for (const std::string& input : it->second->input()) {
        stack.push_back(ParseTensorName(input.starts_with("^") ? input.substr(1) : input).first);
      }
    }
  }
  for (const auto& [key, tensor] : fed) {
    // A PlaceholderWithDefault (keras_learning_phase) may be fed too, when named.
    auto it = by_name.find(ParseTensorName(tensor).first);
    if (it == by_name.end() ||
        (it->second->op() != "Placeholder" && it->second->op() != "PlaceholderWithDefault")) {
      throw InvalidArgument("TF GraphDef '", path, "': input '", key, "' names '", tensor,
                            "', which is not a Placeholder or PlaceholderWithDefault of the "
                            "graph");
    }
    const proto::NodeDef& p = *it->second;
    if (!p.attr().count("dtype")) {
      throw InvalidArgument("TF GraphDef '", path, "': placeholder '", p.name(),
                            "' has no 'dtype' attribute; the GraphDef is damaged");
    }
    sig.inputs[key] = {
        tensor, DTypeFromTf(p.attr().at("dtype").type(), p.name()),
        p.attr().count("shape") ? ShapeFromTf(p.attr().at("shape").shape()) : Shape::Unknown()};
  }
  for (const auto& [key, tensor] : outputs)
    sig.outputs[key] = {tensor, DType::kInvalid, Shape::Unknown()};
  model->signatures_["serving_default"] = std::move(sig);
  TfModelBuilder::Build(*model, def, nullptr, StrCat("TF GraphDef '", path, "'"),
                        "a GraphDef has no checkpoint: freeze the variables into constants "
                        "(TF's freeze_graph) or run the SavedModel instead");
  return model;
}

std::map<std::string, Tensor> TfModel::Run(const std::string& signature,
                                           const std::map<std::string, Tensor>& inputs) {
  if (!signatures_.count(signature)) {
    std::vector<std::string> names;
    for (const auto& [k, v] : signatures_) names.push_back(k);
    throw NotFound("TF model has no signature '", signature, "'; it has ", StrJoin(names, ", "));
  }
  if (auto it = unavailable_.find(signature); it != unavailable_.end()) {
    throw Unimplemented("TF model signature '", signature, "' cannot run in Loom: ", it->second);
  }
  Compiled& c = *compiled_.at(signature);
  std::vector<std::string> input_names;
  for (const auto& [name, placeholder] : c.inputs) input_names.push_back(name);
  // A misspelt input first: it is also why the right one is missing.
  for (const auto& [name, value] : inputs) {
    if (!c.inputs.count(name)) {
      throw InvalidArgument("TF model signature '", signature, "' has no input '", name,
                            "'; its inputs are ", StrJoin(input_names, ", "));
    }
  }
  FeedList feeds;
  for (const auto& [name, placeholder] : c.inputs) {
    const TfTensorInfo& info = signatures_.at(signature).inputs.at(name);
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      throw InvalidArgument("TF model signature '", signature, "' needs input '", name, "' (",
                            info.name, ")");
    }
    if (it->second.dtype() != placeholder.dtype()) {
      throw InvalidArgument("TF model signature '", signature, "': input '", name, "' must be ",
                            DTypeName(placeholder.dtype()), ", is ", DTypeName(it->second.dtype()));
    }
    if (!placeholder.shape().IsCompatibleWith(it->second.shape())) {
      throw InvalidArgument("TF model signature '", signature, "': input '", name, "' (", info.name,
                            ") is ", DTypeName(placeholder.dtype()), placeholder.shape().ToString(),
                            ", given a tensor of shape ", it->second.shape().ToString(),
                            "; reshape it to match");
    }
    feeds.emplace_back(placeholder, it->second);
  }
  std::vector<Output> fetches;
  for (const auto& [name, output] : c.outputs) fetches.push_back(output);
  std::vector<Tensor> values;
  try {
    values = c.session->Run(feeds, fetches);
  } catch (const Error& e) {
    throw WithContext(e, "TF model signature '", signature, "' (output KEY is fetched as ",
                      "_tf_output/KEY)");
  }
  std::map<std::string, Tensor> out;
  size_t i = 0;
  for (const auto& [name, output] : c.outputs) out[name] = values[i++];
  return out;
}

std::vector<std::string> TfModel::SupportedOps() { return tf_import::SupportedTfOps(); }

}  // namespace loom
