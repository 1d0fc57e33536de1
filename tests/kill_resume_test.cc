// Resume after a crash: a child process trains a small network with dropout through
// MonitoredTrainingSession (checkpoints every few steps, a seeded shuffled and repeated
// input pipeline whose position is in the checkpoint, a graph seed); the test SIGKILLs it
// at random moments several times and restarts it each time. Every restart resumes from
// the newest valid checkpoint with its global step, variables, iterator position and
// random-op streams, so every tensor of the final checkpoint equals, bit for bit, that of
// a run that was never interrupted; and two uninterrupted runs write identical files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include "loom/base/env.h"
#include "loom/base/logging.h"
#include "loom/data/dataset.h"
#include "loom/ops/dropout.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/monitored_session.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

constexpr int64_t kLastStep = 300;

// Trains until the global step reaches kLastStep, resuming from checkpoint_dir and saving
// every save_steps steps.
void Train(const std::string& checkpoint_dir, int save_steps) {
  Graph graph({.seed = 17});  // seeds the initializers, the dropout and the iterator
  Scope s(graph);
  Variable step = train::GlobalStep(s);
  // y = x · [1, -2, 3, 0.5] + 0.25 on 64 fixed rows.
  std::vector<float> xs, ys;
  for (int i = 0; i < 64; ++i) {
    float row[4] = {std::sin(i * 0.7f), std::cos(i * 1.3f), (i % 7) / 7.0f, (i % 3) - 1.0f};
    xs.insert(xs.end(), row, row + 4);
    ys.push_back(row[0] - 2 * row[1] + 3 * row[2] + 0.5f * row[3] + 0.25f);
  }
  auto it = data::FromTensorSlices({{"x", Tensor::FromVector(xs, Shape{64, 4})},
                                    {"y", Tensor::FromVector(ys, Shape{64, 1})}})
                .Shuffle(64, {.seed = 11})
                .Repeat()
                .Batch(8)
                .MakeOneShotIterator(s);
  auto next = it.GetNext();
  // A hidden layer with dropout: its masks differ at every step, so a resume that
  // restarted the random streams would train on other masks.
  Variable w1(s.WithOpName("w1"), RandomNormal(s, {4, 16}, kFloat32, 0.0, 0.5));
  Variable b1(s.WithOpName("b1"), Tensor::Zeros(kFloat32, Shape{16}));
  Output hidden =
      Dropout(s.WithOpName("dropout"), Relu(s, Add(s, MatMul(s, next.at("x"), w1), b1)), 0.25);
  Variable w(s.WithOpName("w"), RandomNormal(s, {16, 1}, kFloat32, 0.0, 0.1));
  Variable b(s.WithOpName("b"), Tensor::Zeros(kFloat32, Shape{1}));
  Output prediction = Add(s, MatMul(s, hidden, w), b);
  Output loss = Mean(s, Square(s, Sub(s, prediction, next.at("y"))));
  Operation train_op = train::GradientDescent({.learning_rate = 0.05}).Minimize(s, loss, step);
  auto session = train::MonitoredTrainingSession(
      graph, {.checkpoint_dir = checkpoint_dir,
              .hooks = {std::make_shared<train::StopAtStepHook>(
                  train::StopAtStepOptions{.last_step = kLastStep})},
              .save_checkpoint_steps = save_steps,
              .save_summaries_steps = 0,
              .log_step_count_steps = 0,
              .save_graph_def = false,
              .session_options = {.intra_op_threads = 1}});
  while (!session->ShouldStop()) session->RunTarget(train_op);
  session->Close();
}

// Runs Train in a child process; returns its pid.
pid_t SpawnTrainer(const std::string& dir, int save_steps = 3) {
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      SetMinLogLevel(LogLevel::kWarning);
      Train(dir, save_steps);
    } catch (const std::exception& e) {
      fprintf(stderr, "trainer failed: %s\n", e.what());
      code = 1;
    }
    _exit(code);
  }
  return pid;
}

int WaitExitCode(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// A fresh path `name` inside this test process's own loom::testing::TempDir, which is
// removed (with everything in it) when the process exits.
std::string TempDir(const std::string& name) {
  static const loom::testing::TempDir root("kill_resume");
  const std::string dir = root.Join(name);
  std::filesystem::remove_all(dir);
  return dir;
}

// Every tensor (variables, the iterator's state, the random streams) of two checkpoints.
void ExpectSameTensors(const std::string& expected, const std::string& actual) {
  Env* env = Env::Default();
  std::vector<train::CheckpointEntry> a = train::ListVariables(env, expected);
  std::vector<train::CheckpointEntry> b = train::ListVariables(env, actual);
  ASSERT_EQ(a.size(), b.size());
  int random_streams = 0, iterators = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].name, b[i].name);
    random_streams += a[i].is_random_stream;
    iterators += a[i].is_iterator_state;
    Tensor x = train::LoadVariable(env, expected, a[i].name);
    Tensor y = train::LoadVariable(env, actual, b[i].name);
    ASSERT_EQ(x.TotalBytes(), y.TotalBytes()) << a[i].name;
    EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.TotalBytes()), 0)
        << a[i].name << ": " << x.DebugString() << " vs " << y.DebugString();
  }
  EXPECT_GE(random_streams, 1);  // the dropout's (and the initializers')
  EXPECT_EQ(iterators, 1);
}

// A checkpoint file's bytes with the value of its "wall_time" metadata blanked (the one
// thing two identical runs may not share: when they ran).
std::string BytesWithoutWallTime(const std::string& path) {
  std::string bytes = ReadFileToString(Env::Default(), train::CheckpointFilePath(path));
  const size_t key = bytes.find("\"wall_time\":\"");
  EXPECT_NE(key, std::string::npos) << path;
  if (key == std::string::npos) return bytes;
  const size_t begin = key + 13, end = bytes.find('"', begin);
  for (size_t i = begin; i < end; ++i) bytes[i] = '0';
  return bytes;
}

TEST(KillResume, FinalVariablesEqualAnUninterruptedRun) {
  const std::string reference_dir = TempDir("reference");
  const std::string killed_dir = TempDir("killed");
  // Everything trains in children, so this process never forks with worker threads.
  const auto started = std::chrono::steady_clock::now();
  ASSERT_EQ(WaitExitCode(SpawnTrainer(reference_dir)), 0);
  // The kills land at random moments within the first half of what a whole run takes on
  // this machine (a fixed delay outlived the whole run on a fast one, and nothing was
  // killed): the first attempt from scratch is killed mid-training, later ones while
  // resuming, training or writing a checkpoint.
  const auto run_us = std::max<int64_t>(2000, std::chrono::duration_cast<std::chrono::microseconds>(
                                                  std::chrono::steady_clock::now() - started)
                                                  .count());
  std::mt19937 rng(std::random_device{}());
  int kills = 0;
  // A run that finished before every kill (a machine suddenly much faster than during the
  // reference run) starts over in a fresh directory, at most three times.
  for (int round = 0; round < 3 && kills == 0; ++round) {
    std::filesystem::remove_all(killed_dir);
    for (int attempt = 0; attempt < 6; ++attempt) {
      const pid_t pid = SpawnTrainer(killed_dir);
      std::this_thread::sleep_for(
          std::chrono::microseconds(run_us / 20 + static_cast<int64_t>(rng() % (run_us / 2))));
      kill(pid, SIGKILL);
      const int code = WaitExitCode(pid);
      if (code == -SIGKILL)
        ++kills;
      else
        ASSERT_EQ(code, 0);  // finished before the kill: fine, but must have succeeded
    }
  }
  ASSERT_EQ(WaitExitCode(SpawnTrainer(killed_dir)), 0);
  EXPECT_GT(kills, 0);

  Env* env = Env::Default();
  auto reference = train::LatestValidCheckpoint(env, reference_dir);
  auto resumed = train::LatestValidCheckpoint(env, killed_dir);
  ASSERT_TRUE(reference && resumed);
  EXPECT_EQ(Basename(*resumed), "model.ckpt-" + std::to_string(kLastStep));
  ExpectSameTensors(*reference, *resumed);
  // The model learned something (the comparison is not between two untrained models).
  Tensor w1_initial = train::LoadVariable(
      env, reference_dir + "/model.ckpt-" + std::to_string(kLastStep - 12), "w1");
  EXPECT_FALSE(train::LoadVariable(env, *reference, "w1").Equals(w1_initial));
  // max_to_keep (5) still bounds the directory after all the restarts.
  int checkpoints = 0;
  for (const auto& f : env->GetChildren(killed_dir)) checkpoints += f.ends_with(".safetensors");
  EXPECT_LE(checkpoints, 6);
  std::filesystem::remove_all(reference_dir);
  std::filesystem::remove_all(killed_dir);
}

// With every seed given, two uninterrupted runs write the same checkpoints: every tensor,
// and every byte of the files but the wall time.
TEST(KillResume, TwoUninterruptedRunsWriteIdenticalCheckpoints) {
  const std::string one = TempDir("one"), two = TempDir("two");
  // Fewer checkpoints than the kill test (each one is an fsync); max_to_keep leaves 100 to 300.
  ASSERT_EQ(WaitExitCode(SpawnTrainer(one, 50)), 0);
  ASSERT_EQ(WaitExitCode(SpawnTrainer(two, 50)), 0);
  Env* env = Env::Default();
  std::vector<std::string> files;
  for (const auto& f : env->GetChildren(one)) {
    if (f.ends_with(".safetensors")) files.push_back(f);
  }
  EXPECT_EQ(files.size(), 5u);
  for (const std::string& f : files) {
    const std::string a = JoinPath(one, f), b = JoinPath(two, f);
    ExpectSameTensors(a, b);
    EXPECT_TRUE(BytesWithoutWallTime(a) == BytesWithoutWallTime(b)) << f << " differs";
  }
  std::filesystem::remove_all(one);
  std::filesystem::remove_all(two);
}

}  // namespace
}  // namespace loom
