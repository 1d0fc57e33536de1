// The text `checkpoint` state file (loom/train/checkpoint_state.cc): parsing it, and the
// discovery of the latest (valid) checkpoint it leads to. The input is the file's bytes;
// the directory also holds one small valid checkpoint, model.ckpt-5.safetensors.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/safetensors.h"
#include "loom/train/saver.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/model/checkpoint", fuzz::AsView(data, size));
  WriteSafetensors(env.get(), "/model/model.ckpt-5.safetensors", {{"w", Tensor::Scalar(1.0f)}}, {},
                   {.atomic = false});
  try {
    train::ReadCheckpointState(env.get(), "/model");
  } catch (const Error&) {
  }
  try {
    train::LatestCheckpoint(env.get(), "/model");
  } catch (const Error&) {
  }
  try {
    train::LatestValidCheckpoint(env.get(), "/model");
  } catch (const Error&) {
  }
  return 0;
}
