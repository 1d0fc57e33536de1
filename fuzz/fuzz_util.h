#ifndef LOOM_FUZZ_FUZZ_UTIL_H_
#define LOOM_FUZZ_FUZZ_UTIL_H_

// Shared by the harnesses: the input as a file in an in-memory Env, and a log sink that
// drops the warnings parsers print about bad input (millions of runs would flood stderr).
// A harness catches loom::Error only: any other exception escaping a parser ends the run
// as a crash (std::terminate), which is the point.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "loom/base/env.h"
#include "loom/base/logging.h"

namespace loom::fuzz {

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// A fresh in-memory file system holding `bytes` at `path`.
inline std::unique_ptr<Env> EnvWithFile(const std::string& path, std::string_view bytes) {
  std::unique_ptr<Env> env = NewMemEnv();
  env->CreateDirs(Dirname(path));
  auto file = env->NewWritableFile(path);
  file->Append(bytes);
  file->Close();
  return env;
}

// Reads every byte of [data, data + n): a view past a mapping's end shows up here under
// ASan. The empty asm keeps the loads (their sum is its input); a volatile sink would do
// the same but its compound assignment is deprecated in C++20.
inline void TouchEveryByte(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  unsigned char acc = 0;
  for (size_t i = 0; i < n; ++i) acc ^= p[i];
  asm volatile("" : : "r"(acc));
}

// Call once from LLVMFuzzerInitialize.
inline void SilenceLogs() {
  static ScopedLogSink* sink = new ScopedLogSink([](LogLevel, const std::string&) {});
  (void)sink;
}

}  // namespace loom::fuzz

#endif  // LOOM_FUZZ_FUZZ_UTIL_H_
