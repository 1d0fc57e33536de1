// `loom inspect` on TensorFlow's checkpoint (tensor bundle: `model.ckpt-N.index` plus its
// `.data-K-of-N` shards), read by the io layer's TfCheckpointReader
// (docs/formats/tf_checkpoint.md): every tensor's dtype and shape, each tensor's bytes
// checked against its CRC-32C, and the global step. Damage is the reader's DataLoss, naming
// file and tensor. Also TF SavedModels (loom/estimator/tf_saved_model.h): signatures, their
// inputs and outputs, and which ones Loom can run.
#include <cstdio>
#include <optional>
#include <string>

#include "loom/base/error.h"
#include "loom/cli/inspect_internal.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/io/proto/types.pb.h"
#include "loom/io/tf_checkpoint.h"

namespace loom::cli {
namespace {

std::string DTypeString(int dtype) {
  const std::string& name = proto::DataType_Name(static_cast<proto::DataType>(dtype));
  return name.empty() ? StrCat("dtype ", dtype) : name;
}

}  // namespace

void InspectTFCheckpointIndex(Env* env, const std::string& path) {
  auto reader = TfCheckpointReader::Open(env, path);
  const auto& entries = reader->entries();
  std::printf("TensorFlow checkpoint index (tensor bundle) %s: %zu tensors in %d data shard(s)\n",
              path.c_str(), entries.size(), reader->header().num_shards);
  for (const TfCheckpointEntry& e : entries) {
    std::printf("  %-48s %-10s %s%s\n", e.name.c_str(), DTypeString(e.tf_dtype).c_str(),
                e.shape.ToString().c_str(),
                e.slices.empty() ? "" : StrCat("  (", e.slices.size(), " slices)").c_str());
  }
  // Read every tensor once: its bytes must lie inside its shard and match their CRC.
  for (const TfCheckpointEntry& e : entries) {
    if (e.dtype != DType::kInvalid) reader->Get(e.name);
  }
  if (reader->Contains("global_step")) {
    const Tensor step = reader->Get("global_step");
    if (step.NumElements() == 1 && (step.dtype() == kInt64 || step.dtype() == kInt32)) {
      std::printf("global step: %lld\n",
                  static_cast<long long>(step.dtype() == kInt64 ? step.flat<int64_t>()[0]
                                                                : step.flat<int32_t>()[0]));
    }
  }
  std::printf(
      "Warm-start a Loom model from it with WarmStartSettings{.ckpt_to_initialize_from = "
      "\"%s\"} (docs/estimator.md)\n",
      reader->prefix().c_str());
}

void InspectTFSavedModel(Env* env, const std::string& dir) {
  // Translating the graph says which signatures run; a model none of whose signatures can
  // run is still listed, with the load error. So is one whose variables/ are missing or
  // damaged, whose error then follows the listing (the exit status says it is damaged).
  std::unique_ptr<TfModel> model;
  std::string load_error;
  std::optional<Error> damage;
  try {
    model = LoadTFSavedModel(env, dir);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kNotFound || e.code() == ErrorCode::kDataLoss) {
      damage = e;
    } else if (e.code() == ErrorCode::kUnimplemented) {
      load_error = e.message();
    } else {
      throw;
    }
  }
  const std::map<std::string, TfSignature> signatures =
      model ? model->signatures() : ReadTfSavedModelSignatures(env, dir);
  std::printf("TensorFlow SavedModel %s (tags: serve): %zu signature(s)\n", dir.c_str(),
              signatures.size());
  auto describe = [](const TfTensorInfo& info) {
    return StrCat(info.name, " ",
                  info.dtype == DType::kInvalid ? std::string("?") : DTypeName(info.dtype),
                  info.shape.ToString());
  };
  for (const auto& [key, sig] : signatures) {
    std::string reason;
    if (model && model->unavailable().count(key)) reason = model->unavailable().at(key);
    std::printf("  %s (%s)%s\n", key.c_str(), sig.method_name.c_str(),
                reason.empty() ? "" : StrCat(": cannot run in Loom, ", reason).c_str());
    for (const auto& [name, info] : sig.inputs) {
      std::printf("    input  %-12s %s\n", name.c_str(), describe(info).c_str());
    }
    for (const TfExampleFeature& f : sig.example_features) {
      std::printf("      tf.Example feature %s: %s%s%s\n", f.key.c_str(),
                  std::string(DTypeName(f.dtype)).c_str(),
                  f.var_len ? " (var_len)" : f.shape.ToString().c_str(),
                  f.has_default ? " (has a default)" : "");
    }
    for (const auto& [name, info] : sig.outputs) {
      std::printf("    output %-12s %s\n", name.c_str(), describe(info).c_str());
    }
  }
  if (damage) throw *damage;
  if (!load_error.empty()) {
    std::printf("No signature can run in Loom: %s\n", load_error.c_str());
    return;
  }
  std::printf(
      "Run a signature with loom predict --saved-model %s --signature NAME "
      "(--input KEY=FILE.npy | --csv FILE.csv) --out FILE\n",
      dir.c_str());
}

}  // namespace loom::cli
