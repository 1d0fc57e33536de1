#ifndef LOOM_BASE_THREAD_POOL_H_
#define LOOM_BASE_THREAD_POOL_H_

// Intra-op parallelism and background tasks. ParallelFor splits [0, n) into contiguous
// chunks, runs them on a team of threads that includes the calling thread, and returns when
// all are done; Schedule runs a task on one of the pool's own workers.
//
// ParallelFor's team is the calling thread's OpenMP team (libgomp), the same threads
// oneDNN's products and convolutions run on: a Session's kernels, Loom's and oneDNN's
// alike, use one set of `num_threads` threads, so after a product no second pool's
// threads wait for the cores oneDNN's threads are still spinning on (docs/engine.md,
// "Execute"; one team made the 2-thread MLP step 3-16% faster, bench/RESULTS.md).
// Builds with ThreadSanitizer (LOOM_TSAN), which cannot see libgomp's synchronization, run
// ParallelFor on the pool's own workers instead (LOOM_THREAD_POOL_PORTABLE).
//
// The workers are started by the first Schedule, so a pool used only for ParallelFor (a
// Session's) starts no thread of its own. Thread-safe; a ParallelFor inside a chunk of
// another runs its chunks on the calling thread (OpenMP's nested regions are off).
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
  // order they were scheduled; the first call starts the workers.
  void Schedule(std::function<void()> fn);

  // The machine's core count (std::thread::hardware_concurrency, at least 1).
  static int DefaultThreadCount();

 private:
  void StartWorkersLocked();  // REQUIRES: mu_ held
  void WorkerLoop();
  void ParallelForOnWorkers(int64_t n, int64_t num_chunks,
                            const std::function<void(int64_t begin, int64_t end)>& fn);

  int num_threads_;
  std::vector<std::thread> workers_;  // started by the first Schedule (or portable ParallelFor)
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // first in, first out
  bool stop_ = false;
};

}  // namespace loom

#endif  // LOOM_BASE_THREAD_POOL_H_
