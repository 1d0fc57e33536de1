// TensorFlow SavedModel loading (loom/estimator/tf_saved_model.h): the SavedModel protobuf,
// its MetaGraphDef and SignatureDefs, and the translation of every signature's nodes into
// Loom ops (attributes, constants, control flow), as `loom predict --saved-model` and
// `loom inspect` do on a foreign model. The input is saved_model.pb; there is no variables/
// (a signature that reads a variable must fail naming it). Nothing is run: a graph's sizes
// come from the file, and running one is the kernels' business, not the loader's.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/estimator/tf_saved_model.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/in/model/saved_model.pb", fuzz::AsView(data, size));
  try {
    std::unique_ptr<TfModel> model = LoadTFSavedModel(env.get(), "/in/model");
    for (const auto& [name, signature] : model->signatures()) {
      fuzz::TouchEveryByte(name.data(), name.size());
      fuzz::TouchEveryByte(signature.method_name.data(), signature.method_name.size());
    }
  } catch (const Error&) {
  }
  try {
    ReadTfSavedModelSignatures(env.get(), "/in/model");
  } catch (const Error&) {
  }
  return 0;
}
