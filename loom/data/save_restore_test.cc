#include <gtest/gtest.h>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Ints;
using testing::Iota;

// Runs `d` uninterrupted, and again saving after `k` elements into a fresh iterator;
// both must give the same sequence.
void ExpectResumesExactly(const Dataset& d, int64_t k, int64_t total,
                          const std::string& name = "x") {
  auto whole = d.MakeIterator();
  auto expected = Ints(*whole, name, total);
  auto first = d.MakeIterator();
  auto head = Ints(*first, name, k);
  std::string blob = first->Save();
  auto second = d.MakeIterator();
  second->Restore(blob);
  auto tail = Ints(*second, name, total - static_cast<int64_t>(head.size()));
  head.insert(head.end(), tail.begin(), tail.end());
  EXPECT_EQ(head, expected) << d.DebugString() << " saved after " << k;
}

TEST(SaveRestoreTest, MidEpochShuffleRepeatBatchFastPath) {
  auto d = FromTensorSlices({{"x", Iota(1000)}, {"f", Tensor::Zeros(kFloat32, {1000, 4})}})
               .Shuffle(100, {.seed = 5})
               .Repeat()
               .Batch(32)
               .Prefetch(2);
  for (int64_t k : {0, 1, 17, 31, 40}) ExpectResumesExactly(d, k * 32, 3000);
}

TEST(SaveRestoreTest, FastPathStateStoresIndicesNotElements) {
  auto d = FromTensorSlices(Tensor::Zeros(kFloat32, {10000, 784}))
               .Shuffle(100, {.seed = 1})
               .Repeat()
               .Batch(256)
               .Prefetch(2);
  auto it = d.MakeIterator();
  for (int i = 0; i < 50; ++i) it->GetNext();
  // 100 buffered indices + 2 pending lists of 256 indices: a few KB, not 2 x 800 KB.
  EXPECT_LT(it->Save().size(), 10000u);
}

TEST(SaveRestoreTest, GenericPathWithMapFilterParallelism) {
  auto id = [](Element e) { return e; };
  auto even = [](const Element& e) { return e.at("x").scalar<int64_t>() % 3 != 0; };
  auto d = Range(300)
               .Map(id, {.num_parallel_calls = 3})
               .Filter(even)
               .Shuffle(20, {.seed = 9})
               .Repeat(3)
               .Batch(7)
               .Prefetch(3);
  for (int64_t k : {0, 5, 100, 333}) ExpectResumesExactly(d, k * 7, 600 * 3);
}

TEST(SaveRestoreTest, ShuffleWithoutSeedResumesItsOwnOrder) {
  auto d = Range(500).Shuffle(64).Repeat(2);
  auto it = d.MakeIterator();
  Ints(*it, "x", 123);
  std::string blob = it->Save();
  auto rest = Ints(*it);
  auto other = d.MakeIterator();
  other->Restore(blob);
  EXPECT_EQ(Ints(*other), rest);
}

TEST(SaveRestoreTest, OtherStages) {
  auto fn = [](const Element& e) {
    int64_t v = e.at("x").scalar<int64_t>();
    return Range(v * 10, v * 10 + 4);
  };
  ElementSpec spec = {{"x", {kInt64, Shape{}}}};
  ExpectResumesExactly(Range(6).Interleave(fn, spec, {.cycle_length = 3, .block_length = 2}), 7,
                       24);
  ExpectResumesExactly(Range(6).Interleave(fn, spec, {.cycle_length = 2, .num_parallel_calls = 2}),
                       9, 24);
  ExpectResumesExactly(Range(10).Batch(4).Unbatch(), 5, 10);
  ExpectResumesExactly(Range(5).Concatenate(Range(7, 9)).Skip(1).Take(5), 3, 5);
  ExpectResumesExactly(Zip({Range(5), FromTensorSlices({{"y", Iota(5)}})}), 2, 5);
  ExpectResumesExactly(Range(8).Cache().Repeat(2), 11, 16);
  auto gen = [] {
    return Generator([i = int64_t{0}]() mutable -> std::optional<Element> {
      if (i == 6) return std::nullopt;
      return Element{{"x", Tensor::Scalar<int64_t>(i++)}};
    });
  };
  ExpectResumesExactly(FromGenerator(gen, spec).Shard(2, 1), 2, 3);
}

TEST(SaveRestoreTest, StateOfAnotherPipelineOrCorruptStateIsRejected) {
  auto it = Range(10).Shuffle(5, {.seed = 1}).MakeIterator();
  it->GetNext();
  std::string blob = it->Save();
  auto other = Range(10).Batch(2).MakeIterator();
  EXPECT_EQ(CodeOf([&] { other->Restore(blob); }), ErrorCode::kInvalidArgument);
  auto same = Range(10).Shuffle(5, {.seed = 1}).MakeIterator();
  EXPECT_EQ(CodeOf([&] { same->Restore(blob.substr(0, blob.size() - 3)); }), ErrorCode::kDataLoss);
  EXPECT_EQ(CodeOf([&] { same->Restore("garbage"); }), ErrorCode::kDataLoss);
}

// Issue 9 item 7: a position saved with one batch size (shuffle buffer, count, ...) is
// not restored into a pipeline that would read it differently; the error names what changed.
TEST(SaveRestoreTest, StateOfAPipelineWithOtherParametersIsRejectedNamingTheChange) {
  auto pipeline = [](int64_t batch, int64_t buffer, int64_t take) {
    return FromTensorSlices(Iota(100))
        .Shuffle(buffer, {.seed = 3})
        .Repeat()
        .Take(take)
        .Batch(batch)
        .Prefetch(2);
  };
  auto it = pipeline(8, 50, 1000).MakeIterator();
  Ints(*it, "x", 24);
  const std::string blob = it->Save();
  struct Case {
    Dataset dataset;
    std::string saved, now;
  };
  const std::vector<Case> cases = {
      {pipeline(16, 50, 1000), "Batch batch_size=8", "Batch batch_size=16"},
      {pipeline(8, 40, 1000), "Shuffle buffer_size=50", "Shuffle buffer_size=40"},
      {pipeline(8, 50, 999), "Take count=1000", "Take count=999"},
      {FromTensorSlices(Iota(100))
           .Shuffle(50, {.seed = 4})
           .Repeat()
           .Take(1000)
           .Batch(8)
           .Prefetch(2),
       "seed=3", "seed=4"},
      {FromTensorSlices(Iota(101))
           .Shuffle(50, {.seed = 3})
           .Repeat()
           .Take(1000)
           .Batch(8)
           .Prefetch(2),
       "FromTensorSlices rows=100", "FromTensorSlices rows=101"},
      {pipeline(8, 50, 1000).Unbatch(), "'Prefetch'", "'Unbatch'"},
  };
  for (const Case& c : cases) {
    auto other = c.dataset.MakeIterator();
    try {
      other->Restore(blob);
      ADD_FAILURE() << "restored into " << c.dataset.DebugString();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find(c.saved), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(c.now), std::string::npos) << e.message();
    }
  }
  // The prefetch buffer and the map parallelism do not change the elements: such a change
  // still resumes, exactly.
  auto tuned =
      FromTensorSlices(Iota(100)).Shuffle(50, {.seed = 3}).Repeat().Take(1000).Batch(8).Prefetch(5);
  auto resumed = tuned.MakeIterator();
  resumed->Restore(blob);
  auto whole = pipeline(8, 50, 1000).MakeIterator();
  Ints(*whole, "x", 24);
  EXPECT_EQ(Ints(*resumed, "x", 80), Ints(*whole, "x", 80));
}

// States saved before the identity had parameters ("Batch(Shuffle(Range)) <spec>") still
// restore into the pipeline of that description (with a warning), not into another one.
TEST(SaveRestoreTest, StatesWithTheOlderIdentityStillRestore) {
  auto d = Range(50).Shuffle(10, {.seed = 2}).Repeat().Batch(4);
  auto it = d.MakeIterator();
  Ints(*it, "x", 20);
  const std::string blob = it->Save();
  auto legacy = [&](const std::string& identity) {
    StateReader r(blob);
    const std::string magic = r.ReadString();
    r.ReadString();
    StateWriter w;
    w.WriteString(magic);
    w.WriteString(identity);
    return w.data() + blob.substr(r.position());
  };
  auto resumed = d.MakeIterator();
  resumed->Restore(legacy(d.DebugString() + " " + SpecString(d.spec())));
  EXPECT_EQ(Ints(*resumed, "x", 100), Ints(*it, "x", 100));
  auto other = Range(50).Shuffle(10, {.seed = 2}).Repeat().Take(9).Batch(4).MakeIterator();
  EXPECT_EQ(CodeOf([&] { other->Restore(legacy(d.DebugString() + " " + SpecString(d.spec()))); }),
            ErrorCode::kInvalidArgument);
}

// Issue 9 item 2: with every shuffle seeded, two iterators save identical bytes (no random
// base is drawn); an unseeded shuffle still draws one, and a given seed fixes it.
TEST(SaveRestoreTest, SeededPipelinesSaveIdenticalStates) {
  auto seeded = Range(100).Shuffle(20, {.seed = 9}).Repeat().Batch(4);
  auto a = seeded.MakeIterator(), b = seeded.MakeIterator();
  Ints(*a, "x", 12);
  Ints(*b, "x", 12);
  EXPECT_EQ(a->Save(), b->Save());

  auto unseeded = Range(100).Shuffle(20).Repeat().Batch(4);
  auto c = unseeded.MakeIterator(), d = unseeded.MakeIterator();
  EXPECT_NE(Ints(*c, "x", 40), Ints(*d, "x", 40));  // P(equal) ~ 1/20^40
  EXPECT_NE(c->Save(), d->Save());
  auto e = unseeded.MakeIterator(7), f = unseeded.MakeIterator(7), g = unseeded.MakeIterator(8);
  const auto e_order = Ints(*e, "x", 40);
  EXPECT_EQ(e_order, Ints(*f, "x", 40));
  EXPECT_NE(e_order, Ints(*g, "x", 40));
  EXPECT_EQ(e->Save(), f->Save());
  // The drawn or seeded base travels with the state: a restore continues the same order.
  // (200 values: into the second pass of the Repeat, reshuffled from the base.)
  auto h = unseeded.MakeIterator();
  h->Restore(c->Save());
  EXPECT_EQ(Ints(*h, "x", 200), Ints(*c, "x", 200));
}

}  // namespace
}  // namespace loom::data

namespace loom::data {
namespace {

// A memory Cache's state is the same whatever the iterator did before: recording the first
// pass, replaying a later one, or restored into a process (here: a new dataset, whose cache
// is empty) that re-reads the input up to the position. It used to save its input's state
// while recording, so a resumed run's checkpoint differed from an uninterrupted run's for
// up to two passes (tests/kill_resume_test.cc found it). An unseeded Shuffle before the
// Cache takes its order from the saved random base.
TEST(SaveRestoreTest, MemoryCacheStateIsTheSameWhateverTheHistory) {
  auto make = [] { return Range(10).Shuffle(10).Cache().Shuffle(4, {.seed = 3}).Repeat(4); };
  const Dataset uninterrupted = make();
  auto a = uninterrupted.MakeIterator(11);
  const std::vector<int64_t> expected = Ints(*a, "x", 40);
  for (int64_t k : {0, 3, 9, 10, 14, 27}) {
    SCOPED_TRACE(k);
    auto reference = uninterrupted.MakeIterator(11);
    Ints(*reference, "x", k + 5);
    // Saved after k, restored into a fresh dataset (its cache empty), read 5 more.
    const Dataset first = make();
    auto head = first.MakeIterator(11);
    std::vector<int64_t> seen = Ints(*head, "x", k);
    const Dataset second = make();
    auto tail = second.MakeIterator();
    tail->Restore(head->Save());
    for (int64_t v : Ints(*tail, "x", 5)) seen.push_back(v);
    EXPECT_EQ(seen, std::vector<int64_t>(expected.begin(), expected.begin() + k + 5));
    EXPECT_EQ(tail->Save(), reference->Save());
    // And on to the end, through the passes the restored process caches itself.
    for (int64_t v : Ints(*tail, "x", 40)) seen.push_back(v);
    EXPECT_EQ(seen, expected);
  }
}

}  // namespace
}  // namespace loom::data
