// A disk-fault and damage campaign over everything a training run writes into model_dir:
// checkpoints, the `checkpoint` state file, the event file, the lock file. For every
// write, fsync, rename, close and file creation of a short train-and-checkpoint run, one
// run fails exactly that call (FaultInjectionEnv::FailNth) and then "crashes" (loses what
// was not fsynced). Every time:
//   - the run either reports the injected error (never another, obscure one) or succeeds;
//   - a fresh Estimator on the same model_dir resumes from the newest complete checkpoint,
//     whose every tensor is bit-identical to the fault-free run's at that step;
//   - the state file names no missing checkpoint, and every event file parses to its end.
// Then reader damage (a truncated or bit-flipped checkpoint or state file) and directories
// that vanish or are files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/base/fault_injection_env.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/io/event_file.h"
#include "loom/io/event_file_proto.h"
#include "loom/train/saver.h"
#include "loom/train/session_run_hook.h"

namespace loom {
namespace {

using estimator_testing::LinearData;
using estimator_testing::LinearModelFn;
using estimator_testing::MakeLinearData;
using estimator_testing::TrainInput;

constexpr char kModelDir[] = "/m";
constexpr int kSteps = 4;

RunConfig FaultConfig(Env* env) {
  RunConfig config;
  config.model_dir = kModelDir;
  config.tf_random_seed = 11;
  config.save_checkpoints_steps = 2;
  config.keep_checkpoint_max = 2;
  config.save_summary_steps = 1;
  config.log_step_count_steps = 1;
  config.env = env;
  return config;
}

// Every tensor of a checkpoint, by name, as its raw bytes (iterator and random states too).
std::map<std::string, std::string> CheckpointTensors(Env* env, const std::string& path) {
  std::map<std::string, std::string> out;
  const std::string file = train::CheckpointFilePath(path);
  for (const train::CheckpointEntry& e : train::ListVariables(env, file)) {
    const Tensor t = train::LoadVariable(env, file, e.name);
    out[e.name] = std::string(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
  return out;
}

std::vector<std::string> EventFiles(Env* env) {
  std::vector<std::string> out;
  if (!env->IsDirectory(kModelDir)) return out;
  for (const std::string& name : env->GetChildren(kModelDir)) {
    if (name.starts_with("events.out.tfevents.")) out.push_back(JoinPath(kModelDir, name));
  }
  return out;
}

// The fault-free run: the tensors of every checkpoint it writes (keep_checkpoint_max 0),
// and how many calls of each operation a faulty run makes.
struct Reference {
  std::map<int64_t, std::map<std::string, std::string>> tensors_at_step;
  int64_t calls[kNumFaultOps] = {};
};

const Reference& GetReference() {
  static const Reference* reference = [] {
    auto* r = new Reference;
    const LinearData data = MakeLinearData(64, 1);
    {
      // The counted run, with the campaign's config.
      auto mem = NewMemEnv();
      FaultInjectionEnv env(mem.get());
      {
        Estimator est(LinearModelFn, FaultConfig(&env));
        est.Train(TrainInput(data), {.steps = kSteps});
      }
      for (int op = 0; op < kNumFaultOps; ++op)
        r->calls[op] = env.num_ops(static_cast<FaultOp>(op));
    }
    auto mem = NewMemEnv();
    RunConfig config = FaultConfig(mem.get());
    config.keep_checkpoint_max = 0;
    {
      Estimator est(LinearModelFn, config);
      est.Train(TrainInput(data), {.steps = kSteps});
    }
    for (const std::string& name : mem->GetChildren(kModelDir)) {
      if (!name.ends_with(".safetensors")) continue;
      const std::string path = JoinPath(kModelDir, name.substr(0, name.size() - 12));
      r->tensors_at_step[train::CheckpointPathStep(path)] = CheckpointTensors(mem.get(), path);
    }
    return r;
  }();
  return *reference;
}

// What must hold after any fault and crash: see the file comment.
void ExpectRecoverable(FaultInjectionEnv& env, const Reference& ref) {
  // The state file names only checkpoints that exist.
  if (auto state = train::ReadCheckpointState(&env, kModelDir)) {
    for (const std::string& p : state->all_model_checkpoint_paths) {
      EXPECT_TRUE(env.FileExists(train::CheckpointFilePath(p))) << "state file names missing " << p;
    }
  }
  // Every event file parses to its end (no torn record).
  for (const std::string& file : EventFiles(&env)) {
    try {
      auto reader = EventFileReader::Open(&env, file);
      while (reader->Next()) {
      }
    } catch (const Error& e) {
      ADD_FAILURE() << "event file does not parse after the crash: " << e.what();
    }
  }
  // The newest complete checkpoint is bit-identical to the fault-free run's.
  const train::CheckpointScan scan = train::ScanCheckpoints(&env, kModelDir);
  int64_t step = 0;
  if (scan.latest) {
    step = train::CheckpointPathStep(*scan.latest);
    auto it = ref.tensors_at_step.find(step);
    ASSERT_NE(it, ref.tensors_at_step.end()) << *scan.latest;
    EXPECT_EQ(CheckpointTensors(&env, *scan.latest), it->second) << *scan.latest;
  }
  // A fresh Estimator resumes from it.
  Estimator fresh(LinearModelFn, FaultConfig(&env));
  const TrainResult result = fresh.Train(TrainInput(MakeLinearData(64, 1)), {.steps = 1});
  EXPECT_EQ(result.global_step, step + 1);
}

TEST(EstimatorFaultTest, EveryFailedWriteSyncRenameCloseOrCreateIsReportedAndRecoverable) {
  const Reference& ref = GetReference();
  ASSERT_GE(ref.tensors_at_step.size(), 2u);
  const LinearData data = MakeLinearData(64, 1);
  int reported = 0, succeeded = 0;
  for (int op_index = 0; op_index < kNumFaultOps; ++op_index) {
    const FaultOp op = static_cast<FaultOp>(op_index);
    ASSERT_GT(ref.calls[op_index], 0) << FaultOpName(op);
    for (int64_t n = 1; n <= ref.calls[op_index]; ++n) {
      SCOPED_TRACE(StrCat("failing ", FaultOpName(op), " #", n, " of ", ref.calls[op_index]));
      auto mem = NewMemEnv();
      FaultInjectionEnv env(mem.get());
      env.FailNth(op, n);
      try {
        Estimator est(LinearModelFn, FaultConfig(&env));
        est.Train(TrainInput(data), {.steps = kSteps});
        ++succeeded;
      } catch (const Error& e) {
        ++reported;
        // The injected error itself, with its path, not a consequence of it.
        EXPECT_NE(e.message().find("injected"), std::string::npos) << e.what();
        EXPECT_NE(e.message().find(kModelDir), std::string::npos) << e.what();
      }
      env.ClearFaults();
      env.DropUnsyncedData();  // and the machine crashes
      ExpectRecoverable(env, ref);
      if (::testing::Test::HasFailure()) return;  // one clear failure, not hundreds
    }
  }
  std::printf("fault campaign: %d injected failures reported, %d runs succeeded regardless\n",
              reported, succeeded);
  EXPECT_GT(reported, 0);
}

// The event file's last close (after the hooks' End flushed it) is the one write of
// training whose failure used to be only a log line of the FileWriter's destructor: failing
// each close in turn, exactly one run reports an event file's close, and only that one.
TEST(EstimatorFaultTest, AFailedCloseOfTheEventFileIsTrainsError) {
  const Reference& ref = GetReference();
  const LinearData data = MakeLinearData(64, 1);
  const int64_t closes = ref.calls[static_cast<int>(FaultOp::kClose)];
  int event_file_closes_reported = 0;
  for (int64_t n = 1; n <= closes; ++n) {
    auto mem = NewMemEnv();
    FaultInjectionEnv env(mem.get());
    env.FailNth(FaultOp::kClose, n);
    try {
      Estimator est(LinearModelFn, FaultConfig(&env));
      est.Train(TrainInput(data), {.steps = kSteps});
    } catch (const Error& e) {
      if (e.message().find("events.out.tfevents.") == std::string::npos) continue;
      ++event_file_closes_reported;
      EXPECT_NE(e.message().find("injected"), std::string::npos) << e.what();
      // The events were flushed before the close failed: all of them are in the file.
      env.ClearFaults();
      ASSERT_EQ(EventFiles(&env).size(), 1u);
      int checkpoint_events = 0;
      auto reader = EventFileReader::Open(&env, EventFiles(&env)[0]);
      while (auto event = reader->Next()) {
        checkpoint_events += event->has_session_log() &&
                             event->session_log().status() == proto::SessionLog::CHECKPOINT;
      }
      EXPECT_EQ(checkpoint_events, 3);  // steps 0, 2 and 4
    }
  }
  EXPECT_EQ(event_file_closes_reported, 1);
}

// Deletes model_dir after the n-th step: a cleanup script running during training.
class DeleteModelDirHook : public train::SessionRunHook {
 public:
  DeleteModelDirHook(Env* env, int after_steps) : env_(env), after_steps_(after_steps) {}
  void AfterRun(train::SessionRunContext&, const train::SessionRunValues&) override {
    if (++steps_ == after_steps_) env_->DeleteRecursively(kModelDir);
  }

 private:
  Env* env_;
  int after_steps_;
  int steps_ = 0;
};

TEST(EstimatorFaultTest, ModelDirDeletedMidTrainingIsFailedPreconditionNamingIt) {
  auto mem = NewMemEnv();
  Estimator est(LinearModelFn, FaultConfig(mem.get()));
  try {
    est.Train(TrainInput(MakeLinearData(64, 1)),
              {.hooks = {std::make_shared<DeleteModelDirHook>(mem.get(), 3)}, .steps = 6});
    FAIL() << "training went on into a deleted model_dir";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    EXPECT_NE(e.message().find(StrCat("'", kModelDir, "' was deleted")), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(mem->IsDirectory(kModelDir));  // not silently recreated
}

TEST(EstimatorFaultTest, ModelDirThatIsAFileIsFailedPreconditionNamingIt) {
  auto mem = NewMemEnv();
  WriteFileAtomically(mem.get(), kModelDir, "a file, not a directory");
  for (const std::string& model_dir : {std::string(kModelDir), StrCat(kModelDir, "/run1")}) {
    RunConfig config = FaultConfig(mem.get());
    config.model_dir = model_dir;
    Estimator est(LinearModelFn, config);
    try {
      est.Train(TrainInput(MakeLinearData(64, 1)), {.steps = 1});
      ADD_FAILURE() << model_dir;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
      EXPECT_NE(e.message().find(StrCat("'", kModelDir, "' is a file, not a directory")),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(ReadFileToString(mem.get(), kModelDir), "a file, not a directory");
}

// Damage to the newest checkpoint (truncated, or a byte flipped anywhere) or to the state
// file: training resumes from the older checkpoint (or, for damage that changes nothing
// read, the newest one, bit-identical), or stops with an error naming the file; it never
// loads garbage.
TEST(EstimatorFaultTest, DamagedCheckpointFallsBackOrNamesTheFileNeverLoadsGarbage) {
  const Reference& ref = GetReference();
  const LinearData data = MakeLinearData(64, 1);
  auto trained = NewMemEnv();
  {
    Estimator est(LinearModelFn, FaultConfig(trained.get()));
    est.Train(TrainInput(data), {.steps = kSteps});
  }
  const std::string newest = JoinPath(kModelDir, StrCat("model.ckpt-", kSteps, ".safetensors"));
  const std::string state_file = JoinPath(kModelDir, "checkpoint");
  const std::string good = ReadFileToString(trained.get(), newest);
  const std::string good_state = ReadFileToString(trained.get(), state_file);
  ASSERT_GT(good.size(), 16u);
  struct Damage {
    std::string file;
    std::string bytes;
    std::string what;
  };
  std::vector<Damage> damages;
  for (size_t size :
       {size_t{0}, size_t{4}, size_t{8}, size_t{20}, good.size() / 2, good.size() - 1}) {
    damages.push_back({newest, good.substr(0, size), StrCat("truncated to ", size)});
  }
  // Every byte of the length prefix, then bytes across the JSON header (the index
  // checksum covers tensor names, shapes, offsets and metadata: byte 408 of this file, a
  // digit of the iterator state's entry, once restored a wrong iterator state under a
  // valid data checksum) and across the data section.
  uint64_t header_len = 0;
  std::memcpy(&header_len, good.data(), 8);  // little-endian hosts
  const size_t data_start = 8 + header_len;
  ASSERT_LT(data_start, good.size());
  std::vector<size_t> flips;
  for (size_t at = 0; at < 8; ++at) flips.push_back(at);
  for (size_t at = 8; at < data_start; at += header_len / 29 + 1) flips.push_back(at);
  if (data_start > 408) flips.push_back(408);
  for (size_t at = data_start; at < good.size(); at += (good.size() - data_start) / 17 + 1) {
    flips.push_back(at);
  }
  for (size_t at : flips) {
    std::string bytes = good;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    damages.push_back({newest, bytes, StrCat("byte ", at, " flipped")});
  }
  for (size_t at : {size_t{0}, good_state.size() / 3, good_state.size() - 2}) {
    std::string bytes = good_state;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    damages.push_back({state_file, bytes, StrCat("state file byte ", at, " flipped")});
  }
  damages.push_back(
      {state_file, good_state.substr(0, good_state.size() / 2), "state file truncated"});
  int fell_back = 0, refused = 0;
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    auto mem = NewMemEnv();
    for (const std::string& name : trained->GetChildren(kModelDir)) {
      const std::string path = JoinPath(kModelDir, name);
      WriteFileAtomically(mem.get(), path, ReadFileToString(trained.get(), path));
    }
    WriteFileAtomically(mem.get(), damage.file, damage.bytes);
    Estimator est(LinearModelFn, FaultConfig(mem.get()));
    try {
      const TrainResult result = est.Train(TrainInput(data), {.steps = 1});
      if (result.global_step == 3) {
        ++fell_back;  // restored step 2, the older checkpoint
      } else {
        // Resumed from the damaged file: only when what it holds is intact.
        EXPECT_EQ(result.global_step, kSteps + 1);
        EXPECT_EQ(CheckpointTensors(mem.get(), JoinPath(kModelDir, StrCat("model.ckpt-", kSteps))),
                  ref.tensors_at_step.at(kSteps));
      }
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(e.message().find(damage.file), std::string::npos) << e.what();
    }
  }
  std::printf("damage: %zu cases, %d fell back to the older checkpoint, %d refused\n",
              damages.size(), fell_back, refused);
  EXPECT_GT(fell_back, 0);
}

}  // namespace
}  // namespace loom
