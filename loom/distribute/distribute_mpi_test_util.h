#ifndef LOOM_DISTRIBUTE_DISTRIBUTE_MPI_TEST_UTIL_H_
#define LOOM_DISTRIBUTE_DISTRIBUTE_MPI_TEST_UTIL_H_

// The fixture of the tests that launch `mpirun -np N` of distribute_mpi_worker (and of
// `loom train`) and compare what the ranks wrote (distribute_mpi_test.cc,
// distribute_mpi_semantics_test.cc). Header-only, test-only.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "loom/distribute/distribute_test_util.h"
#include "loom/io/npy.h"

namespace loom::distribute::mpi_testing {

namespace fs = std::filesystem;

struct Launch {
  int status = -1;
  std::string output;
};

// Runs `command` (stdout and stderr together) and waits, at most timeout_s seconds.
inline Launch RunCommand(const std::string& command, int timeout_s = 120) {
  Launch launch;
  const std::string full = "timeout -s KILL " + std::to_string(timeout_s) + " " + command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return launch;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) launch.output.append(buf, n);
  const int status = pclose(pipe);
  launch.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return launch;
}

inline std::string Mpirun(int np) {
  return StrCat(LOOM_MPIRUN, " --oversubscribe --bind-to none -np ", np, " ");
}

class MpiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loom_mpi_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Trains to max_steps on np ranks; returns the output.
  Launch Train(int np, const std::string& model_dir, const std::string& out, int64_t max_steps) {
    Launch l = RunCommand(
        StrCat(Mpirun(np), LOOM_MPI_WORKER, " train ", model_dir, " ", out, " ", max_steps));
    EXPECT_EQ(l.status, 0) << l.output;
    return l;
  }

  static std::map<std::string, Tensor> ReadRank(const std::string& out, int rank) {
    std::map<std::string, Tensor> values;
    const fs::path dir = fs::path(out) / ("rank" + std::to_string(rank));
    if (!fs::exists(dir)) return values;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".npy") {
        values[e.path().stem().string()] = ReadNpy(Env::Default(), e.path().string()).Clone();
      }
    }
    return values;
  }
  static std::string ReadText(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static int CountEventFiles(const std::string& dir) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      n += e.path().filename().string().starts_with("events.out.tfevents");
    }
    return n;
  }

  fs::path dir_;
};

inline void ExpectSameModel(const std::map<std::string, Tensor>& got,
                            const std::map<std::string, Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, value] : want) {
    if (value.dtype() != kFloat32) continue;
    // 1e-4: N ranks sum the gradients in another order than one rank, and a resumed run
    // re-shards; after tens of Adam steps float32 drifts to ~6e-5 (measured), while a wrong
    // model (another batch, a lost step) differs by 1e-2 or more.
    EXPECT_LT(distribute_testing::MaxRelativeDifference(got.at(name), value), 1e-4)
        << name << ": " << what;
  }
}

}  // namespace loom::distribute::mpi_testing

#endif  // LOOM_DISTRIBUTE_DISTRIBUTE_MPI_TEST_UTIL_H_
