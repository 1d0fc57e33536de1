// .npy reading (loom/io/npy.h): the header alone, then the array with and without dtype
// conversion. The input is the file's bytes.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/npy.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/in/a.npy", fuzz::AsView(data, size));
  try {
    ReadNpyHeader(env.get(), "/in/a.npy");
  } catch (const Error&) {
  }
  for (bool convert : {true, false}) {
    try {
      Tensor t = ReadNpy(env.get(), "/in/a.npy", {.convert_unsupported_dtypes = convert});
      // Touch every byte: a view past the mapping's end shows up here under ASan.
      if (t.dtype() != DType::kString) fuzz::TouchEveryByte(t.raw_data(), t.TotalBytes());
    } catch (const Error&) {
    }
  }
  return 0;
}
