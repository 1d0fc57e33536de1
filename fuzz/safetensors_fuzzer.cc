// safetensors reading (loom/io/safetensors.h): the index, then every tensor through the
// reader, with and without dtype conversion. The input is the file's bytes.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/safetensors.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/in/a.safetensors", fuzz::AsView(data, size));
  try {
    ReadSafetensorsIndex(env.get(), "/in/a.safetensors");
  } catch (const Error&) {
  }
  for (bool convert : {true, false}) {
    try {
      auto reader = SafetensorsReader::Open(env.get(), "/in/a.safetensors",
                                            {.convert_unsupported_dtypes = convert});
      for (const std::string& name : reader->names()) {
        try {
          Tensor t = reader->Get(name);
          fuzz::TouchEveryByte(t.raw_data(), t.TotalBytes());
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
  }
  return 0;
}
