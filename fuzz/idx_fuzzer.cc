// IDX reading (loom/io/idx.h), plain or gzip (detected by the magic, so one harness covers
// both: the corpus holds both kinds). The input is the file's bytes.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/idx.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/in/images-idx3-ubyte", fuzz::AsView(data, size));
  try {
    Tensor t = ReadIdx(env.get(), "/in/images-idx3-ubyte");
    fuzz::TouchEveryByte(t.raw_data(), t.TotalBytes());
  } catch (const Error&) {
  }
  return 0;
}
