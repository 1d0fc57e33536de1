// `loom inspect` on TensorFlow's checkpoint (tensor bundle: `model.ckpt-N.index` plus its
// `.data-K-of-N` shards), read by the io layer's TfCheckpointReader
// (docs/formats/tf_checkpoint.md): every tensor's dtype and shape, each tensor's bytes
// checked against its CRC-32C. Damage is the reader's DataLoss, naming file and tensor.
#include <cstdio>
#include <string>

#include "loom/base/error.h"
#include "loom/cli/inspect_internal.h"
#include "loom/io/proto/types.pb.h"
#include "loom/io/tf_checkpoint.h"

namespace loom::cli {
namespace {

std::string DTypeString(int dtype) {
  const std::string& name = proto::DataType_Name(static_cast<proto::DataType>(dtype));
  return name.empty() ? StrCat("dtype ", dtype) : name;
}

std::string ShapeString(const Shape& shape) {
  std::string out = "[";
  for (int i = 0; i < shape.rank(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(shape.dim(i));
  }
  return out + "]";
}

}  // namespace

void InspectTFCheckpointIndex(Env* env, const std::string& path) {
  auto reader = TfCheckpointReader::Open(env, path);
  const auto& entries = reader->entries();
  std::printf("TensorFlow checkpoint index (tensor bundle) %s: %zu tensors in %d data shard(s)\n",
              path.c_str(), entries.size(), reader->header().num_shards);
  for (const TfCheckpointEntry& e : entries) {
    std::printf("  %-48s %-10s %s%s\n", e.name.c_str(), DTypeString(e.tf_dtype).c_str(),
                ShapeString(e.shape).c_str(),
                e.slices.empty() ? "" : StrCat("  (", e.slices.size(), " slices)").c_str());
  }
  // Read every tensor once: its bytes must lie inside its shard and match their CRC.
  for (const TfCheckpointEntry& e : entries) {
    if (e.dtype != DType::kInvalid) reader->Get(e.name);
  }
  std::printf("Warm-start a Loom model from it with WarmStartSettings{.ckpt_to_initialize_from = "
              "\"%s\"} (docs/estimator.md)\n",
              reader->prefix().c_str());
}

}  // namespace loom::cli
