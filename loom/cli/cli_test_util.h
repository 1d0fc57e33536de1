#ifndef LOOM_CLI_CLI_TEST_UTIL_H_
#define LOOM_CLI_CLI_TEST_UTIL_H_

// Helpers of the tests that run the built `loom` binary (LOOM_CLI_PATH): cli_test.cc
// (jobs, training, report) and inspect_test.cc (loom inspect).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "loom/testing/temp_dir.h"

namespace loom::cli::testing {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr
};

inline Result Loom(const std::string& args) {
  std::string cmd = std::string(LOOM_CLI_PATH) + " " + args + " 2>&1 </dev/null";
  Result r;
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

// A fresh directory `name` inside this test process's own loom::testing::TempDir, which is
// removed (with every such directory) when the process exits.
inline std::string TempDir(const std::string& name) {
  static const loom::testing::TempDir root("cli_test");
  const std::string dir = root.Join(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

inline std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

#define EXPECT_CONTAINS(haystack, needle)                                                       \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing '" << (needle) << "' in:\n" \
                                                        << (haystack)

inline std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

inline std::string EventsFile(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find("tfevents") != std::string::npos) return e.path();
  return "";
}

// A small DNN classifier job over WriteCsv's data; MODEL_DIR and DATA are replaced.
inline constexpr const char* kJob = R"([model]
type = "dnn_classifier"
hidden_units = [16]
n_classes = 2

[optimizer]
name = "Adam"
learning_rate = 0.05

[run_config]
model_dir = "MODEL_DIR"
tf_random_seed = 1
save_checkpoints_steps = 100
save_summary_steps = 10
log_step_count_steps = 50

[train]
max_steps = 200
batch_size = 32
seed = 3

[data.train]
format = "csv"
files = ["DATA"]
header = true
columns = ["a", "b", "label"]
defaults = [0.0, 0.0, 0]

[data.eval]
format = "csv"
files = ["DATA"]
header = true
columns = ["a", "b", "label"]
defaults = [0.0, 0.0, 0]

[[features]]
name = "a"

[[features]]
name = "b"
)";

// Two separable blobs.
inline void WriteCsv(const std::string& path) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0, 0.3f);
  std::string text = "a,b,label\n";
  for (int i = 0; i < 400; ++i) {
    int label = i % 2;
    float c = label ? 1.0f : -1.0f;
    text += std::to_string(c + noise(rng)) + "," + std::to_string(-c + noise(rng)) + "," +
            std::to_string(label) + "\n";
  }
  Write(path, text);
}

}  // namespace loom::cli::testing

#endif  // LOOM_CLI_CLI_TEST_UTIL_H_
