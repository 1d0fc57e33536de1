#ifndef LOOM_DATA_WORKER_POOL_H_
#define LOOM_DATA_WORKER_POOL_H_

// The background threads of one pipeline stage (parallel Map, Interleave, Prefetch): tasks
// run in FIFO order. The destructor drops tasks not yet started and joins the threads, so
// a stage that declares its WorkerPool as its last member may let tasks capture `this`.
// Thread-safe.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::data {

class WorkerPool {
 public:
  // REQUIRES: num_threads >= 1.
  explicit WorkerPool(int num_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Schedule(std::function<void()> task);
  int num_threads() const { return static_cast<int>(threads_.size()); }

  // kAutotune (-1) and 0 resolve to the core count; others are kept. At least 1.
  static int ResolveThreads(int requested);

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace loom::data

#endif  // LOOM_DATA_WORKER_POOL_H_
