// FromIdx: rows of IDX files (MNIST / Fashion-MNIST), gzipped or not. ReadIdx maps a plain
// uint8 file (rows are views of the mapping) and decodes a gzipped one once; either way
// the dataset is index-addressable (internal::ArraySlices).
#include "loom/data/file_sources_internal.h"
#include "loom/io/idx.h"

namespace loom::data {
namespace {

constexpr const char* kIdxStage = "FromIdx";

Tensor ReadIdxFor(Env* env, const std::string& path, const std::string& key) {
  try {
    return ReadIdx(env, path);
  } catch (const Error& e) {
    throw WithContext(e, kIdxStage, " component '", key, "'");
  }
}

}  // namespace

Dataset FromIdx(const std::string& path, IdxOptions options) {
  Env* env = internal::EnvOr(options.env);
  CheckArg(!options.features_key.empty(), kIdxStage, "features_key is empty");
  Element tensors{{options.features_key, ReadIdxFor(env, path, options.features_key)}};
  return internal::ArraySlices(kIdxStage, std::move(tensors), {{options.features_key, path}});
}

Dataset FromIdx(const std::string& images_path, const std::string& labels_path,
                IdxOptions options) {
  Env* env = internal::EnvOr(options.env);
  CheckArg(!options.features_key.empty() && !options.labels_key.empty(), kIdxStage,
           "features_key and labels_key must not be empty");
  CheckArg(options.features_key != options.labels_key, kIdxStage,
           "features_key and labels_key "
           "are both '",
           options.features_key, "'");
  Element tensors{{options.features_key, ReadIdxFor(env, images_path, options.features_key)},
                  {options.labels_key, ReadIdxFor(env, labels_path, options.labels_key)}};
  return internal::ArraySlices(
      kIdxStage, std::move(tensors),
      {{options.features_key, images_path}, {options.labels_key, labels_path}});
}

}  // namespace loom::data
