// Job files (loom/cli/job.h): the input is the TOML text of a job, parsed as `loom train`
// reads it (every key checked, every error an InvalidArgument naming file, line and key).
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/cli/job.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  try {
    cli::ParseJob(std::string(fuzz::AsView(data, size)), "job.toml");
  } catch (const Error&) {
  }
  return 0;
}
