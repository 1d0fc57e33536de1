#include "loom/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#ifndef LOOM_THREAD_POOL_PORTABLE
#include <omp.h>

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
#endif

namespace loom {
namespace {

int64_t ThreadsOfThisProcess() {
  int64_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++count;
  }
  return count;
}

void ExpectEachItemOnce(ThreadPool& pool, int64_t n, int64_t min_chunk) {
  std::vector<std::atomic<int>> hits(n);
  pool.ParallelFor(n, min_chunk, [&](int64_t begin, int64_t end) {
    ASSERT_LE(0, begin);
    ASSERT_LE(begin, end);
    ASSERT_LE(end, n);
    for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
  });
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i;
}

TEST(ThreadPoolTest, ParallelForCoversEveryItemExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 2, 3, 7, 100, 1001}) {
    for (int64_t min_chunk : {1, 3, 64}) ExpectEachItemOnce(pool, n, min_chunk);
  }
}

TEST(ThreadPoolTest, ChunksRespectMinChunk) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.ParallelFor(10, 100, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 10);
    calls++;
  });
  EXPECT_EQ(calls.load(), 1);
}

TEST(ThreadPoolTest, UsesSeveralThreadsForLargeLoops) {
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> chunks{0};
  pool.ParallelFor(3, 1, [&](int64_t, int64_t) {
    chunks++;
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(chunks.load(), 3);
  EXPECT_GE(ids.size(), 1u);
}

TEST(ThreadPoolTest, ExceptionPropagatesAfterAllChunksFinish) {
  ThreadPool pool(4);
  std::atomic<int> finished{0};
  EXPECT_THROW(pool.ParallelFor(8, 1,
                                [&](int64_t begin, int64_t end) {
                                  if (begin == 0) throw std::runtime_error("chunk 0 failed");
                                  finished++;
                                }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
  // The pool still works afterwards.
  ExpectEachItemOnce(pool, 50, 1);
}

TEST(ThreadPoolTest, ExceptionFromWorkerChunkPropagates) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.ParallelFor(10, 1,
                                [&](int64_t begin, int64_t end) {
                                  if (end == 10) throw std::logic_error("last chunk failed");
                                }),
               std::logic_error);
}

TEST(ThreadPoolTest, PoolOfOneRunsInlineOnCallingThread) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1);
  const auto caller = std::this_thread::get_id();
  int calls = 0;
  pool.ParallelFor(1000, 1, [&](int64_t begin, int64_t end) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(begin, 0);
    EXPECT_EQ(end, 1000);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
  bool ran = false;
  pool.Schedule([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(ThreadPoolTest, ScheduleRunsEveryTaskBeforeDestruction) {
  std::atomic<int> count{0};
  {
    ThreadPool pool(3);
    for (int i = 0; i < 100; ++i) pool.Schedule([&] { count++; });
  }
  EXPECT_EQ(count.load(), 100);
}

TEST(ThreadPoolTest, APoolStartsNoThreadUntilItNeedsOne) {
  const int64_t before = ThreadsOfThisProcess();
  ThreadPool pool(4);
  EXPECT_EQ(ThreadsOfThisProcess(), before);
  pool.Schedule([] {});
  EXPECT_EQ(ThreadsOfThisProcess(), before + 3);
}

#ifndef LOOM_THREAD_POOL_PORTABLE
std::set<std::thread::id> OpenMpTeam(unsigned size) {
  struct Ids {
    std::mutex mu;
    std::set<std::thread::id> ids;
  } ids;
  GOMP_parallel(
      [](void* data) {
        auto& r = *static_cast<Ids*>(data);
        std::lock_guard<std::mutex> lock(r.mu);
        r.ids.insert(std::this_thread::get_id());
      },
      &ids, size, 0);
  return ids.ids;
}

// The point of the design: a kernel's ParallelFor and oneDNN's OpenMP products run on the
// same threads, so a Session with N intra-op threads never has more than N of them busy.
TEST(ThreadPoolTest, ParallelForRunsOnTheCallersOpenMpTeam) {
  const std::set<std::thread::id> team = OpenMpTeam(3);
  ASSERT_EQ(team.size(), 3u);
  const int64_t threads = ThreadsOfThisProcess();
  ThreadPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> ids;
  for (int i = 0; i < 20; ++i) {
    pool.ParallelFor(3, 1, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(ids, team);
  EXPECT_EQ(ThreadsOfThisProcess(), threads) << "ParallelFor started threads of its own";
}

TEST(ThreadPoolTest, AParallelForInsideAChunkRunsOnItsThread) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(2 * 100);
  pool.ParallelFor(2, 1, [&](int64_t begin, int64_t end) {
    for (int64_t outer = begin; outer < end; ++outer) {
      const auto thread = std::this_thread::get_id();
      pool.ParallelFor(100, 1, [&](int64_t b, int64_t e) {
        EXPECT_EQ(std::this_thread::get_id(), thread);
        for (int64_t i = b; i < e; ++i) hits[outer * 100 + i].fetch_add(1);
      });
    }
  });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
}
#endif

TEST(ThreadPoolTest, DefaultThreadCountIsPositive) {
  EXPECT_GE(ThreadPool::DefaultThreadCount(), 1);
}

}  // namespace
}  // namespace loom
