// Data-parallel training across processes: launches `mpirun -np N` of
// distribute_mpi_worker (and of `loom train`) and compares what the ranks wrote. CTest
// label "mpi"; the environment allows running as root (CI) and oversubscribing.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "loom/distribute/distribute_mpi_test_util.h"

namespace loom::distribute {
namespace {

using namespace mpi_testing;  // NOLINT(google-build-using-namespace): the fixture

// The equivalence test across processes: 1, 2 and 3 ranks, 200 steps of the MLP
// (dense and sparse gradients, Adam, shuffling), final weights within 1e-5 relative;
// every rank holds the same values; only the chief wrote the shared model_dir.
TEST_F(MpiTest, OneTwoAndThreeRanksTrainTheSameModel) {
  for (int n : {1, 2, 3})
    Train(n, Path("model" + std::to_string(n)), Path("out" + std::to_string(n)), 200);
  const auto reference = ReadRank(Path("out1"), 0);
  ASSERT_FALSE(reference.empty());
  for (int n : {2, 3}) {
    for (int r = 0; r < n; ++r) {
      auto values = ReadRank(Path("out" + std::to_string(n)), r);
      ExpectSameModel(values, reference, StrCat(n, " ranks, rank ", r));
      EXPECT_EQ(ReadText(Path(StrCat("out", n, "/rank", r, "/result.txt"))), "200 200\n");
    }
    // One events file, one checkpoint series: the ranks never wrote the same file.
    EXPECT_EQ(CountEventFiles(Path("model" + std::to_string(n))), 1);
    std::set<std::string> names1, namesn;
    for (const auto& e : fs::directory_iterator(Path("model1")))
      if (!e.path().filename().string().starts_with("events")) names1.insert(e.path().filename());
    for (const auto& e : fs::directory_iterator(Path("model" + std::to_string(n))))
      if (!e.path().filename().string().starts_with("events")) namesn.insert(e.path().filename());
    EXPECT_EQ(names1, namesn);
  }
}

// Checkpoints hold the global input position: training 100 steps on one rank, then
// resuming to 200 on two, gives the model of 200 uninterrupted steps.
TEST_F(MpiTest, ResumesOnADifferentNumberOfRanksExactly) {
  Train(1, Path("straight"), Path("out_straight"), 200);
  Train(1, Path("resumed"), Path("out_first"), 100);
  Launch second = Train(2, Path("resumed"), Path("out_resumed"), 200);
  EXPECT_EQ(second.output.find("does not fit"), std::string::npos) << second.output;
  const auto want = ReadRank(Path("out_straight"), 0);
  for (int r = 0; r < 2; ++r) {
    ExpectSameModel(ReadRank(Path("out_resumed"), r), want, StrCat("resumed, rank ", r));
    EXPECT_EQ(ReadText(Path(StrCat("out_resumed/rank", r, "/result.txt"))), "200 100\n");
  }
}

TEST_F(MpiTest, AShorterShardStopsEveryRankAtTheSameStep) {
  Launch l =
      RunCommand(StrCat(Mpirun(2), LOOM_MPI_WORKER, " shorter ", Path("model"), " ", Path("out")));
  ASSERT_EQ(l.status, 0) << l.output;
  EXPECT_EQ(ReadText(Path("out/rank0/result.txt")), "7 7\n");
  EXPECT_EQ(ReadText(Path("out/rank1/result.txt")), "7 7\n");
}

// A rank that built another model or input is an error on every rank naming the first
// difference, before any variable or gradient is exchanged: not an MPI truncation error
// (another hidden size), not a silently trained mixture (another learning rate, same
// sizes), not an iterator-restore error that suggests restarting the input (another
// batch_size).
TEST_F(MpiTest, RanksThatBuiltDifferentModelsOrInputsFailNamingTheDifference) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"units", "hidden/kernel"},
      {"learning_rate", "Adam/learning_rate' Const() dtype=float64 value=<tensor float64[]"},
      {"batch", "batch_size=12"},
  };
  for (const auto& [what, named] : cases) {
    Launch l = RunCommand(StrCat(Mpirun(2), LOOM_MPI_WORKER, " mismatch ", Path("model_" + what),
                                 " ", Path("out_" + what), " ", what),
                          60);
    EXPECT_NE(l.status, 0) << what << ": " << l.output;
    EXPECT_NE(l.output.find("rank 1 did not build what rank 0 built"), std::string::npos)
        << what << ": " << l.output;
    EXPECT_NE(l.output.find(named), std::string::npos) << what << ": " << l.output;
    EXPECT_FALSE(fs::exists(Path("out_" + what + "/rank0/result.txt"))) << what;
  }
  // The same program on every rank (the seeds differ per rank by design) trains.
  Launch same = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " mismatch ", Path("model"), " ", Path("out"), " none"));
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(ReadText(Path("out/rank1/result.txt")), "20 20\n");
}

// A rank that leaves without Abort (its program caught the error and returned) would leave
// the others in their next collective forever; the collective timeout (3 s here) ends the
// job with a message naming the wait and the likely cause.
TEST_F(MpiTest, ARankThatLeavesWithoutAbortEndsTheJobAtTheCollectiveTimeout) {
  const auto begin = std::chrono::steady_clock::now();
  Launch l = RunCommand(
      StrCat(Mpirun(2), LOOM_MPI_WORKER, " leaves ", Path("model"), " ", Path("out")), 60);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_NE(l.status, 0) << l.output;
  EXPECT_NE(l.status, 128 + SIGKILL) << "the job hung until the test's timeout: " << l.output;
  EXPECT_LT(seconds, 40) << l.output;
  EXPECT_NE(l.output.find("rank 0 of 2 waited"), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("collective_timeout_seconds = 3"), std::string::npos) << l.output;
}

// SIGKILL on one rank ends the whole job quickly, and the message names the rank; the
// relaunch, on another number of ranks (2 -> 3), resumes from the last checkpoint exactly:
// the model of an uninterrupted one-rank run to the same step.
TEST_F(MpiTest, KillingOneRankEndsTheJobAndARelaunchOnMoreRanksResumesExactly) {
  Launch job;
  std::chrono::steady_clock::time_point ended;
  std::thread runner([&] {
    job = RunCommand(
        StrCat(Mpirun(2), LOOM_MPI_WORKER, " forever ", Path("model"), " ", Path("out")), 90);
    ended = std::chrono::steady_clock::now();
  });
  const std::string pid_file = Path("out/pid1");
  for (int i = 0; i < 600 && !fs::exists(pid_file); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The newest checkpoint's step, from the state file (0 when there is none yet).
  auto newest = [&] {
    const std::string state = ReadText(Path("model/checkpoint"));
    const size_t at = state.find("model.ckpt-");
    return at == std::string::npos ? int64_t{0} : std::stoll(state.substr(at + 11));
  };
  // Let it train past its first checkpoint after step 0 (every 50 steps).
  for (int i = 0; i < 600 && newest() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const pid_t pid = std::stoi(ReadText(pid_file).empty() ? "0" : ReadText(pid_file));
  ASSERT_GT(pid, 0) << "rank 1 never started";
  const auto killed = std::chrono::steady_clock::now();
  ::kill(pid, SIGKILL);
  runner.join();
  EXPECT_NE(job.status, 0);
  EXPECT_LT(std::chrono::duration<double>(ended - killed).count(), 30.0);
  EXPECT_NE(job.output.find("rank 1"), std::string::npos) << job.output;

  const int64_t saved = newest();
  ASSERT_GT(saved, 0) << ReadText(Path("model/checkpoint"));
  const int64_t target = saved + 30;
  Launch resumed = Train(3, Path("model"), Path("out_resumed"), target);
  EXPECT_NE(resumed.output.find("continues on 3"), std::string::npos) << resumed.output;
  Train(1, Path("straight"), Path("out_straight"), target);
  const auto want = ReadRank(Path("out_straight"), 0);
  for (int r = 0; r < 3; ++r) {
    ExpectSameModel(ReadRank(Path("out_resumed"), r), want, StrCat("resumed, rank ", r));
    EXPECT_EQ(ReadText(Path(StrCat("out_resumed/rank", r, "/result.txt"))),
              StrCat(target, " ", target - saved, "\n"));
  }
}

// `mpirun -np 2 loom train job.toml`: the same job file, one progress report (rank 0's),
// one events file.
TEST_F(MpiTest, LoomTrainUnderMpirun) {
  const std::string job = std::string(LOOM_SOURCE_DIR) + "/examples/jobs/dnn_classifier.toml";
  Launch l = RunCommand(StrCat(Mpirun(2), LOOM_CLI_PATH, " train ", job, " --model-dir ",
                               Path("model"), " --max-steps 40"));
  ASSERT_EQ(l.status, 0) << l.output;
  size_t first = l.output.find("trained to global step 40");
  ASSERT_NE(first, std::string::npos) << l.output;
  EXPECT_EQ(l.output.find("trained to global step", first + 1), std::string::npos) << l.output;
  EXPECT_NE(l.output.find("2 ranks"), std::string::npos) << l.output;
  EXPECT_EQ(CountEventFiles(Path("model")), 1);
  EXPECT_TRUE(fs::exists(Path("model/checkpoint")));

  // A global batch the ranks cannot share is an error naming both, on every rank at once.
  Launch three = RunCommand(StrCat(Mpirun(3), LOOM_CLI_PATH, " train ", job, " --model-dir ",
                                   Path("model3"), " --max-steps 10"));
  EXPECT_NE(three.status, 0);
  EXPECT_NE(three.output.find("batch_size 32 is the global batch, which the 3 ranks"),
            std::string::npos)
      << three.output;

  // A changed batch_size makes the checkpoint's input position another pipeline's: an
  // error on every rank, unless --restart-input, which every rank honours.
  std::string text = ReadText(job);
  const std::string examples = std::string(LOOM_SOURCE_DIR) + "/examples/jobs/";
  for (size_t at = 0; (at = text.find("\"data/", at)) != std::string::npos; at += examples.size()) {
    text.insert(at + 1, examples);  // the copy lives elsewhere: absolute data paths
  }
  const size_t batch = text.find("batch_size = 32");
  ASSERT_NE(batch, std::string::npos);
  text.replace(batch, 15, "batch_size = 16");
  const std::string job16 = Path("job16.toml");
  std::ofstream(job16) << text;
  Launch changed = RunCommand(StrCat(Mpirun(2), LOOM_CLI_PATH, " train ", job16, " --model-dir ",
                                     Path("model"), " --max-steps 50"));
  EXPECT_NE(changed.status, 0);
  EXPECT_NE(changed.output.find("--restart-input"), std::string::npos) << changed.output;
  Launch restarted = RunCommand(StrCat(Mpirun(2), LOOM_CLI_PATH, " train ", job16, " --model-dir ",
                                       Path("model"), " --max-steps 50 --restart-input"));
  ASSERT_EQ(restarted.status, 0) << restarted.output;
  EXPECT_NE(restarted.output.find("trained to global step 50"), std::string::npos)
      << restarted.output;

  // From an mpirun checkpoint to one process and back: the input position is global (one
  // process takes the pipeline of one rank of one), so each launch resumes it.
  Launch alone = RunCommand(
      StrCat(LOOM_CLI_PATH, " train ", job16, " --model-dir ", Path("model"), " --max-steps 55"));
  ASSERT_EQ(alone.status, 0) << alone.output;
  EXPECT_NE(alone.output.find("trained to global step 55"), std::string::npos) << alone.output;
  Launch again = RunCommand(StrCat(Mpirun(2), LOOM_CLI_PATH, " train ", job16, " --model-dir ",
                                   Path("model"), " --max-steps 60"));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("trained to global step 60"), std::string::npos) << again.output;

  // Other subcommands run in one process: N copies would write the same eval files.
  Launch evaluate = RunCommand(
      StrCat(Mpirun(2), LOOM_CLI_PATH, " evaluate ", job, " --model-dir ", Path("model")));
  EXPECT_NE(evaluate.status, 0);
  EXPECT_NE(evaluate.output.find("runs in one process; run it without mpirun"), std::string::npos)
      << evaluate.output;
  EXPECT_FALSE(fs::exists(Path("model/eval")));
}

}  // namespace
}  // namespace loom::distribute
