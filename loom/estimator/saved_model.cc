#include "loom/estimator/saved_model.h"

#include <charconv>
#include <nlohmann/json.hpp>

#include "loom/base/logging.h"
#include "loom/estimator/all_ops.h"
#include "loom/graph/graph_def.h"
#include "loom/io/safetensors.h"
#include "loom/ops/state.h"

namespace loom {
namespace {

using json = nlohmann::json;

json ShapeToJson(const Shape& shape) {
  if (!shape.rank_known()) return nullptr;
  return json(shape.dims());
}

Shape ShapeFromJson(const json& j) {
  if (j.is_null()) return Shape::Unknown();
  return Shape(j.get<std::vector<int64_t>>());
}

json TensorInfosToJson(const std::map<std::string, TensorInfo>& infos) {
  json out = json::object();
  for (const auto& [key, info] : infos) {
    out[key] = {{"name", info.name},
                {"dtype", std::string(DTypeName(info.dtype))},
                {"shape", ShapeToJson(info.shape)}};
  }
  return out;
}

std::map<std::string, TensorInfo> TensorInfosFromJson(const json& j) {
  std::map<std::string, TensorInfo> out;
  for (const auto& [key, info] : j.items()) {
    out[key] = {.name = info.at("name").get<std::string>(),
                .dtype = DTypeFromName(info.at("dtype").get<std::string>()),
                .shape = ShapeFromJson(info.at("shape"))};
  }
  return out;
}

}  // namespace

ServingInputReceiverFn RawServingInputReceiverFn(std::map<std::string, data::TensorSpec> features) {
  return [features = std::move(features)](Scope& scope) {
    ServingInputReceiver receiver;
    for (const auto& [key, spec] : features) {
      Shape shape = spec.shape.rank_known() ? spec.shape.WithLeadingDim(kUnknownDim) : spec.shape;
      Output input = Placeholder(scope.WithOpName(key), spec.dtype, shape);
      receiver.features[key] = input;
      receiver.receiver_tensors[key] = input;
    }
    return receiver;
  };
}

std::string NewExportDir(Env* env, const std::string& export_dir_base) {
  int64_t seconds = static_cast<int64_t>(env->NowMicros() / 1000000);
  // Past every export already there (and its temp-<ts>), so the newest export always has
  // the largest name: exporters prune by name, and TF Serving serves the largest version.
  // Several exports in one second take the seconds after it; starting again from the
  // clock once the older of them were pruned gave the new export a name below the kept
  // ones, and the next pruning deleted it (a LatestExporter kept stale models).
  if (env->IsDirectory(export_dir_base)) {
    for (const std::string& child : env->GetChildren(export_dir_base)) {
      const std::string_view digits =
          std::string_view(child).substr(child.rfind("temp-", 0) == 0 ? 5 : 0);
      int64_t taken = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), taken);
      if (ec == std::errc() && end == digits.data() + digits.size() && !digits.empty() &&
          taken >= seconds) {
        seconds = taken + 1;
      }
    }
  }
  for (;; ++seconds) {
    std::string dir = JoinPath(export_dir_base, std::to_string(seconds));
    const std::string temp = JoinPath(export_dir_base, "temp-" + std::to_string(seconds));
    if (!env->FileExists(dir) && !env->FileExists(temp)) return dir;
  }
}

namespace {

// Writes the SavedModel's files into `temp`, the directory WriteSavedModel renames into place.
void WriteSavedModelFiles(Env* env, const std::string& temp, const Graph& graph, Session& session,
                          const std::map<std::string, SignatureDef>& signatures,
                          const std::map<std::string, std::string>& info) {
  env->CreateDirs(JoinPath(temp, "variables"));

  ExportGraph(graph, env, JoinPath(temp, kSavedModelGraph));

  std::vector<std::pair<std::string, Tensor>> variables;
  for (Node* var : graph.Variables()) {
    if (!session.VariableInitialized(var->name())) {
      throw FailedPrecondition("ExportSavedModel: variable '", var->name(),
                               "' has no value (neither restored nor initialized)");
    }
    variables.emplace_back(var->name(), session.ReadVariable(var->name()));
  }
  WriteSafetensors(env, JoinPath(temp, kSavedModelVariables), variables,
                   {{"format", std::string(kSavedModelFormat)}});

  json doc = {{"format", std::string(kSavedModelFormat)}};
  for (const auto& [key, value] : info) doc[key] = value;
  json sigs = json::object();
  for (const auto& [name, sig] : signatures) {
    sigs[name] = {{"method_name", sig.method_name},
                  {"inputs", TensorInfosToJson(sig.inputs)},
                  {"outputs", TensorInfosToJson(sig.outputs)}};
  }
  doc["signatures"] = sigs;
  WriteFileAtomically(env, JoinPath(temp, kSavedModelJson), doc.dump(2) + "\n");
}

}  // namespace

void WriteSavedModel(Env* env, const std::string& export_dir, const Graph& graph, Session& session,
                     const std::map<std::string, SignatureDef>& signatures,
                     const std::map<std::string, std::string>& info) {
  if (env == nullptr) env = Env::Default();
  if (env->FileExists(export_dir)) {
    throw AlreadyExists("ExportSavedModel: export directory '", export_dir, "' already exists");
  }
  const std::string base = Dirname(export_dir);
  const std::string temp = JoinPath(base, "temp-" + Basename(export_dir));
  if (env->FileExists(temp)) env->DeleteRecursively(temp);
  try {
    WriteSavedModelFiles(env, temp, graph, session, signatures, info);
    env->RenameFile(temp, export_dir);
  } catch (...) {
    // A failed export (a full disk, a variable without a value) leaves nothing behind:
    // a half-written temp-<ts> directory would only confuse the next export's reader.
    try {
      if (env->FileExists(temp)) env->DeleteRecursively(temp);
    } catch (const Error& cleanup) {
      LOOM_LOG(WARNING) << "ExportSavedModel: could not remove '" << temp
                        << "' after a failed export: " << cleanup.what();
    }
    throw;
  }
  env->SyncDir(base);
}

void CheckSavedModelFiles(Env* env, const std::string& export_dir) {
  for (std::string_view file : {kSavedModelGraph, kSavedModelVariables}) {
    if (env->FileExists(JoinPath(export_dir, file))) continue;
    throw DataLoss("SavedModel '", export_dir, "' has no ", file, ": a Loom SavedModel (what ",
                   "loom export writes) is ", kSavedModelJson, ", ", kSavedModelGraph, " and ",
                   kSavedModelVariables, "; copy the whole directory, or export it again");
  }
}

std::unique_ptr<SavedModelPredictor> SavedModelPredictor::Load(const std::string& export_dir,
                                                               SessionOptions options, Env* env) {
  if (env == nullptr) env = Env::Default();
  const std::string json_path = JoinPath(export_dir, kSavedModelJson);
  if (!env->FileExists(json_path)) {
    throw NotFound("SavedModelPredictor: '", export_dir, "' is not a SavedModel directory (no ",
                   kSavedModelJson, ")");
  }
  std::unique_ptr<SavedModelPredictor> p(new SavedModelPredictor());
  try {
    json doc = json::parse(ReadFileToString(env, json_path));
    if (doc.value("format", "") != kSavedModelFormat) {
      throw DataLoss("unknown format '", doc.value("format", ""), "', expected ",
                     kSavedModelFormat);
    }
    for (const auto& [name, sig] : doc.at("signatures").items()) {
      p->signatures_[name] = {.method_name = sig.at("method_name").get<std::string>(),
                              .inputs = TensorInfosFromJson(sig.at("inputs")),
                              .outputs = TensorInfosFromJson(sig.at("outputs"))};
    }
    if (doc.contains("global_step")) {
      // from_chars: std::stoll's invalid_argument / out_of_range are not json exceptions
      // and would escape the handler below as non-loom errors.
      const std::string step = doc["global_step"].get<std::string>();
      int64_t value = 0;
      const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), value);
      if (step.empty() || ec != std::errc() || end != step.data() + step.size()) {
        throw DataLoss("global_step '", step, "' is not an integer");
      }
      p->global_step_ = value;
    }
  } catch (const json::exception& e) {
    throw DataLoss("SavedModelPredictor: malformed ", json_path, ": ", e.what());
  } catch (const Error& e) {
    throw WithContext(e, "SavedModelPredictor: malformed ", json_path);
  }

  CheckSavedModelFiles(env, export_dir);
  p->graph_ = std::make_unique<Graph>();
  ImportGraph(env, JoinPath(export_dir, kSavedModelGraph), AllOps(), *p->graph_);
  p->graph_->Finalize();
  p->session_ = std::make_unique<Session>(*p->graph_, options);
  const std::string vars_path = JoinPath(export_dir, kSavedModelVariables);
  auto reader = SafetensorsReader::Open(env, vars_path);
  for (Node* var : p->graph_->Variables()) {
    if (!reader->Contains(var->name())) {
      throw DataLoss("SavedModelPredictor: ", vars_path, " has no value for variable '",
                     var->name(), "'");
    }
    p->session_->WriteVariable(var->name(), reader->Get(var->name()));
  }
  // Check every signature tensor exists now, not at the first request.
  for (const auto& [name, sig] : p->signatures_) {
    for (const auto& [key, info] : sig.inputs) p->graph_->GetOutput(info.name);
    for (const auto& [key, info] : sig.outputs) p->graph_->GetOutput(info.name);
  }
  return p;
}

SavedModelPredictor::~SavedModelPredictor() = default;

std::map<std::string, Tensor> SavedModelPredictor::Predict(
    const std::map<std::string, Tensor>& inputs, const std::string& signature) {
  auto it = signatures_.find(signature);
  if (it == signatures_.end()) {
    std::string names;
    for (const auto& [name, s] : signatures_) names += (names.empty() ? "" : ", ") + name;
    throw NotFound("SavedModelPredictor: no signature '", signature, "'; it has {", names, "}");
  }
  const SignatureDef& sig = it->second;
  FeedList feeds;
  for (const auto& [key, info] : sig.inputs) {
    auto in = inputs.find(key);
    if (in == inputs.end()) {
      throw InvalidArgument("SavedModelPredictor: signature '", signature, "' needs input '", key,
                            "' (", DTypeName(info.dtype), info.shape.ToString(), ")");
    }
    feeds.emplace_back(graph_->GetOutput(info.name), in->second);
  }
  for (const auto& [key, t] : inputs) {
    if (!sig.inputs.count(key)) {
      throw InvalidArgument("SavedModelPredictor: signature '", signature, "' has no input named '",
                            key, "'");
    }
  }
  std::vector<Output> fetches;
  for (const auto& [key, info] : sig.outputs) fetches.push_back(graph_->GetOutput(info.name));
  std::vector<Tensor> values = session_->Run(feeds, fetches);
  std::map<std::string, Tensor> out;
  size_t i = 0;
  for (const auto& [key, info] : sig.outputs) out[key] = std::move(values[i++]);
  return out;
}

}  // namespace loom
