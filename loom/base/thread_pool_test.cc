#include "loom/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace loom {
namespace {

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

TEST(ThreadPoolTest, DefaultThreadCountIsPositive) {
  EXPECT_GE(ThreadPool::DefaultThreadCount(), 1);
}

}  // namespace
}  // namespace loom
