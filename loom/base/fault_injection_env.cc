#include "loom/base/fault_injection_env.h"

#include "loom/base/error.h"

namespace loom {

std::string_view FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kCreate:
      return "create";
    case FaultOp::kAppend:
      return "append";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kClose:
      return "close";
    case FaultOp::kRename:
      return "rename";
  }
  return "?";
}

class FaultInjectionWritableFile : public WritableFile {
 public:
  FaultInjectionWritableFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base,
                             std::shared_ptr<FaultInjectionEnv::TrackedFile> tracked, uint64_t size)
      : env_(env), base_(std::move(base)), tracked_(std::move(tracked)), size_(size) {}

  void Append(std::string_view data) override {
    const auto decision = env_->DecideAppend(data.size());
    if (decision.bytes_to_write > 0) {
      base_->Append(data.substr(0, decision.bytes_to_write));
      size_ += decision.bytes_to_write;
    }
    if (decision.disk_full) {
      throw ResourceExhausted("cannot write to '", tracked_->path,
                              "': No space left on device (injected)");
    }
    if (decision.fail) {
      throw Internal("cannot write to '", tracked_->path, "': Input/output error (injected)");
    }
  }
  void Flush() override { base_->Flush(); }
  void Sync() override {
    env_->CheckSync(tracked_->path);
    base_->Sync();
    std::lock_guard<std::mutex> lock(env_->mu_);
    tracked_->synced_size = size_;
  }
  void Close() override {
    if (closed_) return;
    closed_ = true;
    base_->Close();  // the data is there; only the report fails (as close(2) on NFS)
    env_->CheckOp(FaultOp::kClose, tracked_->path);
  }
  void Truncate(uint64_t size) override {
    base_->Truncate(size);
    std::lock_guard<std::mutex> lock(env_->mu_);
    if (size < size_) {
      if (env_->free_space_) *env_->free_space_ += size_ - size;  // a disk gets it back
      size_ = size;
    }
    if (tracked_->synced_size > size) tracked_->synced_size = size;
  }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<WritableFile> base_;
  std::shared_ptr<FaultInjectionEnv::TrackedFile> tracked_;
  uint64_t size_;
  bool closed_ = false;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base) : base_(base) {}

void FaultInjectionEnv::FailNthAppend(int64_t n, bool short_write) {
  std::lock_guard<std::mutex> lock(mu_);
  appends_until_failure_ = n > 0 ? n : 0;
  short_write_ = short_write;
}

void FaultInjectionEnv::FailNth(FaultOp op, int64_t n) {
  if (op == FaultOp::kAppend) return FailNthAppend(n);
  std::lock_guard<std::mutex> lock(mu_);
  op_countdown_[static_cast<int>(op)] = n > 0 ? n : 0;
}

int64_t FaultInjectionEnv::num_ops(FaultOp op) const {
  std::lock_guard<std::mutex> lock(mu_);
  return op == FaultOp::kAppend ? num_appends_ : op_count_[static_cast<int>(op)];
}

void FaultInjectionEnv::CheckOp(FaultOp op, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  const int i = static_cast<int>(op);
  ++op_count_[i];
  if (op_countdown_[i] > 0 && --op_countdown_[i] == 0) {
    throw Internal("cannot ", FaultOpName(op), " '", path,
                   "': Input/output error (injected by FailNth)");
  }
}

void FaultInjectionEnv::SetFreeSpace(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  free_space_ = bytes;
}

void FaultInjectionEnv::SetSyncFails(bool fails) {
  std::lock_guard<std::mutex> lock(mu_);
  sync_fails_ = fails;
}

void FaultInjectionEnv::SetRenameFails(bool fails) {
  std::lock_guard<std::mutex> lock(mu_);
  rename_fails_ = fails;
}

void FaultInjectionEnv::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  appends_until_failure_ = 0;
  short_write_ = false;
  free_space_.reset();
  sync_fails_ = false;
  rename_fails_ = false;
  for (int64_t& n : op_countdown_) n = 0;
}

int64_t FaultInjectionEnv::num_appends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_appends_;
}

int64_t FaultInjectionEnv::num_syncs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_syncs_;
}

FaultInjectionEnv::AppendDecision FaultInjectionEnv::DecideAppend(size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  ++num_appends_;
  AppendDecision decision;
  decision.bytes_to_write = size;
  if (appends_until_failure_ > 0 && --appends_until_failure_ == 0) {
    decision.fail = true;
    decision.bytes_to_write = short_write_ ? size / 2 : 0;
  }
  if (free_space_) {
    if (decision.bytes_to_write > *free_space_) {
      decision.bytes_to_write = *free_space_;
      decision.disk_full = true;
    }
    *free_space_ -= decision.bytes_to_write;
  }
  return decision;
}

void FaultInjectionEnv::CheckSync(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sync_fails_) throw Internal("cannot sync '", what, "': Input/output error (injected)");
  ++op_count_[static_cast<int>(FaultOp::kSync)];
  auto& countdown = op_countdown_[static_cast<int>(FaultOp::kSync)];
  if (countdown > 0 && --countdown == 0) {
    throw Internal("cannot sync '", what, "': Input/output error (injected by FailNth)");
  }
  ++num_syncs_;
}

std::shared_ptr<FaultInjectionEnv::TrackedFile> FaultInjectionEnv::Track(const std::string& path,
                                                                         uint64_t synced_size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& tracked = tracked_[path];
  // A new writer starts a new file history (a truncating open loses the old bytes).
  tracked = std::make_shared<TrackedFile>();
  tracked->path = path;
  tracked->synced_size = synced_size;
  return tracked;
}

void FaultInjectionEnv::DropUnsyncedData() {
  std::map<std::string, std::shared_ptr<TrackedFile>> tracked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracked = tracked_;
  }
  for (const auto& [path, file] : tracked) {
    if (!base_->FileExists(path)) continue;
    std::string contents = ReadFileToString(base_, path);
    if (contents.size() <= file->synced_size) continue;
    contents.resize(file->synced_size);
    auto out = base_->NewWritableFile(path);
    out->Append(contents);
    out->Sync();
    out->Close();
  }
}

std::unique_ptr<SequentialFile> FaultInjectionEnv::NewSequentialFile(const std::string& path) {
  return base_->NewSequentialFile(path);
}

std::unique_ptr<RandomAccessFile> FaultInjectionEnv::NewRandomAccessFile(const std::string& path) {
  return base_->NewRandomAccessFile(path);
}

std::unique_ptr<WritableFile> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  CheckOp(FaultOp::kCreate, path);
  auto file = base_->NewWritableFile(path);
  return std::make_unique<FaultInjectionWritableFile>(this, std::move(file), Track(path, 0), 0);
}

std::unique_ptr<WritableFile> FaultInjectionEnv::NewAppendableFile(const std::string& path) {
  CheckOp(FaultOp::kCreate, path);
  auto file = base_->NewAppendableFile(path);
  // Bytes already in the file are treated as durable.
  const uint64_t size = base_->GetFileSize(path);
  return std::make_unique<FaultInjectionWritableFile>(this, std::move(file), Track(path, size),
                                                      size);
}

std::shared_ptr<MappedRegion> FaultInjectionEnv::MapFile(const std::string& path) {
  return base_->MapFile(path);
}
bool FaultInjectionEnv::FileExists(const std::string& path) { return base_->FileExists(path); }
uint64_t FaultInjectionEnv::GetFileSize(const std::string& path) {
  return base_->GetFileSize(path);
}
std::vector<std::string> FaultInjectionEnv::GetChildren(const std::string& dir) {
  return base_->GetChildren(dir);
}
bool FaultInjectionEnv::IsDirectory(const std::string& path) { return base_->IsDirectory(path); }
void FaultInjectionEnv::CreateDirs(const std::string& dir) { base_->CreateDirs(dir); }

void FaultInjectionEnv::DeleteFile(const std::string& path) {
  base_->DeleteFile(path);
  std::lock_guard<std::mutex> lock(mu_);
  tracked_.erase(path);
}

void FaultInjectionEnv::DeleteRecursively(const std::string& dir) {
  base_->DeleteRecursively(dir);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = dir + "/";
  std::erase_if(tracked_,
                [&](const auto& e) { return e.first == dir || e.first.starts_with(prefix); });
}

void FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (rename_fails_) {
      throw Internal("cannot rename '", from, "' to '", to, "': Input/output error (injected)");
    }
  }
  CheckOp(FaultOp::kRename, from);
  base_->RenameFile(from, to);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracked_.find(from);
  tracked_.erase(to);
  if (it != tracked_.end()) {
    auto file = it->second;
    tracked_.erase(it);
    file->path = to;
    tracked_[to] = std::move(file);
  }
}

void FaultInjectionEnv::SyncDir(const std::string& dir) {
  CheckSync(dir);
  base_->SyncDir(dir);
}

std::vector<std::string> FaultInjectionEnv::Glob(const std::string& pattern) {
  return base_->Glob(pattern);
}
std::unique_ptr<FileLock> FaultInjectionEnv::LockFile(const std::string& path,
                                                      std::string_view holder) {
  return base_->LockFile(path, holder);
}
uint64_t FaultInjectionEnv::NowMicros() { return base_->NowMicros(); }
std::string FaultInjectionEnv::HostName() { return base_->HostName(); }
int FaultInjectionEnv::ProcessId() { return base_->ProcessId(); }

}  // namespace loom
