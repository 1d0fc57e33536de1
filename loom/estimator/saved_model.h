#ifndef LOOM_ESTIMATOR_SAVED_MODEL_H_
#define LOOM_ESTIMATOR_SAVED_MODEL_H_

// Loom's SavedModel: a directory that serves predictions without the model function, the
// counterpart of TF's SavedModel. Estimator::ExportSavedModel writes
// export_dir_base/<unix seconds>/ (first as "temp-<seconds>", renamed when complete):
//   saved_model.json              {"format": "loom-saved-model-1", "global_step": N,
//                                  "checkpoint": path, "signatures": {name: {"method_name",
//                                  "inputs": {key: {"name": "x:0", "dtype": "float32",
//                                  "shape": [-1, 2]}}, "outputs": {...}}}}
//   graph.pb                      the kPredict graph (ExportGraph; constants above 1 MiB
//                                  in graph.pb.data.safetensors beside it)
//   variables/variables.safetensors  every variable's value, by node name
// SavedModelPredictor loads it with AllOps() (all_ops.h) and runs a signature.
//
//   auto predictor = loom::SavedModelPredictor::Load(export_dir);
//   auto out = predictor->Predict({{"x", batch}});   // {"predictions": ...}
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/data/element.h"
#include "loom/estimator/estimator_spec.h"
#include "loom/graph/scope.h"
#include "loom/runtime/session.h"

namespace loom {

inline constexpr std::string_view kSavedModelFormat = "loom-saved-model-1";
inline constexpr std::string_view kSavedModelJson = "saved_model.json";
inline constexpr std::string_view kSavedModelGraph = "graph.pb";
inline constexpr std::string_view kSavedModelVariables = "variables/variables.safetensors";

// What a serving input function returns (TF's ServingInputReceiver): the features the
// model reads, and the tensors a client feeds (usually placeholders) by signature key.
struct ServingInputReceiver {
  Features features;
  std::map<std::string, Output> receiver_tensors;
};
using ServingInputReceiverFn = std::function<ServingInputReceiver(Scope&)>;

// TF's build_raw_serving_input_receiver_fn: one placeholder per feature, named and keyed
// by the feature's name, with a batch dimension of unknown size prepended to each shape.
ServingInputReceiverFn RawServingInputReceiverFn(std::map<std::string, data::TensorSpec> features);

struct TensorInfo {
  std::string name;  // "x:0"
  DType dtype = DType::kInvalid;
  Shape shape = Shape::Unknown();
};
struct SignatureDef {
  std::string method_name;
  std::map<std::string, TensorInfo> inputs;
  std::map<std::string, TensorInfo> outputs;
};

// Writes a SavedModel directory at export_dir (which must not exist) from a graph and a
// session holding its variables: the layout above, atomically (a temp directory renamed).
// On failure (a full disk, a variable without a value) the temp directory is removed and
// the error propagates: nothing of the export stays behind.
void WriteSavedModel(Env* env, const std::string& export_dir, const Graph& graph, Session& session,
                     const std::map<std::string, SignatureDef>& signatures,
                     const std::map<std::string, std::string>& info = {});

// export_dir_base/<unix seconds> that does not exist yet, past every <seconds> (and
// temp-<seconds>) already in export_dir_base: the next second after the largest when
// the clock has not passed it (several exports in one second), so the newest export
// always has the largest name.
std::string NewExportDir(Env* env, const std::string& export_dir_base);

// Throws DataLoss naming the first of graph.pb and variables/variables.safetensors that
// export_dir (a directory with saved_model.json) lacks, and what a SavedModel holds: a copy
// made without one of them.
void CheckSavedModelFiles(Env* env, const std::string& export_dir);

// Serves a SavedModel directory. Owns its graph and session; Predict may be called from
// several threads (Session::Run is thread-safe).
class SavedModelPredictor {
 public:
  // Throws NotFound / DataLoss naming the file when the directory is incomplete or
  // corrupt, NotFound naming an op no Register*Ops call provides.
  static std::unique_ptr<SavedModelPredictor> Load(const std::string& export_dir,
                                                   SessionOptions options = {}, Env* env = nullptr);
  ~SavedModelPredictor();

  // Feeds `inputs` (every input key of the signature, no others) and returns its outputs
  // by key. Throws InvalidArgument naming a missing or unknown key, NotFound for an
  // unknown signature.
  std::map<std::string, Tensor> Predict(const std::map<std::string, Tensor>& inputs,
                                        const std::string& signature = "serving_default");

  const std::map<std::string, SignatureDef>& signatures() const { return signatures_; }
  int64_t global_step() const { return global_step_; }
  const Graph& graph() const { return *graph_; }

 private:
  SavedModelPredictor() = default;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
  std::map<std::string, SignatureDef> signatures_;
  int64_t global_step_ = -1;
};

}  // namespace loom

#endif  // LOOM_ESTIMATOR_SAVED_MODEL_H_
