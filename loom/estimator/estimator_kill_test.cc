// Kill/resume: a training process SIGKILLed several times and restarted with the same
// Train(max_steps) call ends with exactly the variables and metrics of an uninterrupted
// run. Needs checkpoints that hold the input position (the Saver writes iterator states).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "loom/estimator/child_trainer.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

using estimator_testing::TempDir;

constexpr int64_t kMaxSteps = 200;

using estimator_testing::ChildTrainer;

ChildTrainer StartHelper(const std::string& model_dir, int sleep_us) {
  return ChildTrainer(LOOM_ESTIMATOR_KILL_HELPER,
                      {model_dir, std::to_string(kMaxSteps), std::to_string(sleep_us)},
                      JoinPath(model_dir, "trainer.log"));
}

// Runs the helper to its end (at most 300 s).
void RunToEnd(const std::string& model_dir, const char* what) {
  ChildTrainer child = StartHelper(model_dir, 0);
  int status = 0;
  ASSERT_TRUE(child.WaitFor(300, &status)) << what << " did not finish:\n" << child.Log();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << what << " failed:\n" << child.Log();
}

// The step of the newest checkpoint the state file names (-1: none yet).
int64_t StateFileStep(const std::string& dir) {
  try {
    std::optional<std::string> path = train::LatestCheckpoint(Env::Default(), dir);
    if (!path) return -1;
    return std::stoll(path->substr(path->rfind('-') + 1));
  } catch (const std::exception&) {
    return -1;
  }
}

int64_t CheckpointStep(const std::string& dir) {
  Estimator probe(estimator_testing::LinearModelFn, {.model_dir = dir});
  if (!probe.LatestCheckpoint()) return -1;
  return train::StepValue(probe.GetVariableValue("global_step"));
}

TEST(EstimatorKillTest, KilledAndRestartedRunMatchesUninterruptedRun) {
  TempDir reference, killed;
  ASSERT_NO_FATAL_FAILURE(RunToEnd(reference.path(), "the reference run"));
  ASSERT_EQ(CheckpointStep(reference.path()), kMaxSteps);

  // Kill the run a few times, each time shortly after it wrote a new checkpoint (polled
  // from the state file), so each restart must resume mid-run — whatever the machine's load.
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int> extra_ms(0, 25);
  int kills_mid_run = 0;
  std::vector<int64_t> steps_after_kill;
  int64_t last_step = -1;
  for (int attempt = 0; attempt < 4; ++attempt) {
    ChildTrainer child = StartHelper(killed.path(), 4000);
    int status = 0;
    bool exited = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      if (child.Exited(&status)) {
        exited = true;
        break;
      }
      if (StateFileStep(killed.path()) > last_step) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!exited) {
      std::this_thread::sleep_for(std::chrono::milliseconds(extra_ms(rng)));
      status = child.Kill();
    }
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ++kills_mid_run;
    last_step = StateFileStep(killed.path());
    steps_after_kill.push_back(last_step);
  }
  EXPECT_GE(kills_mid_run, 3);
  // Each restart resumed from the previous one's checkpoint and got further.
  for (size_t i = 1; i < steps_after_kill.size(); ++i) {
    EXPECT_GT(steps_after_kill[i], steps_after_kill[i - 1]) << "restart " << i << " did not resume";
  }
  EXPECT_LT(steps_after_kill.front(), kMaxSteps);
  ASSERT_NO_FATAL_FAILURE(RunToEnd(killed.path(), "the final run"));

  Estimator a(estimator_testing::LinearModelFn,
              {.model_dir = reference.path(), .log_step_count_steps = 0});
  Estimator b(estimator_testing::LinearModelFn,
              {.model_dir = killed.path(), .log_step_count_steps = 0});
  // Every tensor of the final checkpoints: variables, the input position and the
  // dropout's random stream (the helper trains with dropout on x).
  const std::string a_path = train::CheckpointFilePath(*a.LatestCheckpoint());
  const std::string b_path = train::CheckpointFilePath(*b.LatestCheckpoint());
  std::vector<train::CheckpointEntry> entries = train::ListVariables(Env::Default(), a_path);
  ASSERT_EQ(entries.size(), train::ListVariables(Env::Default(), b_path).size());
  bool has_dropout_stream = false;
  for (const train::CheckpointEntry& e : entries) {
    has_dropout_stream |= e.is_random_stream && e.name.find("input_dropout") != std::string::npos;
    Tensor x = train::LoadVariable(Env::Default(), a_path, e.name);
    Tensor y = train::LoadVariable(Env::Default(), b_path, e.name);
    EXPECT_TRUE(x.dtype() == y.dtype() && x.shape() == y.shape() &&
                x.TotalBytes() == y.TotalBytes() &&
                std::memcmp(x.raw_data(), y.raw_data(), x.TotalBytes()) == 0)
        << e.name << ": " << x.DebugString() << " vs " << y.DebugString();
  }
  EXPECT_TRUE(has_dropout_stream);
  estimator_testing::LinearData eval = estimator_testing::MakeLinearData(50, 99);
  InputFn eval_fn =
      ArrayInputFn({.x = {{"x", eval.x}}, .y = eval.y, .batch_size = 10, .shuffle = false});
  EXPECT_EQ(a.Evaluate(eval_fn), b.Evaluate(eval_fn));
}

}  // namespace
}  // namespace loom
