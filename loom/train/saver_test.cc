// Checkpoints: round trip, the state file, max_to_keep, corruption, crash safety,
// iterator state, partial restore, and reading foreign safetensors files.
#include "loom/train/saver.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "loom/base/logging.h"
#include "loom/data/dataset.h"
#include "loom/io/safetensors.h"
#include "loom/ops/dropout.h"
#include "loom/ops/random.h"
#include "loom/train/runtime_test_util.h"

namespace loom::train {
namespace {

using testing::FakeClockEnv;
using testing::TempDir;
using testing::TinyModel;

// TinyModel plus an int32 matrix and a local variable (never saved).
struct Model : TinyModel {
  Variable m;
  Variable local;
  Model() {
    Scope s(graph);
    m = Variable(s.WithOpName("layer/m"),
                 Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
    local = Variable(s.WithOpName("count"), 0.0f, {.local = true});
  }
  std::unique_ptr<Session> NewSession() {
    auto session = std::make_unique<Session>(graph);
    Scope s(graph);
    session->RunTarget(GlobalVariablesInitializer(s));
    session->RunTarget(LocalVariablesInitializer(s));
    return session;
  }
};

TEST(Saver, RoundTripSkipsLocalVariables) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  for (int i = 0; i < 5; ++i) session->RunTarget(model.train_op);
  Saver saver(model.graph);
  EXPECT_EQ(saver.var_list(), (std::vector<std::string>{"global_step", "w", "layer/m"}));
  const std::string path = saver.Save(*session, dir.Join("model.ckpt"), 5);
  EXPECT_EQ(path, dir.Join("model.ckpt-5"));
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("model.ckpt-5.safetensors")));

  auto entries = ListVariables(Env::Default(), path);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[2].name, "layer/m");
  EXPECT_EQ(entries[2].dtype, kInt32);
  EXPECT_EQ(entries[2].shape, (Shape{2, 3}));
  auto index = ReadSafetensorsIndex(Env::Default(), dir.Join("model.ckpt-5.safetensors"));
  EXPECT_EQ(index.metadata.at("format"), "loom-checkpoint-1");
  EXPECT_EQ(index.metadata.at("global_step"), "5");
  EXPECT_TRUE(index.metadata.at("checksum").starts_with("crc32c:"));

  auto fresh = model.NewSession();
  saver.Restore(*fresh, path);
  EXPECT_EQ(StepValue(fresh->Eval(model.step)), 5);
  EXPECT_TRUE(fresh->Eval(model.w).Equals(Tensor::FromVector<float>({6, 7, 8})));
  EXPECT_TRUE(LoadVariable(Env::Default(), path, "w").Equals(Tensor::FromVector<float>({6, 7, 8})));
  // Training continues from the restored values (the variable was copied out of the file).
  fresh->RunTarget(model.train_op);
  EXPECT_TRUE(fresh->Eval(model.w).Equals(Tensor::FromVector<float>({7, 8, 9})));
}

TEST(Saver, StateFileAndMaxToKeep) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph, {.max_to_keep = 2});
  for (int step = 1; step <= 3; ++step) saver.Save(*session, dir.Join("model.ckpt"), step);
  EXPECT_FALSE(Env::Default()->FileExists(dir.Join("model.ckpt-1.safetensors")));
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("model.ckpt-2.safetensors")));
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("model.ckpt-3.safetensors")));
  const std::string text = ReadFileToString(Env::Default(), dir.Join("checkpoint"));
  EXPECT_TRUE(
      text.starts_with("model_checkpoint_path: \"model.ckpt-3\"\n"
                       "all_model_checkpoint_paths: \"model.ckpt-2\"\n"
                       "all_model_checkpoint_paths: \"model.ckpt-3\"\n"
                       "all_model_checkpoint_timestamps: "))
      << text;
  auto state = ReadCheckpointState(Env::Default(), dir.path());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->model_checkpoint_path, dir.Join("model.ckpt-3"));
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{dir.Join("model.ckpt-2"), dir.Join("model.ckpt-3")}));
  EXPECT_EQ(state->all_model_checkpoint_timestamps.size(), 2u);
  EXPECT_EQ(LatestCheckpoint(Env::Default(), dir.path()), dir.Join("model.ckpt-3"));

  // A new Saver (a restarted process) keeps managing the old files.
  Saver restarted(model.graph, {.max_to_keep = 2});
  restarted.Save(*session, dir.Join("model.ckpt"), 4);
  EXPECT_FALSE(Env::Default()->FileExists(dir.Join("model.ckpt-2.safetensors")));
  EXPECT_EQ(restarted.last_checkpoints(),
            (std::vector<std::string>{dir.Join("model.ckpt-3"), dir.Join("model.ckpt-4")}));
}

TEST(Saver, KeepCheckpointEveryNHours) {
  auto mem = NewMemEnv();
  FakeClockEnv env(mem.get());
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph, {.max_to_keep = 1, .keep_checkpoint_every_n_hours = 1, .env = &env});
  for (int step = 1; step <= 6; ++step) {
    env.AdvanceSecs(1800);  // half an hour per checkpoint
    saver.Save(*session, "/ckpt/model.ckpt", step);
  }
  // Kept forever: the first checkpoint written after each hour mark (steps 3 and 5);
  // plus the newest.
  std::vector<std::string> files;
  for (const auto& f : env.GetChildren("/ckpt")) {
    if (f.ends_with(".safetensors")) files.push_back(f);
  }
  EXPECT_EQ(files, (std::vector<std::string>{"model.ckpt-3.safetensors", "model.ckpt-5.safetensors",
                                             "model.ckpt-6.safetensors"}));
}

TEST(Saver, CorruptNewestCheckpointIsSkippedWithAWarning) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph);
  saver.Save(*session, dir.Join("model.ckpt"), 1);
  session->RunTarget(model.train_op);
  saver.Save(*session, dir.Join("model.ckpt"), 2);
  {  // Flip one byte of step 2's data section (the header stays valid).
    std::fstream f(dir.Join("model.ckpt-2.safetensors"),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-3, std::ios::end);
    char c;
    f.get(c);
    f.seekp(-3, std::ios::end);
    f.put(static_cast<char>(c ^ 0x40));
  }
  // And a newer one whose header is cut short.
  {
    std::ofstream f(dir.Join("model.ckpt-3.safetensors"), std::ios::binary);
    f << "\x40\x00\x00";
  }
  EXPECT_THROW(VerifyCheckpoint(Env::Default(), dir.Join("model.ckpt-2.safetensors")), Error);
  std::vector<std::string> warnings;
  std::optional<std::string> restored;
  {
    ScopedLogSink sink([&](LogLevel level, const std::string& line) {
      if (level == LogLevel::kWarning) warnings.push_back(line);
    });
    auto fresh = model.NewSession();
    restored = saver.RestoreLatest(*fresh, dir.path());
    EXPECT_EQ(StepValue(fresh->Eval(model.step)), 0);  // step 1's checkpoint holds step 0
    EXPECT_TRUE(fresh->Eval(model.w).Equals(Tensor::FromVector<float>({1, 2, 3})));
  }
  EXPECT_EQ(restored, dir.Join("model.ckpt-1"));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("model.ckpt-3.safetensors"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("model.ckpt-2.safetensors"), std::string::npos) << warnings[1];
  EXPECT_NE(warnings[1].find("crc32c"), std::string::npos) << warnings[1];
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

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : Env::Default()->GetChildren(dir)) {
    if (f.starts_with("model.ckpt-")) out.push_back(f);
  }
  return out;
}

TEST(Saver, AllCheckpointsCorruptIsDataLossNamingThemAndNothingIsDeleted) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  {
    Saver saver(model.graph, {.max_to_keep = 2});
    for (int step = 1; step <= 3; ++step) saver.Save(*session, dir.Join("model.ckpt"), step);
  }
  CorruptData(dir.Join("model.ckpt-2.safetensors"));
  CorruptData(dir.Join("model.ckpt-3.safetensors"));
  const std::string corrupt3 =
      ReadFileToString(Env::Default(), dir.Join("model.ckpt-3.safetensors"));
  Saver saver(model.graph, {.max_to_keep = 2});
  auto fresh = model.NewSession();
  std::vector<std::string> warnings;
  try {
    ScopedLogSink sink([&](LogLevel level, const std::string& line) {
      if (level == LogLevel::kWarning) warnings.push_back(line);
    });
    saver.RestoreLatest(*fresh, dir.path());
    FAIL() << "restoring from only corrupt checkpoints must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    EXPECT_NE(e.message().find("model.ckpt-2.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("model.ckpt-3.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("crc32c"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("--start-over-if-corrupt"), std::string::npos) << e.what();
  }
  EXPECT_EQ(warnings.size(), 2u);  // one per file, not two
  // Starting over explicitly trains from the initial values; the corrupt files survive
  // pruning, and the one a new save would overwrite is moved aside.
  EXPECT_EQ(saver.RestoreLatest(*fresh, dir.path(), {.start_over_if_all_corrupt = true}),
            std::nullopt);
  for (int step = 1; step <= 5; ++step) saver.Save(*fresh, dir.Join("model.ckpt"), step);
  EXPECT_EQ(Files(dir.path()),
            (std::vector<std::string>{"model.ckpt-2.safetensors.invalid",
                                      "model.ckpt-3.safetensors.invalid",
                                      "model.ckpt-4.safetensors", "model.ckpt-5.safetensors"}));
  EXPECT_EQ(ReadFileToString(Env::Default(), dir.Join("model.ckpt-3.safetensors.invalid")),
            corrupt3);
}

TEST(Saver, ACorruptNewerCheckpointIsNeverPrunedNorOverwritten) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  {
    Saver saver(model.graph, {.max_to_keep = 3});
    for (int step = 1; step <= 3; ++step) saver.Save(*session, dir.Join("model.ckpt"), step);
  }
  CorruptData(dir.Join("model.ckpt-3.safetensors"));
  Saver saver(model.graph, {.max_to_keep = 3});
  auto fresh = model.NewSession();
  EXPECT_EQ(saver.RestoreLatest(*fresh, dir.path()), dir.Join("model.ckpt-2"));
  for (int step = 3; step <= 7; ++step) saver.Save(*fresh, dir.Join("model.ckpt"), step);
  EXPECT_EQ(Files(dir.path()), (std::vector<std::string>{
                                   "model.ckpt-3.safetensors.invalid", "model.ckpt-5.safetensors",
                                   "model.ckpt-6.safetensors", "model.ckpt-7.safetensors"}));
}

TEST(Saver, StateFileMissingOrShortIsRebuiltFromTheDirectory) {
  for (const bool delete_state : {true, false}) {
    TempDir dir;
    Model model;
    auto session = model.NewSession();
    {
      Saver keep_all(model.graph, {.max_to_keep = 0});
      for (int step = 1; step <= 9; ++step) keep_all.Save(*session, dir.Join("model.ckpt"), step);
    }
    if (delete_state) {
      Env::Default()->DeleteFile(dir.Join("checkpoint"));
    } else {  // a state file that lists only the newest two
      CheckpointState state = *ReadCheckpointState(Env::Default(), dir.path());
      state.all_model_checkpoint_paths = {dir.Join("model.ckpt-8"), dir.Join("model.ckpt-9")};
      state.all_model_checkpoint_timestamps = {1, 2};
      WriteCheckpointState(Env::Default(), dir.path(), state);
    }
    Saver saver(model.graph, {.max_to_keep = 5});
    auto fresh = model.NewSession();
    EXPECT_EQ(saver.RestoreLatest(*fresh, dir.path()), dir.Join("model.ckpt-9"));
    saver.Save(*fresh, dir.Join("model.ckpt"), 10);
    EXPECT_EQ(Files(dir.path()),
              (std::vector<std::string>{"model.ckpt-10.safetensors", "model.ckpt-6.safetensors",
                                        "model.ckpt-7.safetensors", "model.ckpt-8.safetensors",
                                        "model.ckpt-9.safetensors"}))
        << (delete_state ? "state file deleted" : "state file short");
    EXPECT_EQ(ReadCheckpointState(Env::Default(), dir.path())->all_model_checkpoint_paths.size(),
              5u);
  }
}

TEST(Saver, FailedWriteLeavesThePreviousCheckpointIntact) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph, {.env = &env});
  saver.Save(*session, "/ckpt/model.ckpt", 1);
  const std::string state_before = ReadFileToString(&env, "/ckpt/checkpoint");
  session->RunTarget(model.train_op);
  for (int fault = 0; fault < 4; ++fault) {
    if (fault == 0) env.FailNthAppend(2, /*short_write=*/true);  // torn mid-file
    if (fault == 1) env.SetFreeSpace(40);                        // disk full
    if (fault == 2) env.SetSyncFails(true);
    if (fault == 3) env.SetRenameFails(true);
    EXPECT_THROW(saver.Save(*session, "/ckpt/model.ckpt", 2), Error) << "fault " << fault;
    env.ClearFaults();
    EXPECT_FALSE(env.FileExists("/ckpt/model.ckpt-2.safetensors")) << "fault " << fault;
    EXPECT_EQ(ReadFileToString(&env, "/ckpt/checkpoint"), state_before);
    std::vector<std::string> temps;
    for (const auto& f : env.GetChildren("/ckpt")) {
      if (f.find(".tmp.") != std::string::npos) temps.push_back(f);
    }
    EXPECT_TRUE(temps.empty()) << temps[0];
  }
  // A crash that loses everything not synced keeps the synced checkpoint.
  env.DropUnsyncedData();
  auto fresh = model.NewSession();
  EXPECT_EQ(LatestValidCheckpoint(&env, "/ckpt"), "/ckpt/model.ckpt-1");
  Saver(model.graph, {.env = &env}).RestoreLatest(*fresh, "/ckpt");
  EXPECT_TRUE(fresh->Eval(model.w).Equals(Tensor::FromVector<float>({1, 2, 3})));
}

// A failure (or a crash) between pruning and the state file's update must not leave a
// state file that names a deleted checkpoint: the state file is written first.
TEST(Saver, StateFileNeverNamesAPrunedCheckpoint) {
  auto mem = NewMemEnv();
  FaultInjectionEnv env(mem.get());
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph, {.max_to_keep = 2, .env = &env});
  saver.Save(*session, "/ckpt/model.ckpt", 1);
  saver.Save(*session, "/ckpt/model.ckpt", 2);
  // Save 3: the checkpoint's rename succeeds, the state file's (the second) fails.
  env.FailNth(FaultOp::kRename, 2);
  EXPECT_THROW(saver.Save(*session, "/ckpt/model.ckpt", 3), Error);
  env.ClearFaults();
  auto state = ReadCheckpointState(&env, "/ckpt");
  ASSERT_TRUE(state);
  for (const std::string& p : state->all_model_checkpoint_paths) {
    EXPECT_TRUE(env.FileExists(CheckpointFilePath(p))) << "the state file names deleted " << p;
  }
  // The next Save catches up: the state file lists exactly the files on disk.
  saver.Save(*session, "/ckpt/model.ckpt", 4);
  state = ReadCheckpointState(&env, "/ckpt");
  ASSERT_TRUE(state);
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{"/ckpt/model.ckpt-3", "/ckpt/model.ckpt-4"}));
  EXPECT_EQ(env.Glob("/ckpt/*.safetensors"),
            (std::vector<std::string>{"/ckpt/model.ckpt-3.safetensors",
                                      "/ckpt/model.ckpt-4.safetensors"}));
}

// The checkpoint directory deleted mid-training: a clear FailedPrecondition naming it, not
// a silently recreated directory missing every earlier checkpoint.
TEST(Saver, DirectoryDeletedAfterASaveIsFailedPreconditionNamingIt) {
  auto env = NewMemEnv();
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph, {.env = env.get()});
  saver.Save(*session, "/ckpt/model.ckpt", 1);
  env->DeleteRecursively("/ckpt");
  try {
    saver.Save(*session, "/ckpt/model.ckpt", 2);
    FAIL() << "saved into a recreated directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    EXPECT_NE(e.message().find("'/ckpt' was deleted"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(env->IsDirectory("/ckpt"));
}

// A checkpoint directory that is a regular file: FailedPrecondition naming it.
TEST(Saver, DirectoryThatIsAFileIsFailedPreconditionNamingIt) {
  TempDir dir;
  WriteFileAtomically(Env::Default(), dir.Join("model_dir"), "not a directory");
  Model model;
  auto session = model.NewSession();
  Saver saver(model.graph);
  try {
    saver.Save(*session, dir.Join("model_dir/model.ckpt"), 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
    EXPECT_NE(e.message().find(StrCat("'", dir.Join("model_dir"), "' is a file, not a directory")),
              std::string::npos)
        << e.what();
  }
}

TEST(Saver, StaleTempFilesFromAKilledWriterAreRemoved) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  WriteFileAtomically(Env::Default(), dir.Join("model.ckpt-9.safetensors.tmp.1234.0"), "partial");
  Saver(model.graph).Save(*session, dir.Join("model.ckpt"), 1);
  EXPECT_FALSE(Env::Default()->FileExists(dir.Join("model.ckpt-9.safetensors.tmp.1234.0")));
  // A checkpoint the state file does not list yet (a crash between the checkpoint's
  // rename and the state file's) is found too.
  const std::string state = ReadFileToString(Env::Default(), dir.Join("checkpoint"));
  Saver(model.graph).Save(*session, dir.Join("other"), 7);
  WriteFileAtomically(Env::Default(), dir.Join("checkpoint"), state);
  EXPECT_EQ(LatestValidCheckpoint(Env::Default(), dir.path()), dir.Join("other-7"));
}

TEST(Saver, PartialRestoreWithNameMap) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  session->RunTarget(model.train_op);
  Saver saver(model.graph);
  const std::string path = saver.Save(*session, dir.Join("model.ckpt"), 1);

  Graph other;
  Scope s(other);
  Variable renamed(s.WithOpName("encoder/w"), Tensor::FromVector<float>({0, 0, 0}));
  Variable untouched(s.WithOpName("head"), 5.0f);
  Session fresh(other);
  fresh.RunTarget(GlobalVariablesInitializer(s));
  Saver partial(other);
  partial.Restore(fresh, path, {.variables = {"encoder/w"}, .name_map = {{"encoder/w", "w"}}});
  EXPECT_TRUE(fresh.Eval(renamed).Equals(Tensor::FromVector<float>({2, 3, 4})));
  EXPECT_EQ(fresh.Eval(untouched).scalar<float>(), 5);
  try {
    partial.Restore(fresh, path);  // "head" and "encoder/w" are not in the file
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("encoder/w"), std::string::npos) << e.what();
  }
  partial.Restore(fresh, path, {.name_map = {{"encoder/w", "w"}}, .allow_missing = true});
}

// Restoring a checkpoint of another model (a model_dir shared by two) says so, with what
// is missing and what is foreign, and writes no variable (it wrote those it found first).
TEST(Saver, CheckpointOfAnotherModelSaysSoAndRestoresNothing) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  session->RunTarget(model.train_op);
  const std::string path = Saver(model.graph).Save(*session, dir.Join("model.ckpt"), 1);
  Graph other;
  Scope s(other);
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({0, 0, 0}));
  Variable kernel(s.WithOpName("dense/kernel"), Tensor::FromVector<float>({0, 0}));
  Variable bias(s.WithOpName("dense/bias"), 0.0f);
  Session fresh(other);
  fresh.RunTarget(GlobalVariablesInitializer(s));
  try {
    Saver(other).Restore(fresh, path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    const std::string m = e.message();
    EXPECT_NE(m.find("has no tensor 'dense/kernel' for variable 'dense/kernel' (2 of the 3 "
                     "variables restored are missing)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("it holds 2 tensor(s) that are no variable of this graph"), std::string::npos)
        << m;
    EXPECT_NE(m.find("checkpoint of another model: train this one in another model_dir"),
              std::string::npos)
        << m;
  }
  EXPECT_TRUE(fresh.Eval(w).Equals(Tensor::FromVector<float>({0, 0, 0}))) << "w was restored";
}

TEST(Saver, ShapeMismatchNamesBoth) {
  TempDir dir;
  Model model;
  auto session = model.NewSession();
  const std::string path = Saver(model.graph).Save(*session, dir.Join("model.ckpt"), 0);
  Graph other;
  Scope s(other);
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({1, 2}));
  Session fresh(other);
  try {
    Saver(other).Restore(fresh, path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("[3]"), std::string::npos) << e.what();
  }
}

TEST(Saver, IteratorStateResumesMidEpoch) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  GlobalStep(s);
  auto it = data::FromTensorSlices(Tensor::FromVector<int64_t>({10, 11, 12, 13, 14, 15}))
                .Shuffle(6, {.seed = 7})
                .MakeOneShotIterator(s);
  Output next = it.GetNext().begin()->second;
  Saver saver(graph);
  std::vector<int64_t> uninterrupted;
  {
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    for (int i = 0; i < 6; ++i) uninterrupted.push_back(session.Eval(next).scalar<int64_t>());
  }
  std::vector<int64_t> resumed;
  {
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    for (int i = 0; i < 2; ++i) resumed.push_back(session.Eval(next).scalar<int64_t>());
    saver.Save(session, dir.Join("model.ckpt"), 2);
  }
  auto entries = ListVariables(Env::Default(), dir.Join("model.ckpt-2"));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_TRUE(entries[1].is_iterator_state);
  EXPECT_EQ(entries[1].dtype, kUInt8);
  {
    // Restored before the iterator exists (the state is pending), then saved at once, as
    // CheckpointSaverHook does in AfterCreateSession: the position must survive.
    Session session(graph);
    ASSERT_TRUE(saver.RestoreLatest(session, dir.path()));
    saver.Save(session, dir.Join("model.ckpt"), 3);
  }
  {
    Session session(graph);
    ASSERT_EQ(saver.RestoreLatest(session, dir.path()), dir.Join("model.ckpt-3"));
    for (int i = 0; i < 4; ++i) resumed.push_back(session.Eval(next).scalar<int64_t>());
    EXPECT_THROW(session.Eval(next), Error);
  }
  EXPECT_EQ(resumed, uninterrupted);
}

// Issue 9 item 1: a random op's stream position is in the checkpoint, so a session
// restored from it draws what the uninterrupted session draws next, seeded or not.
TEST(Saver, RandomStreamsResumeExactly) {
  for (int64_t graph_seed : {int64_t{5}, int64_t{-1}}) {
    TempDir dir;
    Graph graph({.seed = graph_seed});
    Scope s(graph);
    GlobalStep(s);
    Output mask = Dropout(s.WithOpName("drop"),
                          Const(s, Tensor::FromVector<float>(std::vector<float>(64, 1.f))), 0.5);
    Output noise = RandomNormal(s.WithOpName("noise"), {16});
    Saver saver(graph);
    std::vector<Tensor> uninterrupted, resumed;
    {
      Session session(graph);
      session.RunTarget(GlobalVariablesInitializer(s));
      for (int i = 0; i < 5; ++i) {
        auto out = session.Run({}, {mask, noise});
        uninterrupted.insert(uninterrupted.end(), out.begin(), out.end());
        if (i == 2) saver.Save(session, dir.Join("model.ckpt"), 3);
      }
    }
    Session session(graph);
    ASSERT_TRUE(saver.RestoreLatest(session, dir.path()));
    for (int i = 0; i < 2; ++i) {
      auto out = session.Run({}, {mask, noise});
      resumed.insert(resumed.end(), out.begin(), out.end());
    }
    for (size_t i = 0; i < resumed.size(); ++i) {
      EXPECT_TRUE(resumed[i].Equals(uninterrupted[6 + i]))
          << "graph seed " << graph_seed << " output " << i;
    }
    EXPECT_FALSE(uninterrupted[0].Equals(uninterrupted[2]));  // each run draws anew
    int streams = 0;
    for (const CheckpointEntry& e : ListVariables(Env::Default(), dir.Join("model.ckpt-3"))) {
      if (!e.is_random_stream) continue;
      ++streams;
      EXPECT_EQ(e.dtype, kInt64);
      EXPECT_EQ(e.shape, Shape{2});
      EXPECT_EQ(LoadVariable(Env::Default(), dir.Join("model.ckpt-3"), e.name).data<int64_t>()[0],
                3)
          << e.name << " ran 3 times";
    }
    EXPECT_EQ(streams, 2);
    // Without restoring them, the streams start over and the numbers differ.
    Session fresh(graph);
    saver.Restore(fresh, dir.Join("model.ckpt-3"), {.restore_random_streams = false});
    if (graph_seed >= 0)
      EXPECT_TRUE(fresh.Eval(noise).Equals(uninterrupted[1]));
    else
      EXPECT_FALSE(fresh.Eval(noise).Equals(uninterrupted[7]));
  }
}

// A damaged iterator state in a checkpoint (here: a buffered row index past the source's
// 6 rows, which Gather used to copy from outside the tensor) is DataLoss naming the
// checkpoint, when the pending restore is applied at the first GetNext.
TEST(Saver, CorruptIteratorStateIsDataLossNamingTheCheckpoint) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  GlobalStep(s);
  auto it = data::FromTensorSlices(Tensor::FromVector<int64_t>({10, 11, 12, 13, 14, 15}))
                .Shuffle(6, {.seed = 7})
                .MakeOneShotIterator(s);
  Output next = it.GetNext().begin()->second;
  Saver saver(graph);
  {
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    for (int i = 0; i < 2; ++i) session.Eval(next);
    saver.Save(session, dir.Join("model.ckpt"), 2);
  }
  const std::string path = dir.Join("model.ckpt-2.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : ReadSafetensors(Env::Default(), path)) {
    Tensor copy = t.Clone();
    if (name.starts_with(kIteratorStatePrefix)) {
      // The tail of the blob: ... [4 buffered row indices][source position 6].
      char* bytes = static_cast<char*>(copy.raw_data());
      int64_t v = 0;
      std::memcpy(&v, bytes + copy.TotalBytes() - 8, 8);
      ASSERT_EQ(v, 6) << "the state layout changed";
      v = 1000;
      std::memcpy(bytes + copy.TotalBytes() - 16, &v, 8);
    }
    tensors.push_back({name, copy});
  }
  WriteSafetensors(Env::Default(), path, tensors);  // no checksum: Verify accepts it
  Session session(graph);
  saver.Restore(session, dir.Join("model.ckpt-2"));
  try {
    session.Eval(next);
    FAIL() << "restored a row index past the source";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    EXPECT_NE(e.message().find("model.ckpt-2.safetensors"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("row 1000 of a source with 6 rows"), std::string::npos) << e.what();
  }
}

TEST(Saver, ReadsTheSharedSafetensorsFiles) {
  const std::string dir = std::string(LOOM_SHARED_TESTDATA) + "/safetensors";
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << "no " << dir << " (the repository's testdata/)";
  int files = 0;
  for (const auto& name : Env::Default()->GetChildren(dir)) {
    const std::string path = JoinPath(dir, name);
    auto entries = ListVariables(Env::Default(), path);
    ASSERT_FALSE(entries.empty()) << path;
    VerifyCheckpoint(Env::Default(), path);  // no checksum: only the header is checked
    for (const auto& e : entries) {
      EXPECT_EQ(e.shape, (Shape{6})) << path << " " << e.name;
      Tensor t = LoadVariable(Env::Default(), path, e.name);
      EXPECT_EQ(t.NumElements(), 6) << path << " " << e.name;
    }
    ++files;
  }
  EXPECT_EQ(files, 10);
  auto overall = ListVariables(Env::Default(), JoinPath(dir, "overall.safetensors"));
  std::vector<std::string> names;
  for (const auto& e : overall) names.push_back(e.name + ":" + e.file_dtype);
  EXPECT_EQ(names, (std::vector<std::string>{"B:U8", "H:U16", "I:U32", "b:I8", "d:F64", "e:F16",
                                             "f:F32", "h:I16", "i:I32"}));
}

TEST(CheckpointState, ReadsTheStateFileTensorFlowWrote) {
  const std::string dir = std::string(LOOM_SHARED_TESTDATA) + "/tfevents/tfx_estimator_model_dir";
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << "no " << dir << " (the repository's testdata/)";
  auto state = ReadCheckpointState(Env::Default(), dir);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->model_checkpoint_path, JoinPath(dir, "model.ckpt-1000"));
  EXPECT_EQ(
      state->all_model_checkpoint_paths,
      (std::vector<std::string>{JoinPath(dir, "model.ckpt-0"), JoinPath(dir, "model.ckpt-999"),
                                JoinPath(dir, "model.ckpt-1000")}));
}

TEST(CheckpointState, RoundTripsEscapesAndAbsolutePaths) {
  auto env = NewMemEnv();
  env->CreateDirs("/d");
  CheckpointState state{.model_checkpoint_path = "/d/we\"ird\\name-1",
                        .all_model_checkpoint_paths = {"/elsewhere/x-0", "/d/we\"ird\\name-1"},
                        .all_model_checkpoint_timestamps = {1.5, 2.25},
                        .last_preserved_timestamp = 1.5};
  WriteCheckpointState(env.get(), "/d", state);
  auto back = ReadCheckpointState(env.get(), "/d");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->model_checkpoint_path, state.model_checkpoint_path);
  EXPECT_EQ(back->all_model_checkpoint_paths, state.all_model_checkpoint_paths);
  EXPECT_EQ(back->all_model_checkpoint_timestamps, state.all_model_checkpoint_timestamps);
  EXPECT_EQ(back->last_preserved_timestamp, 1.5);
  WriteFileAtomically(env.get(), "/d/checkpoint", "model_checkpoint_path \"x\"\n");
  EXPECT_THROW(ReadCheckpointState(env.get(), "/d"), Error);
}

}  // namespace
}  // namespace loom::train
