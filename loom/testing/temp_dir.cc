#include "loom/testing/temp_dir.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "loom/base/check.h"

namespace loom::testing {

TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  const char* base = std::getenv("TEST_TMPDIR");
  const std::filesystem::path root = base != nullptr && *base != '\0'
                                         ? std::filesystem::path(base)
                                         : std::filesystem::temp_directory_path();
  const std::filesystem::path dir =
      root / ("loom_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  std::error_code error;
  std::filesystem::remove_all(dir, error);  // a leftover of a crashed run with this pid
  std::filesystem::create_directories(dir, error);
  LOOM_CHECK(!error) << "cannot create the test directory " << dir.string() << ": "
                     << error.message();
  path_ = dir.string();
}

TempDir::~TempDir() {
  std::error_code error;  // a test that failed half-way may leave files open; never throw
  std::filesystem::remove_all(path_, error);
}

std::string TempDir::Join(const std::string& name) const { return path_ + "/" + name; }

}  // namespace loom::testing
