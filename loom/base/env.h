#ifndef LOOM_BASE_ENV_H_
#define LOOM_BASE_ENV_H_

// Env is the one seam between Loom and the operating system: files, directories, memory
// maps, the clock. Everything that touches disk takes an Env*, so tests can run on the
// in-memory Env (NewMemEnv) or inject a failed write, a short read or a full disk
// (FaultInjectionEnv). Implementations are thread-safe. Failures throw loom::Error that
// names the path (NotFound for a missing file, DataLoss / Internal for I/O failures,
// ResourceExhausted for a full disk).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// Sequential reads. Not thread-safe.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into scratch; returns how many were read (0 at end of file).
  virtual size_t Read(size_t n, char* scratch) = 0;
  virtual void Skip(uint64_t n) = 0;
};

// Positional reads. Thread-safe.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at offset into scratch; returns how many were read (short at EOF).
  virtual size_t Read(uint64_t offset, size_t n, char* scratch) const = 0;
  virtual uint64_t Size() const = 0;
};

// Appends. Close() flushes and reports errors; the destructor closes silently.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual void Append(std::string_view data) = 0;
  virtual void Flush() = 0;
  // Flushes and makes the data durable (fsync).
  virtual void Sync() = 0;
  virtual void Close() = 0;
  // Discards anything still buffered, cuts the file to `size` bytes and continues
  // appending there: how a writer takes back a record that failed halfway (a full disk).
  // REQUIRES: the first `size` bytes reached the file (a Flush or Sync returned after
  // they were appended).
  virtual void Truncate(uint64_t size) = 0;
};

// A read-only view of a whole file. The mapping lives as long as the object.
class MappedRegion {
 public:
  virtual ~MappedRegion() = default;
  virtual const char* data() const = 0;
  virtual uint64_t size() const = 0;
};

// An exclusive lock on a file, held until the object is destroyed. The OS releases it
// when the process dies (SIGKILL included), so a lock never outlives its holder.
class FileLock {
 public:
  virtual ~FileLock() = default;
  virtual const std::string& path() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX Env. Never deleted.
  static Env* Default();

  virtual std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) = 0;
  virtual std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) = 0;
  // Creates or truncates.
  virtual std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) = 0;
  virtual std::unique_ptr<WritableFile> NewAppendableFile(const std::string& path) = 0;
  // Maps the file read-only (the POSIX Env uses mmap; the memory Env returns its bytes).
  virtual std::shared_ptr<MappedRegion> MapFile(const std::string& path) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  virtual uint64_t GetFileSize(const std::string& path) = 0;
  // Names (not paths) of the entries in dir, sorted.
  virtual std::vector<std::string> GetChildren(const std::string& dir) = 0;
  virtual bool IsDirectory(const std::string& path) = 0;
  // Creates dir and its missing parents; no error if it exists. FailedPrecondition naming
  // the file when dir or a parent is a file, not a directory.
  virtual void CreateDirs(const std::string& dir) = 0;
  virtual void DeleteFile(const std::string& path) = 0;
  // Deletes dir and everything below it.
  virtual void DeleteRecursively(const std::string& dir) = 0;
  // Atomically replaces `to` with `from`.
  virtual void RenameFile(const std::string& from, const std::string& to) = 0;
  // fsyncs the directory so that a rename inside it is durable.
  virtual void SyncDir(const std::string& dir) = 0;
  // Paths matching a glob pattern (* ? [..] in the last component), sorted.
  virtual std::vector<std::string> Glob(const std::string& pattern) = 0;
  // Takes an exclusive lock on `path` (created if absent) without waiting and replaces
  // the file's contents with `holder` (who holds it, for the next one who tries). Another
  // process or another FileLock of this process holding it: FailedPrecondition whose
  // message says "'PATH' is locked by " and quotes what that holder wrote (a lock file
  // that cannot be created is the errno's error: FailedPrecondition for EACCES, EROFS). The POSIX
  // Env uses flock(2), released by the kernel when the holder dies; the memory Env keeps the lock
  // in memory.
  virtual std::unique_ptr<FileLock> LockFile(const std::string& path, std::string_view holder) = 0;

  virtual uint64_t NowMicros() = 0;
  virtual std::string HostName() = 0;
  virtual int ProcessId() = 0;
};

// Path helpers. JoinPath("a/", "b") == "a/b"; Dirname("a/b") == "a"; Basename("a/b") == "b".
std::string JoinPath(std::string_view a, std::string_view b);
std::string Dirname(std::string_view path);
std::string Basename(std::string_view path);

// Reads a whole file into a string.
std::string ReadFileToString(Env* env, const std::string& path);
// Writes data to path atomically and durably: a temporary file beside it, fsync, rename,
// fsync of the directory. A crash leaves either the old file or the new one, never a mix.
void WriteFileAtomically(Env* env, const std::string& path, std::string_view data);

// An Env that keeps every file in memory (for tests). Paths are plain strings.
std::unique_ptr<Env> NewMemEnv();

}  // namespace loom

#endif  // LOOM_BASE_ENV_H_
