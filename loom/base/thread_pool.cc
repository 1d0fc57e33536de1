#include "loom/base/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

#ifndef LOOM_THREAD_POOL_PORTABLE
#include <omp.h>

// libgomp's entry point for a parallel region: what GCC compiles `#pragma omp parallel` to
// (GCC >= 4.9), declared here so that the pool needs no -fopenmp and clang builds, whose
// OpenMP would be LLVM's libomp, share libgomp's team with oneDNN too.
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
#endif

#include "loom/base/check.h"

namespace loom {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  LOOM_CHECK(num_threads >= 1) << "ThreadPool needs at least one thread";
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::DefaultThreadCount() { return std::max(1u, std::thread::hardware_concurrency()); }

void ThreadPool::StartWorkersLocked() {
  if (!workers_.empty()) return;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::Schedule(std::function<void()> fn) {
  if (num_threads_ == 1) {
    fn();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    StartWorkersLocked();
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  const int64_t max_chunks = std::max<int64_t>(1, n / min_chunk);
  const int64_t num_chunks = std::min<int64_t>(num_threads_, max_chunks);
  if (num_chunks <= 1) {
    fn(0, n);
    return;
  }
#ifdef LOOM_THREAD_POOL_PORTABLE
  ParallelForOnWorkers(n, num_chunks, fn);
#else
  struct Region {
    int64_t n;
    const std::function<void(int64_t, int64_t)>* fn;
    std::mutex mu;
    std::exception_ptr error;
  } region{n, &fn, {}, {}};
  // Each thread of the team runs one chunk; the team may be smaller than asked for (a
  // region nested in another runs on one thread), so the chunks follow its size.
  GOMP_parallel(
      [](void* data) {
        auto& r = *static_cast<Region*>(data);
        const int64_t chunks = omp_get_num_threads(), c = omp_get_thread_num();
        try {
          (*r.fn)(r.n * c / chunks, r.n * (c + 1) / chunks);
        } catch (...) {
          std::lock_guard<std::mutex> lock(r.mu);
          if (!r.error) r.error = std::current_exception();
        }
      },
      &region, static_cast<unsigned>(num_chunks), 0);
  if (region.error) std::rethrow_exception(region.error);
#endif
}

void ThreadPool::ParallelForOnWorkers(int64_t n, int64_t num_chunks,
                                      const std::function<void(int64_t, int64_t)>& fn) {
  struct Shared {
    std::atomic<int64_t> remaining;
    std::mutex mu;
    std::condition_variable done;
    std::exception_ptr error;
  } shared;
  shared.remaining = num_chunks - 1;
  auto run_chunk = [&](int64_t c) {
    const int64_t begin = n * c / num_chunks, end = n * (c + 1) / num_chunks;
    try {
      fn(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(shared.mu);
      if (!shared.error) shared.error = std::current_exception();
    }
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    StartWorkersLocked();
    for (int64_t c = 1; c < num_chunks; ++c) {
      queue_.push_back([&, c] {
        run_chunk(c);
        // Count down under the mutex: the caller cannot see zero, return and destroy
        // `shared` (it lives on the caller's stack) while this worker still touches it.
        std::lock_guard<std::mutex> lock(shared.mu);
        if (--shared.remaining == 0) shared.done.notify_one();
      });
    }
  }
  cv_.notify_all();
  run_chunk(0);
  {
    std::unique_lock<std::mutex> lock(shared.mu);
    shared.done.wait(lock, [&] { return shared.remaining.load() == 0; });
  }
  if (shared.error) std::rethrow_exception(shared.error);
}

}  // namespace loom
