#ifndef LOOM_BASE_THREAD_POOL_H_
#define LOOM_BASE_THREAD_POOL_H_

// A fixed set of worker threads for intra-op parallelism. ParallelFor splits [0, n) into
// contiguous chunks, runs them on the workers and the calling thread, and returns when all
// are done. The pool owns its threads; it is thread-safe, but one ParallelFor at a time
// per pool is the intended use (kernels run one after another in a Session).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom {

class ThreadPool {
 public:
  // num_threads counts the calling thread: a pool of 1 runs everything inline and starts
  // no thread. REQUIRES: num_threads >= 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) over disjoint chunks covering [0, n). Chunks hold at least
  // min_chunk items, so small loops stay on the calling thread. An exception thrown by
  // fn is rethrown here after every chunk has finished.
  void ParallelFor(int64_t n, int64_t min_chunk,
                   const std::function<void(int64_t begin, int64_t end)>& fn);

  // Runs fn on a worker (or inline for a pool of 1) without waiting. Tasks start in the
  // order they were scheduled.
  void Schedule(std::function<void()> fn);

  // The machine's core count (std::thread::hardware_concurrency, at least 1).
  static int DefaultThreadCount();

 private:
  void WorkerLoop();

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // first in, first out
  bool stop_ = false;
};

}  // namespace loom

#endif  // LOOM_BASE_THREAD_POOL_H_
