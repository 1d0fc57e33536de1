#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "loom/base/env.h"
#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Ints;
using testing::Iota;

Element Times10(Element e) {
  Tensor out(kInt64, e.at("x").shape());
  for (int64_t i = 0; i < out.NumElements(); ++i)
    out.data<int64_t>()[i] = e.at("x").data<int64_t>()[i] * 10;
  return {{"x", out}};
}

TEST(MapTest, AppliesFnAndMayChangeTheSpec) {
  EXPECT_EQ(Ints(Range(3).Map(Times10)), (std::vector<int64_t>{0, 10, 20}));
  auto d = Range(2).Map(
      [](Element e) {
        return Element{{"y", Tensor::Scalar<float>(1.5f)}};
      },
      {.output_spec = ElementSpec{{"y", {kFloat32, Shape{}}}}});
  EXPECT_EQ(d.spec().at("y").dtype, kFloat32);
  auto it = d.MakeIterator();
  EXPECT_EQ(it->GetNext()->at("y").scalar<float>(), 1.5f);
}

TEST(MapTest, UndeclaredSpecChangeIsCaughtAtGetNext) {
  auto it = Range(2)
                .Map([](Element) {
                  return Element{{"y", Tensor::Scalar<float>(1)}};
                })
                .MakeIterator();
  std::string message;
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Map"), std::string::npos) << message;
}

TEST(FilterTest, KeepsMatchingElements) {
  auto even = [](const Element& e) { return e.at("x").scalar<int64_t>() % 2 == 0; };
  EXPECT_EQ(Ints(Range(7).Filter(even)), (std::vector<int64_t>{0, 2, 4, 6}));
}

TEST(BatchTest, BatchesWithAndWithoutRemainder) {
  auto it = Range(5).Batch(2).MakeIterator();
  EXPECT_EQ(it->GetNext()->at("x").shape(), Shape({2}));
  it->GetNext();
  auto last = it->GetNext();
  EXPECT_EQ(last->at("x").shape(), Shape({1}));
  EXPECT_FALSE(it->GetNext());
  auto dropped = Range(5).Batch(2, {.drop_remainder = true});
  EXPECT_EQ(dropped.spec().at("x").shape, Shape({2}));
  EXPECT_EQ(Ints(dropped), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Range(5).Batch(2).spec().at("x").shape, Shape({-1}));
  // The generic (non-indexed) path gives the same values.
  EXPECT_EQ(Ints(Range(5).Map([](Element e) { return e; }).Batch(2)),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(BatchTest, RowsOfAMatrixAreGatheredInOrder) {
  auto it = FromTensorSlices({{"x", Iota(6, 3)}}).Batch(4).MakeIterator();
  auto b = it->GetNext();
  EXPECT_EQ(b->at("x").shape(), Shape({4, 3}));
  EXPECT_TRUE(b->at("x").Equals(Iota(4, 3)));
}

TEST(BatchTest, DifferentShapesNameElementComponentAndShapes) {
  auto ragged = Range(4).Map(
      [](Element e) {
        int64_t n = e.at("x").scalar<int64_t>();
        return Element{{"v", Tensor::Zeros(kFloat32, {n})}};
      },
      {.output_spec = ElementSpec{{"v", {kFloat32, Shape{-1}}}}});
  auto it = ragged.Batch(4).MakeIterator();
  std::string message;
  EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("element 1"), std::string::npos) << message;
  EXPECT_NE(message.find("'v'"), std::string::npos) << message;
  EXPECT_NE(message.find("[1]"), std::string::npos) << message;
  EXPECT_NE(message.find("[0]"), std::string::npos) << message;

  auto padded = ragged.PaddedBatch(4, {.padding_values = {{"v", Tensor::Scalar<float>(-1)}}});
  auto p = padded.MakeIterator()->GetNext();
  EXPECT_EQ(p->at("v").shape(), Shape({4, 3}));
  EXPECT_EQ(p->at("v").flat<float>()[0], -1.0f);         // element 0: all padding
  EXPECT_EQ(p->at("v").flat<float>()[3 * 3 + 2], 0.0f);  // element 3: three zeros
  EXPECT_EQ(p->at("v").flat<float>()[1 * 3 + 1], -1.0f);
}

TEST(UnbatchTest, SplitsBatchesIntoViews) {
  Tensor x = Iota(6, 2);
  auto it = FromTensors(x).Unbatch().MakeIterator();
  auto e = it->GetNext();
  EXPECT_EQ(e->at("x").shape(), Shape({2}));
  EXPECT_EQ(e->at("x").raw_data(), x.raw_data());
  EXPECT_EQ(Ints(Range(7).Batch(3).Unbatch()), Ints(Range(7)));
}

TEST(ShuffleTest, PermutesDeterministicallyForASeed) {
  auto d = Range(100).Shuffle(10, {.seed = 7});
  auto a = Ints(d), b = Ints(d);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, Ints(Range(100)));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Ints(Range(100)));
  EXPECT_NE(a, Ints(Range(100).Shuffle(10, {.seed = 8})));
  // A buffer of 10 moves an element at most ~10 places early.
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(a[i], static_cast<int64_t>(i) + 10);
  // The generic path (over elements) is a permutation too.
  auto g = Ints(Range(50).Map([](Element e) { return e; }).Shuffle(50, {.seed = 1}));
  std::sort(g.begin(), g.end());
  EXPECT_EQ(g, Ints(Range(50)));
}

TEST(ShuffleTest, ReshufflesEachEpochUnderRepeat) {
  auto two = Ints(Range(20).Shuffle(20, {.seed = 3}).Repeat(2));
  std::vector<int64_t> first(two.begin(), two.begin() + 20), second(two.begin() + 20, two.end());
  EXPECT_NE(first, second);
  auto same = Ints(Range(20).Shuffle(20, {.seed = 3, .reshuffle_each_iteration = false}).Repeat(2));
  EXPECT_TRUE(std::equal(same.begin(), same.begin() + 20, same.begin() + 20));
}

TEST(ShuffleTest, WithoutSeedOrdersDiffer) {
  auto d = Range(1000).Shuffle(1000);
  EXPECT_NE(Ints(d), Ints(d));
}

TEST(RepeatTakeSkipShardTest, SelectAsTfDataDoes) {
  EXPECT_EQ(Ints(Range(3).Repeat(2)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  auto forever = Range(2).Repeat().MakeIterator();
  EXPECT_EQ(Ints(*forever, "x", 5), (std::vector<int64_t>{0, 1, 0, 1, 0}));
  EXPECT_TRUE(Ints(Range(0).Repeat()).empty());  // no infinite loop on empty input
  EXPECT_EQ(Ints(Range(10).Take(3)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Ints(Range(5).Skip(3)), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(Ints(Range(10).Shard(3, 1)), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(CodeOf([] { Range(10).Shard(3, 3); }), ErrorCode::kInvalidArgument);
  // The same over elements (Map breaks the index path).
  auto id = [](Element e) { return e; };
  EXPECT_EQ(Ints(Range(10).Map(id).Shard(3, 1).Skip(1).Take(1).Repeat(2)),
            (std::vector<int64_t>{4, 4}));
}

TEST(ZipConcatenateTest, MergeAndChain) {
  auto z = Zip({Range(3), Range(10, 20).Map(
                              [](Element e) {
                                return Element{{"y", e.at("x")}};
                              },
                              {.output_spec = ElementSpec{{"y", {kInt64, Shape{}}}}})});
  auto it = z.MakeIterator();
  auto e = it->GetNext();
  EXPECT_EQ(e->at("y").scalar<int64_t>(), 10);
  EXPECT_EQ(Ints(*z.MakeIterator(), "y"), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(CodeOf([] { Zip({Range(3), Range(4)}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Ints(Range(2).Concatenate(Range(5, 7))), (std::vector<int64_t>{0, 1, 5, 6}));
  auto f = FromTensorSlices(Tensor::Zeros(kFloat32, {2, 2}));
  EXPECT_EQ(CodeOf([&] { Range(2).Concatenate(f); }), ErrorCode::kInvalidArgument);
}

TEST(CacheTest, MemoryCacheRunsTheInputOnce) {
  int calls = 0;
  auto d = Range(4)
               .Map([&calls](Element e) {
                 ++calls;
                 return e;
               })
               .Cache()
               .Repeat(3);
  EXPECT_EQ(Ints(d).size(), 12u);
  EXPECT_EQ(calls, 4);
}

TEST(CacheTest, FileCacheStreamsBack) {
  auto env = NewMemEnv();
  int calls = 0;
  auto d = Range(5)
               .Map([&calls](Element e) {
                 ++calls;
                 return e;
               })
               .Cache("/cache/range", {.env = env.get()});
  env->CreateDirs("/cache");
  EXPECT_EQ(Ints(d), Ints(Range(5)));
  EXPECT_TRUE(env->FileExists("/cache/range"));
  EXPECT_EQ(Ints(d), Ints(Range(5)));
  EXPECT_EQ(calls, 5);
}

TEST(InterleaveTest, CyclesThroughBlocks) {
  auto fn = [](const Element& e) {
    int64_t v = e.at("x").scalar<int64_t>();
    return Range(v * 10, v * 10 + 3);
  };
  ElementSpec spec = {{"x", {kInt64, Shape{}}}};
  auto seq = Ints(Range(3).Interleave(fn, spec, {.cycle_length = 2, .block_length = 2}));
  EXPECT_EQ(seq, (std::vector<int64_t>{0, 1, 10, 11, 2, 12, 20, 21, 22}));
  auto par = Ints(Range(3).Interleave(
      fn, spec, {.cycle_length = 2, .block_length = 2, .num_parallel_calls = 2}));
  EXPECT_EQ(par, seq);
}

}  // namespace
}  // namespace loom::data
