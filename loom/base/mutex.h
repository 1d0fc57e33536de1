#ifndef LOOM_BASE_MUTEX_H_
#define LOOM_BASE_MUTEX_H_

// Mutex: std::mutex with clang's thread-safety annotations (thread_annotations.h), so
// state marked LOOM_GUARDED_BY(mu_) is checked at compile time. MutexLock holds one for
// its scope (std::lock_guard's role). Not recursive; not copyable.
#include <mutex>

#include "loom/base/thread_annotations.h"

namespace loom {

class LOOM_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() LOOM_ACQUIRE() { mu_.lock(); }
  void Unlock() LOOM_RELEASE() { mu_.unlock(); }
  // Locks when free and returns true; returns false at once when another thread holds it.
  bool TryLock() LOOM_TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // The standard's Lockable names, for std::unique_lock<Mutex> where a lock set is only
  // known at run time (the analysis does not follow those; prefer MutexLock).
  void lock() LOOM_ACQUIRE() { mu_.lock(); }
  void unlock() LOOM_RELEASE() { mu_.unlock(); }
  bool try_lock() LOOM_TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

class LOOM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) LOOM_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() LOOM_RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace loom

#endif  // LOOM_BASE_MUTEX_H_
