#include "loom/base/env.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "loom/base/error.h"
#include "loom/base/fault_injection_env.h"

namespace loom {
namespace {

TEST(PathTest, JoinDirnameBasename) {
  EXPECT_EQ(JoinPath("a", "b"), "a/b");
  EXPECT_EQ(JoinPath("a/", "b"), "a/b");
  EXPECT_EQ(JoinPath("a", "/b"), "a/b");
  EXPECT_EQ(JoinPath("", "b"), "b");
  EXPECT_EQ(JoinPath("a", ""), "a");
  EXPECT_EQ(Dirname("a/b"), "a");
  EXPECT_EQ(Dirname("/a/b/c.txt"), "/a/b");
  EXPECT_EQ(Dirname("/a"), "/");
  EXPECT_EQ(Dirname("a"), "");
  EXPECT_EQ(Basename("a/b"), "b");
  EXPECT_EQ(Basename("b"), "b");
  EXPECT_EQ(Basename("/a/"), "");
}

// Runs every test on the POSIX Env (in a fresh temporary directory) and the memory Env.
class EnvTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      env_ = Env::Default();
      char tmpl[] = "/tmp/loom_env_test_XXXXXX";
      ASSERT_NE(::mkdtemp(tmpl), nullptr);
      root_ = tmpl;
    } else {
      mem_ = NewMemEnv();
      env_ = mem_.get();
      root_ = "/mem";
      env_->CreateDirs(root_);
    }
  }
  void TearDown() override {
    if (GetParam() && !root_.empty()) env_->DeleteRecursively(root_);
  }
  std::string Path(std::string_view name) { return JoinPath(root_, name); }
  void Write(const std::string& path, std::string_view data) {
    auto file = env_->NewWritableFile(path);
    file->Append(data);
    file->Close();
  }

  std::unique_ptr<Env> mem_;
  Env* env_ = nullptr;
  std::string root_;
};

TEST_P(EnvTest, WriteThenReadBack) {
  const std::string path = Path("a.txt");
  auto file = env_->NewWritableFile(path);
  file->Append("hello ");
  file->Append(std::string(100000, 'x'));  // larger than the POSIX write buffer
  file->Append("!");
  file->Flush();
  file->Sync();
  file->Close();
  const std::string expected = "hello " + std::string(100000, 'x') + "!";
  EXPECT_TRUE(env_->FileExists(path));
  EXPECT_EQ(env_->GetFileSize(path), expected.size());
  EXPECT_EQ(ReadFileToString(env_, path), expected);

  auto seq = env_->NewSequentialFile(path);
  char buf[6];
  ASSERT_EQ(seq->Read(6, buf), 6u);
  EXPECT_EQ(std::string(buf, 6), "hello ");
  seq->Skip(100000);
  ASSERT_EQ(seq->Read(6, buf), 1u);
  EXPECT_EQ(buf[0], '!');
  EXPECT_EQ(seq->Read(6, buf), 0u);

  auto random = env_->NewRandomAccessFile(path);
  EXPECT_EQ(random->Size(), expected.size());
  ASSERT_EQ(random->Read(2, 3, buf), 3u);
  EXPECT_EQ(std::string(buf, 3), "llo");
  EXPECT_EQ(random->Read(expected.size() - 2, 6, buf), 2u);  // short at the end
  EXPECT_EQ(random->Read(expected.size() + 10, 6, buf), 0u);
}

TEST_P(EnvTest, AppendableFileKeepsContents) {
  const std::string path = Path("log");
  Write(path, "one");
  auto file = env_->NewAppendableFile(path);
  file->Append("two");
  file->Close();
  EXPECT_EQ(ReadFileToString(env_, path), "onetwo");
  Write(path, "three");  // NewWritableFile truncates
  EXPECT_EQ(ReadFileToString(env_, path), "three");
}

TEST_P(EnvTest, MissingFileIsNotFoundAndNamesThePath) {
  const std::string path = Path("missing.bin");
  EXPECT_FALSE(env_->FileExists(path));
  for (auto fn : std::vector<std::function<void()>>{
           [&] { env_->NewSequentialFile(path); }, [&] { env_->NewRandomAccessFile(path); },
           [&] { env_->MapFile(path); }, [&] { env_->GetFileSize(path); },
           [&] { env_->DeleteFile(path); }, [&] { env_->RenameFile(path, Path("x")); }}) {
    try {
      fn();
      ADD_FAILURE() << "expected NotFound";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
      EXPECT_NE(e.message().find(path), std::string::npos) << e.what();
    }
  }
}

TEST_P(EnvTest, RenameReplacesTarget) {
  Write(Path("from"), "new");
  Write(Path("to"), "old");
  env_->RenameFile(Path("from"), Path("to"));
  EXPECT_FALSE(env_->FileExists(Path("from")));
  EXPECT_EQ(ReadFileToString(env_, Path("to")), "new");
  env_->DeleteFile(Path("to"));
  EXPECT_FALSE(env_->FileExists(Path("to")));
}

TEST_P(EnvTest, DirectoriesChildrenAndRecursiveDelete) {
  env_->CreateDirs(Path("d/e/f"));
  env_->CreateDirs(Path("d/e/f"));  // exists: no error
  EXPECT_TRUE(env_->IsDirectory(Path("d/e")));
  EXPECT_TRUE(env_->FileExists(Path("d/e/f")));
  Write(Path("d/b.txt"), "b");
  Write(Path("d/a.txt"), "a");
  EXPECT_FALSE(env_->IsDirectory(Path("d/a.txt")));
  EXPECT_EQ(env_->GetChildren(Path("d")), (std::vector<std::string>{"a.txt", "b.txt", "e"}));
  env_->SyncDir(Path("d"));
  env_->DeleteRecursively(Path("d"));
  EXPECT_FALSE(env_->FileExists(Path("d")));
  EXPECT_FALSE(env_->FileExists(Path("d/a.txt")));
  EXPECT_THROW(env_->GetChildren(Path("d")), Error);
}

TEST_P(EnvTest, CreateDirsOverAFileIsFailedPreconditionNamingTheFile) {
  const std::string file = JoinPath(root_, "plain");
  WriteFileAtomically(env_, file, "x");
  for (const std::string& dir : {file, JoinPath(file, "sub")}) {
    try {
      env_->CreateDirs(dir);
      FAIL() << dir;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
      EXPECT_NE(e.message().find(StrCat("'", file, "' is a file, not a directory")),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_P(EnvTest, GlobMatchesLastComponentSorted) {
  Write(Path("ckpt-10.index"), "");
  Write(Path("ckpt-2.index"), "");
  Write(Path("ckpt-2.data"), "");
  Write(Path("other.index"), "");
  EXPECT_EQ(env_->Glob(Path("ckpt-*.index")),
            (std::vector<std::string>{Path("ckpt-10.index"), Path("ckpt-2.index")}));
  EXPECT_EQ(env_->Glob(Path("ckpt-?.*")),
            (std::vector<std::string>{Path("ckpt-2.data"), Path("ckpt-2.index")}));
  EXPECT_TRUE(env_->Glob(Path("nothing*")).empty());
}

TEST_P(EnvTest, MapFileSeesTheBytesAndOutlivesDeletion) {
  Write(Path("m"), "mapped bytes");
  auto region = env_->MapFile(Path("m"));
  ASSERT_EQ(region->size(), 12u);
  EXPECT_EQ(std::string(region->data(), region->size()), "mapped bytes");
  env_->DeleteFile(Path("m"));
  EXPECT_EQ(std::string(region->data(), 6), "mapped");
  Write(Path("empty"), "");
  EXPECT_EQ(env_->MapFile(Path("empty"))->size(), 0u);
}

TEST_P(EnvTest, WriteFileAtomicallyReplacesAndLeavesNoTemporaries) {
  env_->CreateDirs(Path("atomic"));
  const std::string path = Path("atomic/state");
  WriteFileAtomically(env_, path, "first");
  WriteFileAtomically(env_, path, "second");
  EXPECT_EQ(ReadFileToString(env_, path), "second");
  EXPECT_EQ(env_->GetChildren(Path("atomic")), std::vector<std::string>{"state"});
}

TEST_P(EnvTest, ClockHostAndPid) {
  const uint64_t t0 = env_->NowMicros();
  EXPECT_GT(t0, 1'600'000'000'000'000u);  // after 2020
  EXPECT_GE(env_->NowMicros(), t0);
  EXPECT_FALSE(env_->HostName().empty());
  EXPECT_GT(env_->ProcessId(), 0);
}

TEST_P(EnvTest, TruncateTakesBackTheTailAndAppendsThere) {
  const std::string path = Path("t");
  auto file = env_->NewWritableFile(path);
  file->Append("complete|");
  file->Flush();
  file->Append("torn");
  file->Truncate(9);
  file->Append("next|");
  file->Close();
  EXPECT_EQ(ReadFileToString(env_, path), "complete|next|");
  // An appendable file too (O_APPEND on POSIX).
  auto again = env_->NewAppendableFile(path);
  again->Append("xx");
  again->Flush();
  again->Truncate(14);
  again->Append("end");
  again->Close();
  EXPECT_EQ(ReadFileToString(env_, path), "complete|next|end");
}

TEST_P(EnvTest, LockFileExcludesASecondHolderAndNamesTheFirst) {
  const std::string path = Path("LOCK");
  {
    auto lock = env_->LockFile(path, "pid 42 on host alpha\n");
    EXPECT_EQ(lock->path(), path);
    try {
      env_->LockFile(path, "pid 43 on host beta");
      FAIL() << "a second lock on one file must fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition) << e.what();
      EXPECT_NE(e.message().find(path), std::string::npos) << e.what();
      EXPECT_NE(e.message().find("pid 42 on host alpha"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ReadFileToString(env_, path), "pid 42 on host alpha\n");
  }
  // Released with the object: the next holder gets it and replaces the text.
  auto lock = env_->LockFile(path, "pid 43");
  EXPECT_EQ(ReadFileToString(env_, path), "pid 43");
}

INSTANTIATE_TEST_SUITE_P(PosixAndMemory, EnvTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Posix" : "Memory"; });

TEST(PosixEnvTest, ErrorsCarryErrnoText) {
  try {
    Env::Default()->NewWritableFile("/nonexistent_dir_for_loom/x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(e.message().find("/nonexistent_dir_for_loom/x"), std::string::npos);
    EXPECT_NE(e.message().find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(PosixEnvTest, FullDiskIsResourceExhausted) {
  if (!Env::Default()->FileExists("/dev/full")) GTEST_SKIP() << "/dev/full is absent";
  auto file = Env::Default()->NewAppendableFile("/dev/full");
  try {
    file->Append("x");
    file->Close();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
    EXPECT_NE(e.message().find("/dev/full"), std::string::npos);
  }
}

// A lock dies with its process: the child takes it, the parent is refused (and told the
// child's pid), then SIGKILLs the child and takes it.
TEST(PosixEnvTest, LockIsReleasedWhenTheHolderIsKilled) {
  char tmpl[] = "/tmp/loom_lock_test_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string path = JoinPath(tmpl, "LOCK");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    auto lock = Env::Default()->LockFile(path, StrCat("pid ", ::getpid()));
    char ok = 1;
    if (::write(ready[1], &ok, 1) != 1) ::_exit(2);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ::close(ready[0]);
  try {
    Env::Default()->LockFile(path, "parent");
    ADD_FAILURE() << "the child holds the lock";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find(StrCat("pid ", child)), std::string::npos) << e.what();
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_NO_THROW(Env::Default()->LockFile(path, "parent"));
  Env::Default()->DeleteRecursively(tmpl);
}

// Fault injection over the memory Env.
class FaultInjectionTest : public ::testing::Test {
 protected:
  std::unique_ptr<Env> mem_ = NewMemEnv();
  FaultInjectionEnv env_{mem_.get()};
};

TEST_F(FaultInjectionTest, FailNthAppend) {
  auto file = env_.NewWritableFile("f");
  env_.FailNthAppend(2);
  file->Append("aaaa");
  try {
    file->Append("bbbb");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(e.message().find("injected"), std::string::npos);
  }
  file->Append("cccc");  // one failure only
  file->Close();
  EXPECT_EQ(ReadFileToString(&env_, "f"), "aaaacccc");
  EXPECT_EQ(env_.num_appends(), 3);
}

TEST_F(FaultInjectionTest, ShortWriteLeavesHalf) {
  auto file = env_.NewWritableFile("f");
  env_.FailNthAppend(1, /*short_write=*/true);
  EXPECT_THROW(file->Append("12345678"), Error);
  EXPECT_EQ(ReadFileToString(&env_, "f"), "1234");
}

TEST_F(FaultInjectionTest, FullDiskWritesWhatFits) {
  auto file = env_.NewWritableFile("f");
  env_.SetFreeSpace(5);
  file->Append("abc");
  try {
    file->Append("defg");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
  }
  EXPECT_EQ(ReadFileToString(&env_, "f"), "abcde");
  EXPECT_THROW(file->Append("h"), Error);
  env_.ClearFaults();
  file->Append("h");
  EXPECT_EQ(ReadFileToString(&env_, "f"), "abcdeh");
}

TEST_F(FaultInjectionTest, TruncateGivesSpaceBack) {
  auto file = env_.NewWritableFile("f");
  env_.SetFreeSpace(6);
  file->Append("abcd");
  EXPECT_THROW(file->Append("efgh"), Error);  // "ef" fits: a torn write
  file->Truncate(4);
  EXPECT_EQ(ReadFileToString(&env_, "f"), "abcd");
  file->Append("XY");  // the 2 bytes the truncation freed
  EXPECT_THROW(file->Append("Z"), Error);
  EXPECT_EQ(ReadFileToString(&env_, "f"), "abcdXY");
}

TEST_F(FaultInjectionTest, SyncAndRenameFailures) {
  env_.SetSyncFails(true);
  auto file = env_.NewWritableFile("f");
  file->Append("x");
  EXPECT_THROW(file->Sync(), Error);
  EXPECT_THROW(env_.SyncDir("/"), Error);
  // WriteFileAtomically fails cleanly: no target, no temporary left.
  EXPECT_THROW(WriteFileAtomically(&env_, "dir/target", "data"), Error);
  EXPECT_FALSE(env_.FileExists("dir/target"));
  EXPECT_TRUE(env_.Glob("dir/*").empty());

  env_.SetSyncFails(false);
  WriteFileAtomically(&env_, "dir/target", "old");
  env_.SetRenameFails(true);
  EXPECT_THROW(WriteFileAtomically(&env_, "dir/target", "new"), Error);
  EXPECT_EQ(ReadFileToString(&env_, "dir/target"), "old");
  EXPECT_EQ(env_.GetChildren("dir"), std::vector<std::string>{"target"});
}

TEST_F(FaultInjectionTest, FailNthFailsExactlyTheNthCallOfEachOperation) {
  for (FaultOp op :
       {FaultOp::kCreate, FaultOp::kSync, FaultOp::kClose, FaultOp::kRename, FaultOp::kAppend}) {
    SCOPED_TRACE(std::string(FaultOpName(op)));
    const int64_t before = env_.num_ops(op);
    env_.FailNth(op, 2);
    int failures = 0;
    for (int i = 0; i < 3; ++i) {
      try {
        auto file = env_.NewWritableFile(StrCat("f", i));
        file->Append("x");
        file->Sync();
        file->Close();
        env_.RenameFile(StrCat("f", i), StrCat("g", i));
      } catch (const Error& e) {
        ++failures;
        EXPECT_EQ(e.code(), ErrorCode::kInternal);
        EXPECT_NE(e.message().find("injected"), std::string::npos) << e.what();
        EXPECT_NE(e.message().find(StrCat("f", i)), std::string::npos) << e.what();
        EXPECT_EQ(i, 1) << e.what();
      }
    }
    EXPECT_EQ(failures, 1);
    EXPECT_EQ(env_.num_ops(op) - before, 3);  // counted, failed or not
  }
}

TEST_F(FaultInjectionTest, WriteFileAtomicallyUnderEveryInjectedFailureKeepsOldOrNew) {
  WriteFileAtomically(&env_, "d/target", "old contents");
  const int64_t ops[] = {env_.num_ops(FaultOp::kCreate), env_.num_ops(FaultOp::kAppend),
                         env_.num_ops(FaultOp::kSync), env_.num_ops(FaultOp::kClose),
                         env_.num_ops(FaultOp::kRename)};
  WriteFileAtomically(&env_, "d/target", "old contents");
  int injected = 0;
  for (int op = 0; op < kNumFaultOps; ++op) {
    const int64_t calls = env_.num_ops(static_cast<FaultOp>(op)) - ops[op];
    ASSERT_GE(calls, 1) << FaultOpName(static_cast<FaultOp>(op));
    for (int64_t n = 1; n <= calls; ++n) {
      SCOPED_TRACE(StrCat(FaultOpName(static_cast<FaultOp>(op)), " #", n));
      env_.FailNth(static_cast<FaultOp>(op), n);
      try {
        WriteFileAtomically(&env_, "d/target", "new contents");
      } catch (const Error& e) {
        ++injected;
        EXPECT_NE(e.message().find("'d"), std::string::npos) << e.what();  // names the file or dir
      }
      env_.ClearFaults();
      const std::string now = ReadFileToString(&env_, "d/target");
      EXPECT_TRUE(now == "old contents" || now == "new contents") << now;
      EXPECT_EQ(env_.GetChildren("d"), std::vector<std::string>{"target"});
      WriteFileAtomically(&env_, "d/target", "old contents");
    }
  }
  EXPECT_GE(injected, kNumFaultOps);
}

TEST_F(FaultInjectionTest, DropUnsyncedDataSimulatesACrash) {
  auto file = env_.NewWritableFile("log");
  file->Append("durable");
  file->Sync();
  file->Append(" lost");
  auto never_synced = env_.NewWritableFile("tmp");
  never_synced->Append("gone");
  WriteFileAtomically(&env_, "state", "kept");  // synced, then renamed
  env_.DropUnsyncedData();
  EXPECT_EQ(ReadFileToString(&env_, "log"), "durable");
  EXPECT_EQ(ReadFileToString(&env_, "tmp"), "");
  EXPECT_EQ(ReadFileToString(&env_, "state"), "kept");
}

}  // namespace
}  // namespace loom
