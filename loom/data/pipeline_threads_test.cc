// The threaded stages under load, for `make tsan` (session 16's campaign, after session
// 15's Prefetch and memory Cache changes): a Prefetch saved at every step while its worker
// reads a parallel Map over a memory Cache, two iterators of one dataset recording and
// replaying the Cache's shared store on two threads at once, and iterators destroyed while
// their workers are busy or blocked on a full buffer. Every sequence must equal the
// uninterrupted single-threaded one.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::Ints;

// Range -> Shuffle (seeded) -> memory Cache -> Map (3 parallel calls) -> Repeat -> Batch
// -> Prefetch: a new dataset per call, so its Cache store is fresh.
Dataset Pipeline(int64_t prefetch) {
  auto add_one = [](Element e) {
    e["x"] = Tensor::Scalar<int64_t>(e.at("x").scalar<int64_t>() + 1);
    return e;
  };
  Dataset d = Range(97).Shuffle(20, {.seed = 4}).Cache().Map(add_one, {.num_parallel_calls = 3});
  d = d.Repeat(3).Batch(5).Unbatch();
  return prefetch > 0 ? d.Prefetch(prefetch) : d;
}

// Saving at every step (each save waits for the Prefetch worker to fill its buffer) and
// restoring into a fresh iterator every 7 steps gives the uninterrupted sequence.
TEST(PipelineThreadsTest, PrefetchSavedAtEveryStepOverAParallelMapAndACache) {
  const std::vector<int64_t> want = Ints(*Pipeline(0).MakeIterator(), "x", 1000);
  ASSERT_EQ(want.size(), 3u * 97);
  for (int64_t prefetch : {1, 3}) {
    const Dataset d = Pipeline(prefetch);
    auto it = d.MakeIterator();
    std::vector<int64_t> got;
    for (int step = 0;; ++step) {
      const std::string blob = it->Save();
      if (step % 7 == 3) {
        it = d.MakeIterator();
        it->Restore(blob);
      }
      std::optional<Element> e = it->GetNext();
      if (!e) break;
      got.push_back(e->at("x").scalar<int64_t>());
    }
    EXPECT_EQ(got, want) << "prefetch " << prefetch;
  }
}

// Two iterators of one dataset share its memory Cache: both record the first pass at
// once on two threads, then replay; each sees the whole sequence.
TEST(PipelineThreadsTest, TwoIteratorsShareOneMemoryCacheOnTwoThreads) {
  const std::vector<int64_t> want = Ints(*Pipeline(0).MakeIterator(), "x", 1000);
  for (int round = 0; round < 5; ++round) {
    const Dataset d = Pipeline(2);
    std::vector<int64_t> a, b;
    std::thread other([&] { a = Ints(*d.MakeIterator(), "x", 1000); });
    b = Ints(*d.MakeIterator(), "x", 1000);
    other.join();
    EXPECT_EQ(a, want) << "round " << round;
    EXPECT_EQ(b, want) << "round " << round;
    // A third iterator after both: the store is complete, it replays.
    EXPECT_EQ(Ints(*d.MakeIterator(), "x", 1000), want) << "round " << round;
  }
}

// Iterators destroyed mid-stream (their Prefetch worker blocked on a full buffer or busy in
// the Map, its Map workers running) and mid-save on another thread's dataset: no hang, no
// report.
TEST(PipelineThreadsTest, IteratorsDestroyedWhileTheirWorkersRun) {
  const Dataset d = Pipeline(4);
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  threads.reserve(3);
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto it = d.MakeIterator();
        for (int k = 0; k < (i * 7 + t) % 13; ++k) it->GetNext();
        if (i % 3 == 0) it->Save();
      }
      done.fetch_add(1);
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(done.load(), 3);
}

}  // namespace
}  // namespace loom::data
