// Resume after a crash: a child process trains a linear model through
// MonitoredTrainingSession (checkpoints every few steps, a shuffled and repeated input
// pipeline whose position is in the checkpoint); the test SIGKILLs it at random moments
// several times and restarts it each time. Every restart resumes from the newest valid
// checkpoint with its global step, variables and iterator position, so the final
// variables equal, bit for bit, those of a run that was never interrupted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "loom/base/logging.h"
#include "loom/data/dataset.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/reduce.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/monitored_session.h"

namespace loom {
namespace {

constexpr int64_t kLastStep = 300;

// Trains until the global step reaches kLastStep, resuming from checkpoint_dir.
void Train(const std::string& checkpoint_dir) {
  Graph graph;
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
  Variable w(s.WithOpName("w"), Tensor::Zeros(kFloat32, Shape{4, 1}));
  Variable b(s.WithOpName("b"), Tensor::Zeros(kFloat32, Shape{1}));
  Output prediction = Add(s, MatMul(s, next.at("x"), w), b);
  Output loss = Mean(s, Square(s, Sub(s, prediction, next.at("y"))));
  Operation train_op = train::GradientDescent({.learning_rate = 0.05}).Minimize(s, loss, step);
  auto session = train::MonitoredTrainingSession(
      graph, {.checkpoint_dir = checkpoint_dir,
              .hooks = {std::make_shared<train::StopAtStepHook>(
                  train::StopAtStepOptions{.last_step = kLastStep})},
              .save_checkpoint_steps = 3,
              .save_summaries_steps = 0,
              .log_step_count_steps = 0,
              .save_graph_def = false,
              .session_options = {.intra_op_threads = 1}});
  while (!session->ShouldStop()) session->RunTarget(train_op);
  session->Close();
}

// Runs Train in a child process; returns its pid.
pid_t SpawnTrainer(const std::string& dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      SetMinLogLevel(LogLevel::kWarning);
      Train(dir);
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

std::string TempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("loom_kill_resume_" + std::to_string(getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(KillResume, FinalVariablesEqualAnUninterruptedRun) {
  const std::string reference_dir = TempDir("reference");
  const std::string killed_dir = TempDir("killed");
  // Everything trains in children, so this process never forks with worker threads.
  ASSERT_EQ(WaitExitCode(SpawnTrainer(reference_dir)), 0);

  std::mt19937 rng(std::random_device{}());
  int kills = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    const pid_t pid = SpawnTrainer(killed_dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(30 + rng() % 250));
    kill(pid, SIGKILL);
    const int code = WaitExitCode(pid);
    if (code == -SIGKILL) ++kills;
    else ASSERT_EQ(code, 0);  // finished before the kill: fine, but must have succeeded
  }
  ASSERT_EQ(WaitExitCode(SpawnTrainer(killed_dir)), 0);
  EXPECT_GT(kills, 0);

  Env* env = Env::Default();
  auto reference = train::LatestValidCheckpoint(env, reference_dir);
  auto resumed = train::LatestValidCheckpoint(env, killed_dir);
  ASSERT_TRUE(reference && resumed);
  EXPECT_EQ(Basename(*resumed), "model.ckpt-" + std::to_string(kLastStep));
  for (const char* name : {"global_step", "w", "b"}) {
    Tensor a = train::LoadVariable(env, *reference, name);
    Tensor b = train::LoadVariable(env, *resumed, name);
    EXPECT_TRUE(a.Equals(b)) << name << ": " << a.DebugString() << " vs " << b.DebugString();
  }
  // The model learned something (the comparison is not between two untrained models).
  Tensor w = train::LoadVariable(env, *reference, "w");
  EXPECT_NEAR(w.data<float>()[0], 1.0f, 0.3f);
  // max_to_keep (5) still bounds the directory after all the restarts.
  int checkpoints = 0;
  for (const auto& f : env->GetChildren(killed_dir)) checkpoints += f.ends_with(".safetensors");
  EXPECT_LE(checkpoints, 6);
  std::filesystem::remove_all(reference_dir);
  std::filesystem::remove_all(killed_dir);
}

}  // namespace
}  // namespace loom
