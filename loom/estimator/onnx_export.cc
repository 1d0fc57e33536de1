// ONNX export (onnx_export.h): prune the graph to a signature, check every op maps,
// convert node by node with the op table (onnx_ops*.cc), then write the model and its
// external data.
#include <algorithm>
#include <climits>
#include <cstring>
#include <set>

#include "loom/base/logging.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/estimator/onnx_builder.h"
#include "loom/estimator/onnx_export_proto.h"
#include "loom/io/safetensors.h"

namespace loom {
namespace {

using onnx_export::OnnxBuilder;
using onnx_export::OnnxDType;

constexpr int64_t kIrVersion = 8;         // ONNX 1.10 to 1.12 and every later runtime read it
constexpr int64_t kMlOpset = 2;           // LabelEncoder with int64 keys and values
constexpr int64_t kExternalAlign = 4096;  // page-aligned, so runtimes can map the data

void SetType(onnx::ValueInfoProto* info, const std::string& key, DType dtype, const Shape& shape) {
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(OnnxDType(dtype));
  if (!shape.rank_known()) return;
  onnx::TensorShapeProto* s = t->mutable_shape();
  for (int i = 0; i < shape.rank(); ++i) {
    onnx::TensorShapeProto::Dimension* d = s->add_dim();
    if (shape.dim(i) >= 0) {
      d->set_dim_value(shape.dim(i));
    } else {
      d->set_dim_param(i == 0 ? "batch" : key + "_dim" + std::to_string(i));
    }
  }
}

struct Unsupported {
  int count = 0;
  std::string node;    // the first one
  std::string reason;  // of the first one
};

// "column 'tag', " when `node` is in a feature column's transformation scope
// (feature_column_categorical.cc: "<key>_hash", "<key>_lookup", "<key>_identity",
// "<name>_cross"), else "".
std::string ColumnOf(const std::string& node) {
  const size_t last = node.rfind('/');
  if (last == std::string::npos) return "";
  const size_t first = node.rfind('/', last - 1);
  const std::string scope = node.substr(first == std::string::npos ? 0 : first + 1,
                                        last - (first == std::string::npos ? 0 : first + 1));
  for (const char* suffix : {"_hash", "_lookup", "_identity", "_cross"}) {
    if (scope.ends_with(suffix) && scope.size() > std::strlen(suffix))
      return "column '" + scope.substr(0, scope.size() - std::strlen(suffix)) + "', ";
  }
  return "";
}

// The nodes `outputs` depend on, stopping at the signature's inputs.
std::vector<const Node*> Needed(const Graph& graph, const std::vector<Output>& outputs,
                                const std::map<std::string, std::string>& input_keys) {
  std::vector<bool> needed(graph.num_nodes(), false);
  std::vector<const Node*> stack;
  auto visit = [&](const Output& o) {
    if (!needed[o.node->id()]) {
      needed[o.node->id()] = true;
      if (!input_keys.count(o.name())) stack.push_back(o.node);
    }
  };
  for (const Output& o : outputs) visit(o);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Output& in : n->inputs()) visit(in);  // control inputs do not carry values
  }
  std::vector<const Node*> order;  // node ids are a topological order
  for (int id = 0; id < graph.num_nodes(); ++id)
    if (needed[id]) order.push_back(graph.node(id));
  return order;
}

}  // namespace

onnx::ModelProto ToOnnxModel(const Graph& graph, const std::map<std::string, Tensor>& variables,
                             const std::string& signature_name, const SignatureDef& signature,
                             const OnnxExportOptions& options) {
  const std::string what = "ExportOnnx: signature '" + signature_name + "'";
  if (options.opset < 13 || options.opset > 17) {
    throw InvalidArgument(what, ": opset ", options.opset, " is not supported; use 13 to 17");
  }
  if (signature.outputs.empty()) throw InvalidArgument(what, " has no outputs");
  std::map<std::string, std::string> input_keys;  // Loom tensor name -> key
  for (const auto& [key, info] : signature.inputs)
    input_keys[graph.GetOutput(info.name).name()] = key;
  std::vector<Output> outputs;
  for (const auto& [key, info] : signature.outputs) outputs.push_back(graph.GetOutput(info.name));
  const std::vector<const Node*> nodes = Needed(graph, outputs, input_keys);

  // Every op must map before anything is converted: one error lists all that do not.
  const auto& rules = onnx_export::OpRules();
  std::map<std::string, Unsupported> unsupported;
  auto reject = [&](const Node* n, const std::string& reason) {
    Unsupported& u = unsupported[n->op()];
    if (u.count++ == 0) {
      u.node = n->name();
      u.reason = reason;
    }
  };
  for (const Node* n : nodes) {
    if (input_keys.count(Output(const_cast<Node*>(n), 0).name())) continue;
    if (n->op() == "VariableV2") continue;
    if (n->op() == "Placeholder") {
      reject(n, "the outputs need this placeholder, which is not an input of the signature");
      continue;
    }
    auto rule = rules.find(n->op());
    if (rule == rules.end()) {
      const std::string why = onnx_export::WhyNotMapped(n->op());
      reject(n, why.empty() ? "no ONNX mapping for this op" : why);
    } else if (rule->second.unsupported) {
      if (std::string why = rule->second.unsupported(*n); !why.empty()) reject(n, why);
    }
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& [op, u] : unsupported) {
      list += "\n  " + op + " x" + std::to_string(u.count) + " (" + ColumnOf(u.node) + "node '" +
              u.node + "'" + (u.count > 1 ? " and others" : "") + "): " + u.reason;
    }
    throw Unimplemented(what, ": ", unsupported.size(), " op", unsupported.size() == 1 ? "" : "s",
                        " of the PREDICT graph cannot be exported to ONNX:", list);
  }

  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("loom");
  model.set_doc_string("signature '" + signature_name + "' (" + signature.method_name +
                       ") of a Loom model");
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name(signature_name);
  OnnxBuilder b(g);

  std::set<const Node*> used_inputs;
  for (const Node* n : nodes) used_inputs.insert(n);
  for (const auto& [key, info] : signature.inputs) {
    Output in = graph.GetOutput(info.name);
    if (!used_inputs.count(in.node)) continue;  // an input no output depends on
    onnx::ValueInfoProto* v = g->add_input();
    v->set_name(key);
    SetType(v, key, in.dtype(), in.shape());
    b.Bind(in, key);
  }
  for (const Node* n : nodes) {
    Output out0(const_cast<Node*>(n), 0);
    if (b.Bound(out0)) continue;
    if (n->op() == "VariableV2") {
      auto it = variables.find(n->name());
      if (it == variables.end()) {
        throw FailedPrecondition(what, ": variable '", n->name(),
                                 "' has no value (neither restored nor initialized)");
      }
      b.Bind(out0, b.Initializer(n->name(), it->second));
      continue;
    }
    rules.at(n->op()).convert(b, *n);
  }
  for (const auto& [key, info] : signature.outputs) {
    Output out = graph.GetOutput(info.name);
    b.AddNode("Identity", {b.Value(out)}, {key});
    onnx::ValueInfoProto* v = g->add_output();
    v->set_name(key);
    SetType(v, key, out.dtype(), out.shape());
  }

  // Value names must be unique (keys are free-form): check, so a clash is our message
  // rather than a runtime's.
  std::set<std::string> names;
  auto define = [&](const std::string& name) {
    if (!names.insert(name).second) {
      throw InvalidArgument(what, ": the ONNX value name '", name, "' is defined twice (a ",
                            "signature key equal to a variable or tensor name); rename the key");
    }
  };
  for (const auto& v : g->input()) define(v.name());
  for (const auto& t : g->initializer()) define(t.name());
  for (const auto& n : g->node())
    for (const auto& o : n.output()) define(o);

  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  if (b.uses_ml_domain()) {
    onnx::OperatorSetIdProto* ml = model.add_opset_import();
    ml->set_domain("ai.onnx.ml");
    ml->set_version(kMlOpset);
  }
  onnx::StringStringEntryProto* meta = model.add_metadata_props();
  meta->set_key("signature");
  meta->set_value(signature_name);
  return model;
}

OnnxExportResult WriteOnnxModel(Env* env, const std::string& path, onnx::ModelProto model,
                                const OnnxExportOptions& options) {
  if (env == nullptr) env = Env::Default();
  OnnxExportResult result{
      .path = path, .signature = model.graph().name(), .num_nodes = model.graph().node_size()};
  onnx::GraphProto* g = model.mutable_graph();
  int64_t inline_bytes = 0;
  std::vector<onnx::TensorProto*> movable;
  for (onnx::TensorProto& t : *g->mutable_initializer()) {
    inline_bytes += static_cast<int64_t>(t.raw_data().size());
    if (!t.raw_data().empty()) movable.push_back(&t);
  }
  // Largest first until the rest fits; then written in graph order.
  std::stable_sort(movable.begin(), movable.end(),
                   [](auto* a, auto* b) { return a->raw_data().size() > b->raw_data().size(); });
  std::set<const onnx::TensorProto*> external;
  for (onnx::TensorProto* t : movable) {
    if (inline_bytes <= options.max_inline_weight_bytes) break;
    external.insert(t);
    inline_bytes -= static_cast<int64_t>(t->raw_data().size());
  }
  if (!external.empty()) {
    const std::string data_path = path + ".data";
    const std::string location = Basename(data_path);
    const std::string temp = data_path + ".tmp";
    {
      auto file = env->NewWritableFile(temp);
      int64_t offset = 0;
      for (onnx::TensorProto& t : *g->mutable_initializer()) {
        if (!external.count(&t)) continue;
        const int64_t pad = (kExternalAlign - offset % kExternalAlign) % kExternalAlign;
        file->Append(std::string(pad, '\0'));
        offset += pad;
        const int64_t length = static_cast<int64_t>(t.raw_data().size());
        file->Append(t.raw_data());
        t.clear_raw_data();
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        for (const auto& [k, v] :
             std::vector<std::pair<std::string, std::string>>{{"location", location},
                                                              {"offset", std::to_string(offset)},
                                                              {"length", std::to_string(length)}}) {
          onnx::StringStringEntryProto* e = t.add_external_data();
          e->set_key(k);
          e->set_value(v);
        }
        offset += length;
      }
      file->Close();
    }
    env->RenameFile(temp, data_path);
    result.external_data_path = data_path;
    result.num_external_tensors = static_cast<int64_t>(external.size());
  }
  const size_t bytes = model.ByteSizeLong();
  if (bytes > static_cast<size_t>(INT_MAX)) {
    throw ResourceExhausted("ExportOnnx: '", path, "' would be ", bytes,
                            " bytes, past protobuf's 2 GB limit, even with ",
                            result.num_external_tensors,
                            " weights in external data; lower max_inline_weight_bytes");
  }
  std::string data;
  model.SerializeToString(&data);
  WriteFileAtomically(env, path, data);
  return result;
}

OnnxExportResult ExportOnnx(Env* env, const std::string& path, const Graph& graph,
                            const std::map<std::string, Tensor>& variables,
                            const std::map<std::string, SignatureDef>& signatures,
                            const OnnxExportOptions& options) {
  std::string name = options.signature;
  if (name.empty()) name = signatures.count("predict") ? "predict" : "serving_default";
  auto it = signatures.find(name);
  if (it == signatures.end()) {
    std::string known;
    for (const auto& [n, s] : signatures) known += (known.empty() ? "" : ", ") + n;
    throw NotFound("ExportOnnx: no signature '", name, "'; the model has {", known, "}");
  }
  OnnxExportResult result =
      WriteOnnxModel(env, path, ToOnnxModel(graph, variables, name, it->second, options), options);
  LOOM_LOG(INFO) << "ONNX model written to: " << path
                 << (result.external_data_path.empty()
                         ? ""
                         : " (weights in " + result.external_data_path + ")");
  return result;
}

OnnxExportResult ExportSavedModelToOnnx(const std::string& saved_model_dir, const std::string& path,
                                        const OnnxExportOptions& options, Env* env) {
  if (env == nullptr) env = Env::Default();
  auto predictor = SavedModelPredictor::Load(saved_model_dir, {}, env);
  auto reader = SafetensorsReader::Open(env, JoinPath(saved_model_dir, kSavedModelVariables));
  std::map<std::string, Tensor> variables;
  for (const std::string& name : reader->names()) variables[name] = reader->Get(name);
  return ExportOnnx(env, path, predictor->graph(), variables, predictor->signatures(), options);
}

OnnxExportResult ExportOnnx(Estimator& estimator, const ServingInputReceiverFn& serving_input_fn,
                            const std::string& path, const OnnxExportOptions& options,
                            const ExportOptions& export_options) {
  ServingModel model = EstimatorInternals::BuildServingModel(estimator, serving_input_fn,
                                                             export_options, "ExportOnnx");
  std::map<std::string, Tensor> variables;
  for (Node* var : model.graph->Variables()) {
    if (model.session->VariableInitialized(var->name()))
      variables[var->name()] = model.session->ReadVariable(var->name());
  }
  return ExportOnnx(estimator.config().env, path, *model.graph, variables, model.signatures,
                    options);
}

}  // namespace loom
