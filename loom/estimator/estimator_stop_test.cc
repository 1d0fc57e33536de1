// Stopping a trainer from outside: the model_dir lock (a second trainer is refused with
// the holder's pid; a SIGKILLed holder's lock is released by the OS) and graceful stop on
// SIGTERM / SIGINT / SIGUSR1 (the step finishes, End runs, the final checkpoint is at the
// step it stopped at, the exit status says which signal; a second signal kills at once).
// The trainer is estimator_kill_helper in a child process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "loom/base/logging.h"
#include "loom/estimator/child_trainer.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

using estimator_testing::TempDir;

using estimator_testing::ChildTrainer;

// save_steps 1000: only the final checkpoint (written by End) exists after a stop.
ChildTrainer StartStoppableHelper(const std::string& model_dir, int sleep_us,
                                  int64_t save_steps = 1000, int end_sleep_us = 0) {
  return ChildTrainer(LOOM_ESTIMATOR_KILL_HELPER,
                      {model_dir, "1000000", std::to_string(sleep_us), std::to_string(save_steps),
                       std::to_string(end_sleep_us)},
                      JoinPath(model_dir, "trainer.log"));
}

// Waits for the child to exit; kills it (and fails, with its output) when it does not in time.
int WaitFor(ChildTrainer& child, int seconds = 120) {
  int status = 0;
  if (child.WaitFor(seconds, &status)) return status;
  ADD_FAILURE() << "child " << child.pid() << " did not exit within " << seconds
                << " s; its output:\n"
                << child.Log();
  return child.Kill();
}

#define SKIP_UNDER_TSAN()                                                               \
  if (estimator_testing::kSkipSignalTests)                                              \
  GTEST_SKIP() << "stop signals are not delivered reliably under ThreadSanitizer (see " \
                  "child_trainer.h); this test runs in the Release and ASan builds"

int64_t StepOfCheckpointPath(const std::string& path) {
  return train::StepValue(train::LoadVariable(Env::Default(), path, "global_step"));
}

class StopSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(StopSignalTest, FirstSignalFinishesTheStepRunsEndAndSavesAtThatStep) {
  SKIP_UNDER_TSAN();
  const int signal = GetParam();
  TempDir dir;
  ChildTrainer child = StartStoppableHelper(dir.path(), 2000);
  ASSERT_TRUE(child.WaitForFile(dir.Join("running"))) << "the trainer did not start:\n"
                                                      << child.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  child.Signal(signal);
  const int status = WaitFor(child);
  ASSERT_TRUE(WIFEXITED(status)) << "the trainer died of signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ":\n"
                                 << child.Log();
  EXPECT_EQ(WEXITSTATUS(status), 128 + signal);
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("end_ran"))) << "End did not run";
  // The final checkpoint is at the step training stopped at (no periodic one exists
  // below step 1000), and the global step Train returned is that step.
  const std::string result = ReadFileToString(Env::Default(), dir.Join("result"));
  const int64_t stopped_at = std::stoll(result);
  EXPECT_EQ(result, StrCat(stopped_at, " ", signal, "\n"));
  EXPECT_GT(stopped_at, 0);
  EXPECT_LT(stopped_at, 1000);
  std::optional<std::string> latest = train::LatestValidCheckpoint(Env::Default(), dir.path());
  ASSERT_TRUE(latest.has_value()) << "no final checkpoint";
  EXPECT_EQ(*latest, dir.Join(StrCat("model.ckpt-", stopped_at)));
  EXPECT_EQ(StepOfCheckpointPath(*latest), stopped_at);
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignalTest, ::testing::Values(SIGTERM, SIGINT, SIGUSR1),
                         [](const auto& info) {
                           return info.param == SIGTERM  ? "SIGTERM"
                                  : info.param == SIGINT ? "SIGINT"
                                                         : "SIGUSR1";
                         });

TEST(StopSignalTest, SecondSignalExitsAtOnce) {
  SKIP_UNDER_TSAN();
  TempDir dir;
  // End sleeps 60 s: only a second signal can end the process quickly.
  ChildTrainer child = StartStoppableHelper(dir.path(), 2000, 1000, 60'000'000);
  ASSERT_TRUE(child.WaitForFile(dir.Join("running"))) << child.Log();
  child.Signal(SIGTERM);
  ASSERT_TRUE(child.WaitForFile(dir.Join("end_ran"), 60)) << "the first signal did not stop it:\n"
                                                          << child.Log();
  const auto start = std::chrono::steady_clock::now();
  child.Signal(SIGTERM);
  const int status = WaitFor(child, 20);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(Env::Default()->FileExists(dir.Join("result")));
}

TEST(StopSignalTest, HandlersAreRestoredAfterTrain) {
  struct sigaction before;
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &before), 0);
  TempDir dir;
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(40, 3);
  Estimator estimator(estimator_testing::LinearModelFn,
                      {.model_dir = dir.path(), .log_step_count_steps = 0});
  struct sigaction during {};
  class Probe : public SessionRunHook {
   public:
    explicit Probe(struct sigaction* out) : out_(out) {}
    void Begin(Graph&) override { ::sigaction(SIGTERM, nullptr, out_); }
    struct sigaction* out_;
  };
  estimator.Train(
      ArrayInputFn({.x = {{"x", data.x}}, .y = data.y, .batch_size = 8, .shuffle = false}),
      {.hooks = {std::make_shared<Probe>(&during)}, .steps = 2});
  EXPECT_NE(during.sa_handler, before.sa_handler) << "no handler during Train";
  struct sigaction after;
  ASSERT_EQ(::sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST(ModelDirLockTest, SecondTrainerInAnotherProcessIsRefusedUntilTheHolderDies) {
  TempDir dir;
  ChildTrainer child = StartStoppableHelper(dir.path(), 2000, 5);
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.WaitForFile(dir.Join("running"))) << child.Log();
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(40, 3);
  InputFn input_fn =
      ArrayInputFn({.x = {{"x", data.x}}, .y = data.y, .batch_size = 8, .shuffle = false});
  Estimator second(estimator_testing::LinearModelFn,
                   {.model_dir = dir.path(), .log_step_count_steps = 0});
  try {
    second.Train(input_fn, {.steps = 1});
    ADD_FAILURE() << "a second trainer on one model_dir must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    EXPECT_NE(e.message().find("is in use by another trainer"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(StrCat("pid ", pid, " on host ")), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(dir.path()), std::string::npos) << e.what();
  }
  const int status = child.Kill();
  ASSERT_TRUE(WIFSIGNALED(status));
  // The OS released the dead holder's lock: training resumes from its checkpoint (with
  // this test's own input, so not from the helper's input position).
  TrainResult result = second.Train(input_fn, {.steps = 1, .restart_input = true});
  EXPECT_EQ(result.steps_run, 1);
}

TEST(ModelDirLockTest, TwoEstimatorsInOneProcessOnOneModelDir) {
  TempDir dir;
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(40, 3);
  InputFn input_fn =
      ArrayInputFn({.x = {{"x", data.x}}, .y = data.y, .batch_size = 8, .shuffle = false});
  Estimator first(estimator_testing::LinearModelFn,
                  {.model_dir = dir.path(), .log_step_count_steps = 0});
  Estimator second(estimator_testing::LinearModelFn,
                   {.model_dir = dir.path(), .log_step_count_steps = 0});
  // While `first` trains, `second` tries to.
  class TrainOther : public SessionRunHook {
   public:
    TrainOther(Estimator& other, InputFn fn) : other_(other), fn_(std::move(fn)) {}
    void AfterCreateSession(Session&) override {
      try {
        other_.Train(fn_, {.steps = 1});
      } catch (const Error& e) {
        error = e.what();
      }
    }
    std::string error;

   private:
    Estimator& other_;
    InputFn fn_;
  };
  auto hook = std::make_shared<TrainOther>(second, input_fn);
  first.Train(input_fn, {.hooks = {hook}, .steps = 3});
  EXPECT_NE(hook->error.find("FailedPrecondition"), std::string::npos) << hook->error;
  EXPECT_NE(hook->error.find("is in use by another trainer"), std::string::npos) << hook->error;
  EXPECT_NE(hook->error.find(StrCat("pid ", ::getpid())), std::string::npos) << hook->error;
  // Released when Train returned.
  EXPECT_EQ(second.Train(input_fn, {.steps = 1}).global_step, 4);
}

// An existing model_dir where the lock file cannot be created (read-only: a mode-0555
// directory, or for root, who may write those, sysfs) is not writable, not "in use by
// another trainer" (both are FailedPrecondition from the Env).
TEST(ModelDirLockTest, UnwritableModelDirIsNotInUseByAnotherTrainer) {
  TempDir dir;
  std::string model_dir = dir.Join("ro");
  if (::geteuid() == 0) {
    model_dir = "/sys/kernel";
    if (!Env::Default()->IsDirectory(model_dir)) GTEST_SKIP() << "no " << model_dir;
  } else {
    Env::Default()->CreateDirs(model_dir);
    ASSERT_EQ(::chmod(model_dir.c_str(), 0555), 0);
  }
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(40, 3);
  Estimator estimator(estimator_testing::LinearModelFn,
                      {.model_dir = model_dir, .log_step_count_steps = 0});
  try {
    estimator.Train(
        ArrayInputFn({.x = {{"x", data.x}}, .y = data.y, .batch_size = 8, .shuffle = false}),
        {.steps = 1});
    ADD_FAILURE() << "training into an unwritable model_dir must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    EXPECT_NE(e.message().find("model_dir '" + model_dir + "' is not writable: "),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.message().find("another trainer"), std::string::npos) << e.what();
  }
  if (::geteuid() != 0) ::chmod(model_dir.c_str(), 0755);
}

// Flips one byte of a checkpoint's data section (the header stays valid).
void CorruptData(const std::string& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-3, std::ios::end);
  char c;
  f.get(c);
  f.seekp(-3, std::ios::end);
  f.put(static_cast<char>(c ^ 0x40));
}

TEST(CorruptCheckpointTest, SkippedCheckpointIsReportedOnceAndAllCorruptStopsTraining) {
  TempDir dir;
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(40, 3);
  InputFn input_fn = ArrayInputFn({.x = {{"x", data.x}},
                                   .y = data.y,
                                   .batch_size = 8,
                                   .num_epochs = std::nullopt,
                                   .shuffle = false});
  RunConfig config{.model_dir = dir.path(), .save_checkpoints_steps = 5, .log_step_count_steps = 0};
  Estimator(estimator_testing::LinearModelFn, config).Train(input_fn, {.max_steps = 10});
  CorruptData(dir.Join("model.ckpt-10.safetensors"));
  std::vector<std::string> skipped;
  auto count = [&](LogLevel level, const std::string& line) {
    if (line.find("skipped invalid checkpoint") != std::string::npos) skipped.push_back(line);
  };
  {
    ScopedLogSink sink(count);
    TrainResult result =
        Estimator(estimator_testing::LinearModelFn, config).Train(input_fn, {.max_steps = 12});
    EXPECT_EQ(result.global_step, 12);
    EXPECT_EQ(result.steps_run, 7);  // resumed from step 5
  }
  ASSERT_EQ(skipped.size(), 1u) << "printed " << skipped.size() << " times";
  EXPECT_NE(skipped[0].find("model.ckpt-10.safetensors"), std::string::npos) << skipped[0];
  // The corrupt file was set aside when step 10 was saved again, not deleted.
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("model.ckpt-10.safetensors.invalid")));

  // Every checkpoint corrupt: DataLoss naming them, and nothing is deleted.
  std::vector<std::string> corrupt;
  for (const std::string& name : Env::Default()->GetChildren(dir.path())) {
    if (name.starts_with("model.ckpt-") && name.ends_with(".safetensors")) {
      CorruptData(dir.Join(name));
      corrupt.push_back(name);
    }
  }
  ASSERT_FALSE(corrupt.empty());
  try {
    Estimator(estimator_testing::LinearModelFn, config).Train(input_fn, {.max_steps = 20});
    FAIL() << "training over corrupt checkpoints must stop";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    for (const auto& name : corrupt) {
      EXPECT_NE(e.message().find(name), std::string::npos) << name << ": " << e.what();
    }
  }
  for (const auto& name : corrupt) EXPECT_TRUE(Env::Default()->FileExists(dir.Join(name)));
  // The explicit option starts over from step 0 and keeps the files.
  config.start_over_if_checkpoints_corrupt = true;
  TrainResult result =
      Estimator(estimator_testing::LinearModelFn, config).Train(input_fn, {.max_steps = 3});
  EXPECT_EQ(result.global_step, 3);
  EXPECT_EQ(result.steps_run, 3);
  for (const auto& name : corrupt) EXPECT_TRUE(Env::Default()->FileExists(dir.Join(name)));
}

}  // namespace
}  // namespace loom
