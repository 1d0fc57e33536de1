// Env::Default(): the POSIX file system. Every failure throws a loom::Error that names the
// path and the errno text (see ErrnoError for the code mapping).
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "loom/base/env.h"
#include "loom/base/error.h"

namespace loom {
namespace {

Error ErrnoError(std::string_view what, const std::string& path, int err) {
  const std::string message = StrCat(what, " '", path, "': ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return NotFound(message);
    case ENOSPC:
    case EDQUOT:
      return ResourceExhausted(message, "; free some space and retry");
    case EEXIST:
      return AlreadyExists(message);
    case EIO:
      return DataLoss(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return FailedPrecondition(message);
    default:
      return Internal(message);
  }
}

// Closes fd, retrying on EINTR; returns errno or 0.
int CloseFd(int fd) { return ::close(fd) == 0 || errno == EINTR ? 0 : errno; }

class PosixSequentialFile : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { CloseFd(fd_); }

  size_t Read(size_t n, char* scratch) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::read(fd_, scratch + done, n - done);
      if (r < 0) {
        if (errno == EINTR) continue;
        throw ErrnoError("cannot read", path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  void Skip(uint64_t n) override {
    if (::lseek(fd_, static_cast<off_t>(n), SEEK_CUR) < 0) {
      throw ErrnoError("cannot seek in", path_, errno);
    }
  }

 private:
  std::string path_;
  int fd_;
};

class PosixRandomAccessFile : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { CloseFd(fd_); }

  size_t Read(uint64_t offset, size_t n, char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        throw ErrnoError(StrCat("cannot read at offset ", offset + done, " of"), path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }
  uint64_t Size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) {
      try {
        FlushBuffer();
      } catch (const Error&) {
        // The destructor closes silently; callers who care call Close().
      }
      CloseFd(fd_);
    }
  }

  void Append(std::string_view data) override {
    CheckOpen();
    if (buffer_.size() + data.size() <= kBufferSize) {
      buffer_.append(data);
      return;
    }
    FlushBuffer();
    if (data.size() >= kBufferSize) {
      WriteRaw(data);  // large writes skip the buffer: no second copy
    } else {
      buffer_.append(data);
    }
  }

  void Flush() override {
    CheckOpen();
    FlushBuffer();
  }

  void Sync() override {
    CheckOpen();
    FlushBuffer();
    if (::fdatasync(fd_) != 0) throw ErrnoError("cannot sync", path_, errno);
  }

  void Close() override {
    if (fd_ < 0) return;
    try {
      FlushBuffer();
    } catch (...) {
      CloseFd(fd_);
      fd_ = -1;
      throw;
    }
    const int err = CloseFd(fd_);
    fd_ = -1;
    if (err != 0) throw ErrnoError("cannot close", path_, err);
  }

  void Truncate(uint64_t size) override {
    CheckOpen();
    buffer_.clear();
    // lseek too: without O_APPEND the next write would land past a hole.
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0 ||
        ::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0) {
      throw ErrnoError(StrCat("cannot truncate to ", size, " bytes"), path_, errno);
    }
  }

 private:
  static constexpr size_t kBufferSize = 1 << 16;

  void CheckOpen() const {
    if (fd_ < 0) throw FailedPrecondition("file '", path_, "' is already closed");
  }

  void FlushBuffer() {
    if (buffer_.empty()) return;
    // Clear first: a failed write must not be retried from the destructor.
    std::string pending;
    pending.swap(buffer_);
    WriteRaw(pending);
  }

  void WriteRaw(std::string_view data) {
    while (!data.empty()) {
      const ssize_t w = ::write(fd_, data.data(), data.size());
      if (w < 0) {
        if (errno == EINTR) continue;
        throw ErrnoError("cannot write to", path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(w));
    }
  }

  std::string path_;
  int fd_;
  std::string buffer_;
};

class PosixMappedRegion : public MappedRegion {
 public:
  PosixMappedRegion(void* base, uint64_t size) : base_(base), size_(size) {}
  ~PosixMappedRegion() override {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  const char* data() const override { return base_ ? static_cast<const char*>(base_) : ""; }
  uint64_t size() const override { return size_; }

 private:
  void* base_;
  uint64_t size_;
};

// Paths this process holds a FileLock on. flock(2) already excludes a second open file
// description of the same process on local file systems; the table also covers file
// systems that emulate flock with per-process fcntl locks (NFS), as LevelDB's does.
std::mutex& LockTableMutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::set<std::string>& LockTable() {
  static auto* table = new std::set<std::string>;
  return *table;
}

// What the holder wrote into the lock file, for the message of the one who is refused.
std::string DescribeHolder(int fd) {
  char buf[1024];
  const ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
  std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text.empty() ? "another holder (which has not written its name yet)" : text;
}

class PosixFileLock : public FileLock {
 public:
  PosixFileLock(std::string path, std::string key, int fd)
      : path_(std::move(path)), key_(std::move(key)), fd_(fd) {}
  ~PosixFileLock() override {
    ::flock(fd_, LOCK_UN);
    CloseFd(fd_);
    std::lock_guard<std::mutex> lock(LockTableMutex());
    LockTable().erase(key_);
  }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  std::string key_;  // the canonical path in LockTable()
  int fd_;
};

int OpenOrThrow(const std::string& path, int flags, std::string_view what) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw ErrnoError(what, path, errno);
  return fd;
}

class PosixEnv : public Env {
 public:
  std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) override {
    return std::make_unique<PosixSequentialFile>(path, OpenOrThrow(path, O_RDONLY, "cannot open"));
  }

  std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) override {
    const int fd = OpenOrThrow(path, O_RDONLY, "cannot open");
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      CloseFd(fd);
      throw ErrnoError("cannot stat", path, err);
    }
    return std::make_unique<PosixRandomAccessFile>(path, fd, static_cast<uint64_t>(st.st_size));
  }

  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override {
    return std::make_unique<PosixWritableFile>(
        path, OpenOrThrow(path, O_WRONLY | O_CREAT | O_TRUNC, "cannot create"));
  }

  std::unique_ptr<WritableFile> NewAppendableFile(const std::string& path) override {
    return std::make_unique<PosixWritableFile>(
        path, OpenOrThrow(path, O_WRONLY | O_CREAT | O_APPEND, "cannot open for append"));
  }

  std::shared_ptr<MappedRegion> MapFile(const std::string& path) override {
    const int fd = OpenOrThrow(path, O_RDONLY, "cannot open");
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      CloseFd(fd);
      throw ErrnoError("cannot stat", path, err);
    }
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    void* base = nullptr;
    if (size > 0) {  // mmap of length 0 is an error; an empty file maps to an empty region
      base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
      if (base == MAP_FAILED) {
        const int err = errno;
        CloseFd(fd);
        throw ErrnoError("cannot mmap", path, err);
      }
    }
    CloseFd(fd);  // the mapping stays valid without the descriptor
    return std::make_shared<PosixMappedRegion>(base, size);
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  uint64_t GetFileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) throw ErrnoError("cannot stat", path, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  std::vector<std::string> GetChildren(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) throw ErrnoError("cannot list directory", dir, errno);
    std::vector<std::string> names;
    while (struct dirent* entry = ::readdir(d)) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  bool IsDirectory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  void CreateDirs(const std::string& dir) override {
    if (dir.empty() || IsDirectory(dir)) return;
    const std::string parent = Dirname(dir);
    if (!parent.empty() && parent != dir) CreateDirs(parent);
    if (::mkdir(dir.c_str(), 0755) != 0 && !(errno == EEXIST && IsDirectory(dir))) {
      const int err = errno;
      if (err == EEXIST || err == ENOTDIR) {
        // A file where a directory should be (a model_dir given as a file's path).
        throw FailedPrecondition("cannot create directory '", dir, "': '",
                                 err == EEXIST ? dir : parent,
                                 "' is a file, not a directory; move it away or use another "
                                 "directory");
      }
      throw ErrnoError("cannot create directory", dir, err);
    }
  }

  void DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) throw ErrnoError("cannot delete", path, errno);
  }

  void DeleteRecursively(const std::string& dir) override {
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) throw ErrnoError("cannot delete", dir, errno);
    if (S_ISDIR(st.st_mode)) {
      for (const std::string& child : GetChildren(dir)) DeleteRecursively(JoinPath(dir, child));
      if (::rmdir(dir.c_str()) != 0) throw ErrnoError("cannot delete directory", dir, errno);
    } else {
      DeleteFile(dir);
    }
  }

  void RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      throw ErrnoError(StrCat("cannot rename to '", to, "' from"), from, errno);
    }
  }

  void SyncDir(const std::string& dir) override {
    const std::string path = dir.empty() ? "." : dir;
    const int fd = OpenOrThrow(path, O_RDONLY | O_DIRECTORY, "cannot open directory");
    const int err = ::fsync(fd) == 0 ? 0 : errno;
    CloseFd(fd);
    // Some file systems cannot fsync a directory; that is not a durability failure we
    // can do anything about.
    if (err != 0 && err != EINVAL && err != ENOTSUP)
      throw ErrnoError("cannot sync directory", path, err);
  }

  std::vector<std::string> Glob(const std::string& pattern) override {
    glob_t result;
    std::memset(&result, 0, sizeof(result));
    const int rc = ::glob(pattern.c_str(), 0, nullptr, &result);
    std::vector<std::string> paths;
    if (rc == 0) {
      for (size_t i = 0; i < result.gl_pathc; ++i) paths.emplace_back(result.gl_pathv[i]);
    }
    ::globfree(&result);
    if (rc == GLOB_NOSPACE) throw ResourceExhausted("out of memory matching '", pattern, "'");
    if (rc == GLOB_ABORTED) throw Internal("read error while matching '", pattern, "'");
    std::sort(paths.begin(), paths.end());
    return paths;
  }

  std::unique_ptr<FileLock> LockFile(const std::string& path, std::string_view holder) override {
    const int fd = OpenOrThrow(path, O_RDWR | O_CREAT, "cannot open lock file");
    char* real = ::realpath(path.c_str(), nullptr);
    const std::string key = real != nullptr ? real : path;
    std::free(real);
    {
      std::lock_guard<std::mutex> lock(LockTableMutex());
      if (LockTable().count(key)) {
        const std::string who = DescribeHolder(fd);
        CloseFd(fd);
        throw FailedPrecondition("'", path, "' is locked by ", who, " (in this process)");
      }
      int rc;
      do {
        rc = ::flock(fd, LOCK_EX | LOCK_NB);
      } while (rc != 0 && errno == EINTR);
      if (rc != 0) {
        const int err = errno;
        if (err == EWOULDBLOCK) {
          const std::string who = DescribeHolder(fd);
          CloseFd(fd);
          throw FailedPrecondition("'", path, "' is locked by ", who);
        }
        CloseFd(fd);
        throw ErrnoError("cannot lock", path, err);
      }
      LockTable().insert(key);
    }
    auto file_lock = std::make_unique<PosixFileLock>(path, key, fd);
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
      throw ErrnoError("cannot write the holder into lock file", path, errno);
    }
    return file_lock;
  }

  uint64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  std::string HostName() override {
    char name[256] = {0};
    if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
    return name;
  }

  int ProcessId() override { return static_cast<int>(::getpid()); }
};

}  // namespace

Env* Env::Default() {
  static Env* env = new PosixEnv();
  return env;
}

}  // namespace loom
