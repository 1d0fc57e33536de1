// Resume after a crash: a child process trains a small network with dropout through
// MonitoredTrainingSession (checkpoints every few steps, a seeded shuffled and repeated
// input pipeline whose position is in the checkpoint, a graph seed); the test SIGKILLs it
// at random moments several times (mid-step, mid-save, while restoring) and restarts it
// each time. Every restart resumes from the newest valid checkpoint with its global step,
// variables, iterator position and random-op streams, so every tensor of the final
// checkpoint equals, bit for bit, that of a run that was never interrupted; and two
// uninterrupted runs write identical files.
//
// Two input pipelines: rows of an array (FromTensorSlices, the fast index path), and
// tf.data's usual chain over TFRecord files: Interleave (parallel) -> ParseExamples
// (parallel) -> Map (parallel) -> Cache (in memory or in a file) -> Shuffle (reshuffled
// each pass) -> Repeat -> Batch -> Prefetch. Over the second, the trainer logs the ids of
// each step's examples (before that step's checkpoint is written), and every step a
// killed run trained must have seen exactly the examples the uninterrupted run saw at
// that step.
//
// LOOM_KILL_RESUME_KILLS (default 6) sets the kills of a round and LOOM_KILL_RESUME_SEED
// (default 20261203) the seed of the kill times; `make kill-resume KILLS=60` is a long run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "loom/base/env.h"
#include "loom/base/logging.h"
#include "loom/data/dataset.h"
#include "loom/data/file_sources.h"
#include "loom/io/example_builder.h"
#include "loom/io/record_writer.h"
#include "loom/ops/dropout.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/testing/same_checkpoint.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/monitored_session.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

constexpr int64_t kLastStep = 300;

// y = x · [1, -2, 3, 0.5] + 0.25 on row i's x.
std::vector<float> RowX(int i) {
  return {std::sin(i * 0.7f), std::cos(i * 1.3f), (i % 7) / 7.0f, (i % 3) - 1.0f};
}
float RowY(const std::vector<float>& x) { return x[0] - 2 * x[1] + 3 * x[2] + 0.5f * x[3] + 0.25f; }

// The array pipeline: 64 rows, shuffled, repeated, batched.
data::Dataset ArrayPipeline() {
  std::vector<float> xs, ys;
  for (int i = 0; i < 64; ++i) {
    std::vector<float> row = RowX(i);
    xs.insert(xs.end(), row.begin(), row.end());
    ys.push_back(RowY(row));
  }
  return data::FromTensorSlices({{"x", Tensor::FromVector(xs, Shape{64, 4})},
                                 {"y", Tensor::FromVector(ys, Shape{64, 1})}})
      .Shuffle(64, {.seed = 11})
      .Repeat()
      .Batch(8);
}

// kRecordFiles TFRecord files of kRecordsPerFile Examples {id, x, y}; ids are 1000 * file
// + record.
constexpr int kRecordFiles = 3;
constexpr int kRecordsPerFile = 25;

std::vector<std::string> WriteRecordFiles(const std::string& dir) {
  Env* env = Env::Default();
  env->CreateDirs(dir);
  std::vector<std::string> files;
  for (int f = 0; f < kRecordFiles; ++f) {
    files.push_back(JoinPath(dir, "part-" + std::to_string(f) + ".tfrecord"));
    auto writer = RecordWriter::Open(env, files.back(), {});
    for (int r = 0; r < kRecordsPerFile; ++r) {
      const int id = 1000 * f + r;
      std::vector<float> x = RowX(id);
      writer->WriteRecord(ExampleBuilder()
                              .AddInt64s("id", {id})
                              .AddFloats("x", x)
                              .AddFloats("y", {RowY(x)})
                              .Serialize());
    }
    writer->Close();
  }
  return files;
}

// The record pipeline over `files`: 75 examples, so the 8-example batches straddle passes
// and the Cache is filled by the first 9 steps (a checkpoint at step 3 or 6 holds a
// half-filled cache).
data::Dataset RecordPipeline(const std::vector<std::string>& files, const std::string& cache_file) {
  ExampleSpec spec;
  spec.fixed["id"] = {.dtype = kInt64};
  spec.fixed["x"] = {.dtype = kFloat32, .shape = {4}};
  spec.fixed["y"] = {.dtype = kFloat32, .shape = {1}};
  data::Dataset records = data::FromTensorSlices(Tensor::FromVector(files))
                              .Interleave(
                                  [](const data::Element& e) {
                                    return data::TFRecordDataset({e.at("x").scalar<std::string>()});
                                  },
                                  {{data::kRecordKey, {kString, Shape{}}}},
                                  {.cycle_length = 2, .block_length = 3, .num_parallel_calls = 2});
  return data::ParseExamples(records, spec, {.num_parallel_calls = 2})
      .Map(
          [](data::Element e) {  // a feature computed on worker threads: x scaled by 0.5
            Tensor scaled = e.at("x").Clone();
            for (float& v : scaled.flat<float>()) v *= 0.5f;
            e["x"] = scaled;
            return e;
          },
          {.num_parallel_calls = 3})
      .Cache(cache_file)
      .Shuffle(40, {.seed = 11, .reshuffle_each_iteration = true})
      .Repeat()
      .Batch(8)
      .Prefetch(2);
}

// Appends "STEP: ID ID ...\n" to a log file after each step, with one write(2) per line
// (a kill leaves whole lines, or a last line without its newline). A chief-only hook, so
// its AfterRun runs before the CheckpointSaverHook's: a step whose checkpoint exists was
// logged.
class ExampleLogHook : public train::SessionRunHook {
 public:
  ExampleLogHook(Output ids, Output step, std::string path)
      : ids_(ids), step_(step), path_(std::move(path)) {}
  void AfterCreateSession(Session& session) override {
    step_value_ = train::StepValue(session.Run({}, {step_})[0]);
  }
  train::SessionRunArgs BeforeRun(train::SessionRunContext&) override { return {{ids_}}; }
  void AfterRun(train::SessionRunContext&, const train::SessionRunValues& values) override {
    std::string line = std::to_string(++step_value_) + ":";
    for (int64_t id : values.results[0].flat<int64_t>()) line += " " + std::to_string(id);
    line += "\n";
    const int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
    LOOM_CHECK(fd >= 0) << path_;
    LOOM_CHECK(write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
    close(fd);
  }

 private:
  Output ids_, step_;
  std::string path_;
  int64_t step_value_ = 0;
};

// The file ExampleLogHook writes in checkpoint_dir.
std::string ExampleLogPath(const std::string& checkpoint_dir) {
  return checkpoint_dir + ".examples";
}

// Set before a test forks its trainers: Cache to this file in the checkpoint directory
// instead of memory ("": memory).
std::string g_cache_file;

// Trains until the global step reaches kLastStep, resuming from checkpoint_dir and saving
// every save_steps steps; over the record pipeline when record_files is not empty.
void Train(const std::string& checkpoint_dir, int save_steps,
           const std::vector<std::string>& record_files) {
  Graph graph({.seed = 17});  // seeds the initializers, the dropout and the iterator
  Scope s(graph);
  Variable step = train::GlobalStep(s);
  data::Dataset dataset =
      record_files.empty()
          ? ArrayPipeline()
          : RecordPipeline(record_files,
                           g_cache_file.empty() ? "" : JoinPath(checkpoint_dir, g_cache_file));
  auto it = dataset.MakeOneShotIterator(s);
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
  train::HookList logged_hooks;
  if (!record_files.empty()) {
    logged_hooks.push_back(
        std::make_shared<ExampleLogHook>(next.at("id"), step, ExampleLogPath(checkpoint_dir)));
  }
  auto session = train::MonitoredTrainingSession(
      graph, {.checkpoint_dir = checkpoint_dir,
              .hooks = {std::make_shared<train::StopAtStepHook>(
                  train::StopAtStepOptions{.last_step = kLastStep})},
              .chief_only_hooks = logged_hooks,
              .save_checkpoint_steps = save_steps,
              .save_summaries_steps = 0,
              .log_step_count_steps = 0,
              .save_graph_def = false,
              .session_options = {.intra_op_threads = 1}});
  while (!session->ShouldStop()) session->RunTarget(train_op);
  session->Close();
}

// Runs Train in a child process; returns its pid.
pid_t SpawnTrainer(const std::string& dir, int save_steps = 3,
                   const std::vector<std::string>& record_files = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      SetMinLogLevel(LogLevel::kWarning);
      Train(dir, save_steps, record_files);
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
// With a file Cache, the pipeline's identity in the iterator state holds the cache's path,
// which differs between two directories: its bytes are then not compared (the example
// log checks the position).
void ExpectSameTensors(const std::string& expected, const std::string& actual) {
  const loom::testing::CheckpointKinds kinds =
      loom::testing::ExpectSameCheckpointTensors(expected, actual, g_cache_file.empty());
  EXPECT_GE(kinds.random_streams, 1);  // the dropout's (and the initializers')
  EXPECT_EQ(kinds.iterator_states, 1);
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

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

// Trains into reference_dir uninterrupted, then into killed_dir killed `attempts` times
// (LOOM_KILL_RESUME_KILLS) and run to the end; returns the kills that landed mid-run.
int TrainReferenceAndKilled(const std::string& reference_dir, const std::string& killed_dir,
                            const std::vector<std::string>& record_files) {
  // Everything trains in children, so this process never forks with worker threads.
  std::filesystem::remove(ExampleLogPath(reference_dir));
  const int attempts = std::max(1, EnvInt("LOOM_KILL_RESUME_KILLS", 6));
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(WaitExitCode(SpawnTrainer(reference_dir, 3, record_files)), 0);
  // The kills land at random moments, scaled to what a whole run takes on this machine (a
  // fixed delay outlived the whole run on a fast one, and nothing was killed): each attempt
  // lives up to 1.5 / attempts of a run, so the attempts together cover about one run and
  // nearly every kill lands mid-run (while restoring, training or writing a checkpoint);
  // with delays up to half a run, the run ended after 2 of 40 kills.
  const auto run_us = std::max<int64_t>(2000, std::chrono::duration_cast<std::chrono::microseconds>(
                                                  std::chrono::steady_clock::now() - started)
                                                  .count());
  std::mt19937 rng(EnvInt("LOOM_KILL_RESUME_SEED", 20261203));
  int kills = 0, kills_leaving_temp_files = 0;
  // A run that finished before every kill (a machine suddenly much faster than during the
  // reference run) starts over in a fresh directory, at most three times.
  for (int round = 0; round < 3 && kills == 0; ++round) {
    std::filesystem::remove_all(killed_dir);
    std::filesystem::remove(ExampleLogPath(killed_dir));
    for (int attempt = 0; attempt < attempts; ++attempt) {
      const pid_t pid = SpawnTrainer(killed_dir, 3, record_files);
      std::this_thread::sleep_for(std::chrono::microseconds(
          run_us / 50 +
          static_cast<int64_t>(rng() % std::max<int64_t>(1, 3 * run_us / (2 * attempts)))));
      kill(pid, SIGKILL);
      const int code = WaitExitCode(pid);
      if (code == -SIGKILL) {
        ++kills;
        // A checkpoint's temporary file left behind: this kill landed mid-save.
        // (A kill before the trainer created its directory leaves none.)
        const std::vector<std::string> files = std::filesystem::exists(killed_dir)
                                                   ? Env::Default()->GetChildren(killed_dir)
                                                   : std::vector<std::string>{};
        for (const auto& f : files) {
          if (f.find(".tmp.") != std::string::npos) {
            ++kills_leaving_temp_files;
            break;
          }
        }
      } else {
        EXPECT_EQ(code, 0);  // finished before the kill: fine, but must have succeeded
      }
    }
  }
  EXPECT_EQ(WaitExitCode(SpawnTrainer(killed_dir, 3, record_files)), 0);
  EXPECT_GT(kills, 0);
  ::testing::Test::RecordProperty("kills", kills);
  ::testing::Test::RecordProperty("kills_mid_save", kills_leaving_temp_files);
  printf("%d of %d kills mid-run, %d of them mid-save (a temporary checkpoint file left)\n", kills,
         attempts, kills_leaving_temp_files);
  return kills;
}

// The final checkpoints of both directories hold the same tensors, and the model learned.
void ExpectSameFinalCheckpoint(const std::string& reference_dir, const std::string& killed_dir) {
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
}

TEST(KillResume, FinalVariablesEqualAnUninterruptedRun) {
  const std::string reference_dir = TempDir("reference");
  const std::string killed_dir = TempDir("killed");
  TrainReferenceAndKilled(reference_dir, killed_dir, {});
  ExpectSameFinalCheckpoint(reference_dir, killed_dir);
  std::filesystem::remove_all(reference_dir);
  std::filesystem::remove_all(killed_dir);
}

// Each step's logged ids, by step; a step logged twice (redone after a kill) must have
// seen the same examples both times. A last line cut by a kill is ignored.
std::map<int64_t, std::string> ReadExampleLog(const std::string& path) {
  std::map<int64_t, std::string> steps;
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t begin = 0;
  for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string line = text.substr(begin, end - begin);
    const size_t colon = line.find(':');
    EXPECT_NE(colon, std::string::npos) << path << ": " << line;
    if (colon == std::string::npos) continue;
    const int64_t step = std::stoll(line.substr(0, colon));
    const std::string ids = line.substr(colon + 1);
    auto [where, inserted] = steps.emplace(step, ids);
    EXPECT_TRUE(inserted || where->second == ids)
        << "step " << step << " was redone on other examples:" << where->second << " then" << ids;
  }
  return steps;
}

// The record pipeline's run, killed and resumed, saw at every step the examples of the
// uninterrupted run's step, and ends with its checkpoint.
void ExpectRecordPipelineResumesOnTheSameExamples(const std::string& name) {
  const std::vector<std::string> files = WriteRecordFiles(TempDir(name + "_records"));
  const std::string reference_dir = TempDir(name + "_reference");
  const std::string killed_dir = TempDir(name + "_killed");
  const int kills = TrainReferenceAndKilled(reference_dir, killed_dir, files);
  ExpectSameFinalCheckpoint(reference_dir, killed_dir);

  const std::map<int64_t, std::string> reference = ReadExampleLog(ExampleLogPath(reference_dir));
  ASSERT_EQ(reference.size(), static_cast<size_t>(kLastStep));
  EXPECT_EQ(reference.begin()->first, 1);
  // The first three passes (225 examples) each hold every example once, each pass in
  // another order (the Shuffle reshuffles each pass; the Cache replays the same elements).
  std::vector<std::string> order;
  for (const auto& [step, ids] : reference) {
    std::istringstream in(ids);
    for (std::string id; in >> id;) order.push_back(id);
  }
  constexpr size_t kPass = kRecordFiles * kRecordsPerFile;
  ASSERT_GE(order.size(), 3 * kPass);
  std::vector<std::vector<std::string>> passes;
  for (size_t p = 0; p < 3; ++p) {
    passes.emplace_back(order.begin() + p * kPass, order.begin() + (p + 1) * kPass);
    std::vector<std::string> sorted = passes.back();
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end()) << "pass " << p;
    if (p > 0) {
      EXPECT_NE(passes[p], passes[p - 1]) << "pass " << p << " repeated the order";
    }
  }

  const std::map<int64_t, std::string> killed = ReadExampleLog(ExampleLogPath(killed_dir));
  for (const auto& [step, ids] : killed) {
    ASSERT_TRUE(reference.count(step)) << step;
    EXPECT_EQ(ids, reference.at(step)) << "step " << step << " trained on other examples";
  }
  // A step is missing from the log only when a kill landed between its run and its log
  // line (and no later run redid it): at most one per kill.
  EXPECT_GE(killed.size() + kills, static_cast<size_t>(kLastStep));
  std::filesystem::remove_all(reference_dir);
  std::filesystem::remove_all(killed_dir);
}

TEST(KillResume, RecordPipelineResumesOnTheSameExamples) {
  ExpectRecordPipelineResumesOnTheSameExamples("records");
}

// The same with Cache(filename): a kill in the first pass leaves a partial cache file,
// which the resumed run must not read as a complete one.
TEST(KillResume, RecordPipelineWithAFileCacheResumesOnTheSameExamples) {
  g_cache_file = "input.cache";
  ExpectRecordPipelineResumesOnTheSameExamples("file_cache");
  g_cache_file.clear();
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
