#include "loom/base/env.h"

#include <atomic>

#include "loom/base/error.h"

namespace loom {

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  if (b.empty()) return std::string(a);
  std::string out(a);
  if (out.back() == '/') out.pop_back();
  if (b.front() == '/') b.remove_prefix(1);
  out += '/';
  out += b;
  return out;
}

std::string Dirname(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return std::string(path);
  return std::string(path.substr(slash + 1));
}

std::string ReadFileToString(Env* env, const std::string& path) {
  auto file = env->NewSequentialFile(path);
  std::string out;
  constexpr size_t kChunk = 1 << 16;
  for (;;) {
    const size_t old_size = out.size();
    out.resize(old_size + kChunk);
    const size_t n = file->Read(kChunk, out.data() + old_size);
    out.resize(old_size + n);
    if (n == 0) break;
  }
  return out;
}

void WriteFileAtomically(Env* env, const std::string& path, std::string_view data) {
  // A unique name in the same directory, so the rename stays within one file system.
  static std::atomic<uint64_t> counter{0};
  const std::string temp = StrCat(path, ".tmp.", env->ProcessId(), ".", counter.fetch_add(1));
  try {
    auto file = env->NewWritableFile(temp);
    file->Append(data);
    file->Sync();
    file->Close();
    env->RenameFile(temp, path);
  } catch (const Error& e) {
    try {
      if (env->FileExists(temp)) env->DeleteFile(temp);
    } catch (const Error&) {
      // The original error is the one worth reporting.
    }
    throw WithContext(e, "while writing '", path, "' atomically");
  }
  env->SyncDir(Dirname(path));
}

}  // namespace loom
