// NewMemEnv(): every file is a string in a map. Directories exist when created with
// CreateDirs or when some file lies below them. Writes do not check that the parent
// directory exists (like LevelDB's memenv).
#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "loom/base/env.h"
#include "loom/base/error.h"

namespace loom {
namespace {

struct FileData {
  std::mutex mu;
  std::string contents;
};

class MemSequentialFile : public SequentialFile {
 public:
  explicit MemSequentialFile(std::shared_ptr<FileData> file) : file_(std::move(file)) {}
  size_t Read(size_t n, char* scratch) override {
    std::lock_guard<std::mutex> lock(file_->mu);
    if (pos_ >= file_->contents.size()) return 0;
    const size_t count = std::min<size_t>(n, file_->contents.size() - pos_);
    std::memcpy(scratch, file_->contents.data() + pos_, count);
    pos_ += count;
    return count;
  }
  void Skip(uint64_t n) override { pos_ += n; }

 private:
  std::shared_ptr<FileData> file_;
  uint64_t pos_ = 0;
};

class MemRandomAccessFile : public RandomAccessFile {
 public:
  explicit MemRandomAccessFile(std::shared_ptr<FileData> file) : file_(std::move(file)) {}
  size_t Read(uint64_t offset, size_t n, char* scratch) const override {
    std::lock_guard<std::mutex> lock(file_->mu);
    if (offset >= file_->contents.size()) return 0;
    const size_t count = std::min<size_t>(n, file_->contents.size() - offset);
    std::memcpy(scratch, file_->contents.data() + offset, count);
    return count;
  }
  uint64_t Size() const override {
    std::lock_guard<std::mutex> lock(file_->mu);
    return file_->contents.size();
  }

 private:
  std::shared_ptr<FileData> file_;
};

class MemWritableFile : public WritableFile {
 public:
  MemWritableFile(std::string path, std::shared_ptr<FileData> file)
      : path_(std::move(path)), file_(std::move(file)) {}
  void Append(std::string_view data) override {
    if (closed_) throw FailedPrecondition("file '", path_, "' is already closed");
    std::lock_guard<std::mutex> lock(file_->mu);
    file_->contents.append(data);
  }
  void Flush() override {}
  void Sync() override {}
  void Close() override { closed_ = true; }
  void Truncate(uint64_t size) override {
    if (closed_) throw FailedPrecondition("file '", path_, "' is already closed");
    std::lock_guard<std::mutex> lock(file_->mu);
    if (size < file_->contents.size()) file_->contents.resize(size);
  }

 private:
  std::string path_;
  std::shared_ptr<FileData> file_;
  bool closed_ = false;
};

// A snapshot of the file's bytes at MapFile time.
class MemMappedRegion : public MappedRegion {
 public:
  explicit MemMappedRegion(std::string bytes) : bytes_(std::move(bytes)) {}
  const char* data() const override { return bytes_.data(); }
  uint64_t size() const override { return bytes_.size(); }

 private:
  std::string bytes_;
};

std::string StripTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Locks live in the Env's table of locked paths; the lock file holds the holder's text.
// The Env must outlive its locks.
class MemFileLock : public FileLock {
 public:
  MemFileLock(std::string path, std::function<void()> release)
      : path_(std::move(path)), release_(std::move(release)) {}
  ~MemFileLock() override { release_(); }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  std::function<void()> release_;
};

class MemEnv : public Env {
 public:
  std::unique_ptr<SequentialFile> NewSequentialFile(const std::string& path) override {
    return std::make_unique<MemSequentialFile>(Find(path));
  }
  std::unique_ptr<RandomAccessFile> NewRandomAccessFile(const std::string& path) override {
    return std::make_unique<MemRandomAccessFile>(Find(path));
  }
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto file = std::make_shared<FileData>();
    files_[path] = file;
    return std::make_unique<MemWritableFile>(path, file);
  }
  std::unique_ptr<WritableFile> NewAppendableFile(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto& file = files_[path];
    if (!file) file = std::make_shared<FileData>();
    return std::make_unique<MemWritableFile>(path, file);
  }
  std::shared_ptr<MappedRegion> MapFile(const std::string& path) override {
    auto file = Find(path);
    std::lock_guard<std::mutex> lock(file->mu);
    return std::make_shared<MemMappedRegion>(file->contents);
  }

  bool FileExists(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    return files_.count(path) > 0 || IsDirectoryLocked(path);
  }
  uint64_t GetFileSize(const std::string& path) override {
    auto file = Find(path);
    std::lock_guard<std::mutex> lock(file->mu);
    return file->contents.size();
  }

  std::vector<std::string> GetChildren(const std::string& dir_in) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string dir = StripTrailingSlash(dir_in);
    if (!IsDirectoryLocked(dir)) {
      throw NotFound("cannot list directory '", dir, "': No such file or directory");
    }
    const std::string prefix = dir == "/" ? dir : dir + "/";
    std::set<std::string> names;
    auto add = [&](const std::string& path) {
      if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix) != 0) return;
      const std::string rest = path.substr(prefix.size());
      names.insert(rest.substr(0, rest.find('/')));
    };
    for (const auto& [path, file] : files_) add(path);
    for (const auto& path : dirs_) add(path);
    return {names.begin(), names.end()};
  }

  bool IsDirectory(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    return IsDirectoryLocked(StripTrailingSlash(path));
  }

  void CreateDirs(const std::string& dir_in) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string dir = StripTrailingSlash(dir_in);
    while (!dir.empty() && dir != "/" && dir != ".") {
      if (files_.count(dir)) {
        throw FailedPrecondition("cannot create directory '", dir_in, "': '", dir,
                                 "' is a file, not a directory; move it away or use another "
                                 "directory");
      }
      dirs_.insert(dir);
      dir = Dirname(dir);
    }
  }

  void DeleteFile(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (files_.erase(path) == 0) {
      throw NotFound("cannot delete '", path, "': No such file or directory");
    }
  }

  void DeleteRecursively(const std::string& dir_in) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string dir = StripTrailingSlash(dir_in);
    if (files_.erase(dir) > 0) return;
    if (!IsDirectoryLocked(dir)) {
      throw NotFound("cannot delete '", dir, "': No such file or directory");
    }
    const std::string prefix = dir + "/";
    std::erase_if(files_, [&](const auto& entry) { return entry.first.starts_with(prefix); });
    std::erase_if(dirs_, [&](const auto& path) { return path == dir || path.starts_with(prefix); });
  }

  void RenameFile(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(from);
    if (it != files_.end()) {
      auto file = it->second;
      files_.erase(it);
      files_[to] = std::move(file);
      return;
    }
    if (!IsDirectoryLocked(from)) {
      throw NotFound("cannot rename to '", to, "' from '", from, "': No such file or directory");
    }
    // A directory: move everything below it.
    const std::string prefix = from + "/";
    std::map<std::string, std::shared_ptr<FileData>> moved;
    for (auto i = files_.begin(); i != files_.end();) {
      if (i->first.starts_with(prefix)) {
        moved[to + i->first.substr(from.size())] = i->second;
        i = files_.erase(i);
      } else {
        ++i;
      }
    }
    files_.merge(moved);
    std::set<std::string> moved_dirs;
    for (auto i = dirs_.begin(); i != dirs_.end();) {
      if (*i == from || i->starts_with(prefix)) {
        moved_dirs.insert(to + i->substr(from.size()));
        i = dirs_.erase(i);
      } else {
        ++i;
      }
    }
    dirs_.merge(moved_dirs);
  }

  void SyncDir(const std::string& dir) override {}

  std::vector<std::string> Glob(const std::string& pattern) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> matches;
    for (const auto& [path, file] : files_) {
      if (::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0) matches.insert(path);
    }
    for (const auto& path : dirs_) {
      if (::fnmatch(pattern.c_str(), path.c_str(), FNM_PATHNAME) == 0) matches.insert(path);
    }
    return {matches.begin(), matches.end()};
  }

  std::unique_ptr<FileLock> LockFile(const std::string& path, std::string_view holder) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto& file = files_[path];
    if (!file) file = std::make_shared<FileData>();
    std::lock_guard<std::mutex> file_lock(file->mu);
    if (!locked_.insert(path).second) {
      std::string who = file->contents;
      while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
      throw FailedPrecondition("'", path, "' is locked by ", who.empty() ? "another holder" : who);
    }
    file->contents = std::string(holder);
    return std::make_unique<MemFileLock>(path, [this, path] {
      std::lock_guard<std::mutex> lock(mu_);
      locked_.erase(path);
    });
  }

  uint64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  std::string HostName() override { return "memenv"; }
  int ProcessId() override { return 1; }

 private:
  std::shared_ptr<FileData> Find(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) {
      throw NotFound("cannot open '", path, "': No such file or directory");
    }
    return it->second;
  }

  bool IsDirectoryLocked(const std::string& dir) const {
    if (dir == "/" || dir == "." || dir.empty()) return true;
    if (dirs_.count(dir)) return true;
    const std::string prefix = dir + "/";
    auto it = files_.lower_bound(prefix);
    return it != files_.end() && it->first.starts_with(prefix);
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<FileData>> files_;
  std::set<std::string> dirs_;
  std::set<std::string> locked_;  // paths with a live MemFileLock
};

}  // namespace

std::unique_ptr<Env> NewMemEnv() { return std::make_unique<MemEnv>(); }

}  // namespace loom
