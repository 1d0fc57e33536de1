#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Ints;

// Sleeps longer for early elements, so a parallel map finishes them out of order.
Element SlowEarly(Element e) {
  int64_t v = e.at("x").scalar<int64_t>();
  std::this_thread::sleep_for(std::chrono::milliseconds(v < 4 ? 20 - 4 * v : 0));
  return e;
}

TEST(ParallelMapTest, KeepsInputOrderWhenDeterministic) {
  EXPECT_EQ(Ints(Range(20).Map(SlowEarly, {.num_parallel_calls = 4})), Ints(Range(20)));
}

TEST(ParallelMapTest, NondeterministicYieldsEveryElement) {
  auto got = Ints(Range(20).Map(SlowEarly, {.num_parallel_calls = 4, .deterministic = false}));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, Ints(Range(20)));
}

TEST(ParallelMapTest, SameSeedSameOrderWhateverParallelism) {
  auto pipeline = [](int parallel) {
    return Range(200)
        .Shuffle(50, {.seed = 11})
        .Map(SlowEarly, {.num_parallel_calls = parallel})
        .Batch(7);
  };
  auto a = Ints(pipeline(0));
  EXPECT_EQ(a, Ints(pipeline(1)));
  EXPECT_EQ(a, Ints(pipeline(3)));
  EXPECT_EQ(a, Ints(pipeline(kAutotune)));
}

TEST(ParallelMapTest, ErrorKeepsCodeAndMessage) {
  auto d = Range(10).Map(
      [](Element e) {
        if (e.at("x").scalar<int64_t>() == 5) throw DataLoss("record 5 is corrupt");
        return e;
      },
      {.num_parallel_calls = 3});
  auto it = d.MakeIterator();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(it->GetNext());
  std::string message;
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kDataLoss);
  EXPECT_EQ(message, "record 5 is corrupt");
}

TEST(PrefetchTest, SameElementsAndErrorsPassThrough) {
  EXPECT_EQ(Ints(Range(10).Map([](Element e) { return e; }).Prefetch(3)), Ints(Range(10)));
  EXPECT_EQ(Ints(Range(10).Batch(3).Prefetch(2)), Ints(Range(10)));  // gather fast path
  auto d = Range(10)
               .Map([](Element e) {
                 if (e.at("x").scalar<int64_t>() == 2) throw InvalidArgument("bad element 2");
                 return e;
               })
               .Prefetch(4);
  auto it = d.MakeIterator();
  it->GetNext();
  it->GetNext();
  std::string message;
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_EQ(message, "bad element 2");
  EXPECT_FALSE(it->GetNext());
}

TEST(ParallelInterleaveTest, ErrorFromASlotSurfaces) {
  auto fn = [](const Element& e) {
    return Range(3).Map([](Element x) -> Element { throw NotFound("no such file: shard-7"); });
  };
  auto it =
      Range(2)
          .Interleave(fn, {{"x", {kInt64, Shape{}}}}, {.cycle_length = 2, .num_parallel_calls = 2})
          .MakeIterator();
  std::string message;
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kNotFound);
  EXPECT_EQ(message, "no such file: shard-7");
}

}  // namespace
}  // namespace loom::data
