#ifndef LOOM_BASE_FAULT_INJECTION_ENV_H_
#define LOOM_BASE_FAULT_INJECTION_ENV_H_

// FaultInjectionEnv wraps another Env (not owned; it must outlive this one) and forwards
// every call to it, except that tests can arm faults to check crash safety:
//
//   auto mem = NewMemEnv();
//   FaultInjectionEnv env(mem.get());
//   env.FailNthAppend(2);                 // the 2nd Append from now throws
//   env.SetFreeSpace(100);                // later Appends past 100 bytes: "disk full"
//                                         // (WritableFile::Truncate gives space back)
//   env.SetSyncFails(true);               // WritableFile::Sync and SyncDir throw
//   env.SetRenameFails(true);             // RenameFile throws, nothing moves
//   env.DropUnsyncedData();               // simulate a crash: lose what was not synced
//   env.FailNth(FaultOp::kRename, 3);     // the 3rd rename from now throws
//
// A campaign sweeps every operation of a run: count them once (num_ops), then for each n
// run again with FailNth(op, n).
//
// Faults apply to files opened before or after they are armed. Injected failures throw
// the Error a real one would (Internal for a failed write/sync/rename, ResourceExhausted
// for a full disk) with "injected" in the message. Thread-safe.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "loom/base/env.h"

namespace loom {

// The operations FailNth can fail.
enum class FaultOp {
  kCreate,  // NewWritableFile / NewAppendableFile: nothing is created
  kAppend,  // WritableFile::Append: nothing reaches the file
  kSync,    // WritableFile::Sync and SyncDir: nothing is synced
  kClose,   // WritableFile::Close: the data reached the file, the close reports an error
  kRename,  // RenameFile: nothing moves
};
inline constexpr int kNumFaultOps = 5;
// "create", "append", "sync", "close", "rename".
std::string_view FaultOpName(FaultOp op);

class FaultInjectionEnv : public Env {
 public:
  explicit FaultInjectionEnv(Env* base);
  FaultInjectionEnv(const FaultInjectionEnv&) = delete;
  FaultInjectionEnv& operator=(const FaultInjectionEnv&) = delete;

  // The n-th WritableFile::Append from now (n = 1 is the next) throws Internal. With
  // short_write, the first half of that Append's bytes reach the file before the throw
  // (a torn write); without it none do. n <= 0 disarms.
  void FailNthAppend(int64_t n, bool short_write = false);
  // From now on Appends may add at most `bytes` more bytes in total; the Append that
  // would cross the limit writes what fits and throws ResourceExhausted (ENOSPC).
  // std::nullopt (the default) means unlimited.
  void SetFreeSpace(std::optional<uint64_t> bytes);
  // While set, WritableFile::Sync and SyncDir throw Internal and sync nothing.
  void SetSyncFails(bool fails);
  // While set, RenameFile throws Internal and leaves both paths as they were.
  void SetRenameFails(bool fails);
  // The n-th call of `op` from now (n = 1 is the next) throws Internal naming the path and
  // the operation, with "injected" in the message; the calls before it and after it
  // succeed. n <= 0 disarms. FailNth(FaultOp::kAppend, n) is FailNthAppend(n).
  void FailNth(FaultOp op, int64_t n);
  // Disarms every fault above.
  void ClearFaults();

  // Simulates a crash: every file written through this Env since its creation is cut back
  // to the size it had at its last successful Sync (0 if never synced). Files are tracked
  // across renames. Open WritableFiles must not be used afterwards.
  void DropUnsyncedData();

  // Counters since construction, for assertions.
  int64_t num_appends() const;
  int64_t num_syncs() const;
  // Calls of `op` since construction (failed ones included).
  int64_t num_ops(FaultOp op) const;

  // Env.
  std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) override;
  std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) override;
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override;
  std::unique_ptr<WritableFile> NewAppendableFile(const std::string& path) override;
  std::shared_ptr<MappedRegion> MapFile(const std::string& path) override;
  bool FileExists(const std::string& path) override;
  uint64_t GetFileSize(const std::string& path) override;
  std::vector<std::string> GetChildren(const std::string& dir) override;
  bool IsDirectory(const std::string& path) override;
  void CreateDirs(const std::string& dir) override;
  void DeleteFile(const std::string& path) override;
  void DeleteRecursively(const std::string& dir) override;
  void RenameFile(const std::string& from, const std::string& to) override;
  void SyncDir(const std::string& dir) override;
  std::vector<std::string> Glob(const std::string& pattern) override;
  std::unique_ptr<FileLock> LockFile(const std::string& path, std::string_view holder) override;
  uint64_t NowMicros() override;
  std::string HostName() override;
  int ProcessId() override;

 private:
  friend class FaultInjectionWritableFile;
  // A file opened for writing through this Env; shared with its WritableFile so that a
  // rename of the path keeps the tracking right.
  struct TrackedFile {
    std::string path;
    uint64_t synced_size = 0;
  };
  // How much of an Append of `size` bytes may reach the file, and which error follows.
  struct AppendDecision {
    size_t bytes_to_write = 0;
    bool fail = false;
    bool disk_full = false;
  };
  AppendDecision DecideAppend(size_t size);
  void CheckSync(const std::string& what);
  // Counts a call of op; throws the injected error when FailNth armed this one.
  void CheckOp(FaultOp op, const std::string& path);
  std::shared_ptr<TrackedFile> Track(const std::string& path, uint64_t synced_size);

  Env* const base_;
  mutable std::mutex mu_;
  int64_t appends_until_failure_ = 0;  // 0: disarmed
  bool short_write_ = false;
  std::optional<uint64_t> free_space_;
  bool sync_fails_ = false;
  bool rename_fails_ = false;
  int64_t num_appends_ = 0;
  int64_t num_syncs_ = 0;
  int64_t op_countdown_[kNumFaultOps] = {};  // 0: disarmed (kAppend uses appends_until_failure_)
  int64_t op_count_[kNumFaultOps] = {};
  std::map<std::string, std::shared_ptr<TrackedFile>> tracked_;
};

}  // namespace loom

#endif  // LOOM_BASE_FAULT_INJECTION_ENV_H_
