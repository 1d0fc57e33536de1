#ifndef LOOM_TESTING_TEMP_DIR_H_
#define LOOM_TESTING_TEMP_DIR_H_

// Shared fixtures of Loom's tests (the loom_testing library; not installed).
//
// TempDir: a fresh, empty directory on the real file system for one test, removed with
// everything in it by the destructor. It sits under $TEST_TMPDIR when set (CTest or a
// harness may point it at a scratch disk), else the system temp directory, and is named
// loom_<tag>_<pid>_<n>, so parallel test processes and several TempDirs in one test never
// collide. Not copyable. Thread-safe to construct from several threads.
//
//   TempDir dir("saver");
//   Saver(...).Save(session, dir.Join("model.ckpt"));
#include <string>

namespace loom::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string Join(const std::string& name) const;

 private:
  std::string path_;
};

}  // namespace loom::testing

#endif  // LOOM_TESTING_TEMP_DIR_H_
