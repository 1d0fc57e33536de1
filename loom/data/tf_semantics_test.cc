// tf.data edge cases pinned against TF 1.15's behaviour (each test names what TF does):
// counts at and past the ends, drop_remainder across a Repeat, the padding defaults, the
// interleave order of TF's own docstring example, invalid sizes, and a map that fails.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"

namespace loom::data {
namespace {
using testing::CodeOf;
using testing::Ints;

Element TfSemanticsPassThrough(Element e) { return e; }

// TF: batch after repeat spans the epochs, and drop_remainder drops only the last partial
// batch of the whole stream; batch before repeat drops the partial batch of every epoch.
TEST(TfSemanticsTest, DropRemainderAtTheEndOfARepeat) {
  for (bool indexed : {true, false}) {
    SCOPED_TRACE(indexed ? "index path" : "element path");
    Dataset src = indexed ? Range(5) : Range(5).Map(TfSemanticsPassThrough);
    auto after = src.Repeat(2).Batch(3, {.drop_remainder = true});
    EXPECT_EQ(Ints(after), (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3}));
    auto before = src.Batch(2, {.drop_remainder = true}).Repeat(2);
    EXPECT_EQ(Ints(before), (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3}));
    auto kept = src.Repeat(2).Batch(3);
    auto it = kept.MakeIterator();
    int batches = 0;
    while (auto b = it->GetNext()) {
      ++batches;
      if (batches == 4) {
        EXPECT_EQ(b->at("x").shape(), Shape({1}));
      }
    }
    EXPECT_EQ(batches, 4);
  }
}

// TF: take(-1) (any negative count) takes everything, take(0) nothing; skip(-1) skips
// everything, a skip past the end leaves nothing; repeat(0) is empty. A repeat of a
// dataset that became empty ends rather than looping.
TEST(TfSemanticsTest, CountsAtAndPastTheEnds) {
  const std::vector<int64_t> all = {0, 1, 2, 3, 4};
  for (bool indexed : {true, false}) {
    SCOPED_TRACE(indexed ? "index path" : "element path");
    Dataset src = indexed ? Range(5) : Range(5).Map(TfSemanticsPassThrough);
    EXPECT_EQ(Ints(src.Take(-1)), all);
    EXPECT_EQ(Ints(src.Take(-7)), all);
    EXPECT_TRUE(Ints(src.Take(0)).empty());
    EXPECT_EQ(Ints(src.Take(100)), all);
    EXPECT_TRUE(Ints(src.Skip(-1)).empty());
    EXPECT_TRUE(Ints(src.Skip(5)).empty());
    EXPECT_TRUE(Ints(src.Skip(6)).empty());
    EXPECT_EQ(Ints(src.Skip(0)), all);
    EXPECT_TRUE(Ints(src.Repeat(0)).empty());
    EXPECT_TRUE(Ints(src.Skip(9).Repeat()).empty());
    EXPECT_TRUE(Ints(src.Take(0).Repeat()).empty());
  }
}

// TF: shuffle draws a new order for each pass of a repeat after it, unless
// reshuffle_each_iteration is false (then every pass repeats the first one's order), seeded
// or not, over rows or over mapped elements.
TEST(TfSemanticsTest, ReshuffleEachIterationAcrossRepeatPasses) {
  for (bool indexed : {true, false}) {
    for (std::optional<uint64_t> seed : {std::optional<uint64_t>(5), std::optional<uint64_t>()}) {
      SCOPED_TRACE(StrCat(indexed ? "index path" : "element path", seed ? " seeded" : ""));
      Dataset src = indexed ? Range(30) : Range(30).Map(TfSemanticsPassThrough);
      for (bool reshuffle : {true, false}) {
        auto v =
            Ints(src.Shuffle(30, {.seed = seed, .reshuffle_each_iteration = reshuffle}).Repeat(3));
        ASSERT_EQ(v.size(), 90u);
        const std::vector<int64_t> first(v.begin(), v.begin() + 30);
        const std::vector<int64_t> second(v.begin() + 30, v.begin() + 60);
        const std::vector<int64_t> third(v.begin() + 60, v.end());
        EXPECT_NE(first, Ints(Range(30)));
        if (reshuffle) {
          EXPECT_NE(first, second);
          EXPECT_NE(second, third);
        } else {
          EXPECT_EQ(first, second);
          EXPECT_EQ(first, third);
        }
      }
    }
  }
}

// TF: repeat(n) runs n passes even when one of them is empty (a filter that drops a whole
// pass, a generator with nothing left); repeat() forever ends at an empty pass. A finite
// repeat used to end at the first empty pass too, silently dropping the passes after it.
TEST(TfSemanticsTest, AnEmptyPassEndsOnlyARepeatForever) {
  auto passes = std::make_shared<std::atomic<int>>(0);
  // Pass k yields k, except that pass 1 yields nothing.
  auto source = FromGenerator(
      [passes]() -> Generator {
        const int pass = (*passes)++;
        auto left = std::make_shared<bool>(pass != 1);
        return [pass, left]() -> std::optional<Element> {
          if (!*left) return std::nullopt;
          *left = false;
          return Element{{"x", Tensor::Scalar<int64_t>(pass)}};
        };
      },
      ElementSpec{{"x", {kInt64, Shape{}}}});
  EXPECT_EQ(Ints(source.Repeat(4)), (std::vector<int64_t>{0, 2, 3}));
  *passes = 0;
  EXPECT_EQ(Ints(source.Repeat()), (std::vector<int64_t>{0}));
  // The same through a filter that drops every element of the second pass of a Range.
  auto drop_second_pass = [n = std::make_shared<int>(0)](const Element&) {
    return (*n)++ / 3 != 1;
  };
  EXPECT_EQ(Ints(Range(3).Filter(drop_second_pass).Repeat(3)),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

// TF: zip ends with its shortest input.
TEST(TfSemanticsTest, ZipOfUnequalLengthsEndsWithTheShortest) {
  auto y = Range(100, 102).Map(
      [](Element e) {
        return Element{{"y", e.at("x")}};
      },
      {.output_spec = ElementSpec{{"y", {kInt64, Shape{}}}}});
  EXPECT_EQ(Ints(Zip({Range(5), y})), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Ints(Zip({y, Range(5)}), "y"), (std::vector<int64_t>{100, 101}));
  EXPECT_TRUE(Ints(Zip({Range(0), y}), "y").empty());
}

// TF: padded_batch pads numbers with 0, bools with false and strings with "", to each
// batch's longest element where padded_shapes leaves a dim unknown.
TEST(TfSemanticsTest, PaddedBatchDefaults) {
  auto ragged = Range(1, 4).Map(
      [](Element e) {
        const int64_t n = e.at("x").scalar<int64_t>();
        Tensor s(kString, {n}), b(kBool, {n}), f(kFloat32, {n});
        for (int64_t i = 0; i < n; ++i) {
          s.data<std::string>()[i] = "w";
          b.data<bool>()[i] = true;
          f.data<float>()[i] = 7;
        }
        return Element{{"s", s}, {"b", b}, {"f", f}};
      },
      {.output_spec = ElementSpec{
           {"s", {kString, Shape{-1}}}, {"b", {kBool, Shape{-1}}}, {"f", {kFloat32, Shape{-1}}}}});
  auto batch = ragged.PaddedBatch(3).MakeIterator()->GetNext();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->at("s").shape(), Shape({3, 3}));
  const std::vector<std::string> s(batch->at("s").data<std::string>(),
                                   batch->at("s").data<std::string>() + 9);
  EXPECT_EQ(s, (std::vector<std::string>{"w", "", "", "w", "w", "", "w", "w", "w"}));
  const bool* b = batch->at("b").data<bool>();
  EXPECT_EQ(std::vector<bool>(b, b + 9),
            (std::vector<bool>{true, false, false, true, true, false, true, true, true}));
  const float* f = batch->at("f").data<float>();
  EXPECT_EQ(std::vector<float>(f, f + 9), (std::vector<float>{7, 0, 0, 7, 7, 0, 7, 7, 7}));
  // A padded shape of 5 pads past the longest element.
  auto wide = ragged.PaddedBatch(2, {.padded_shapes = {{"f", Shape{5}}}}).MakeIterator()->GetNext();
  EXPECT_EQ(wide->at("f").shape(), Shape({2, 5}));
  EXPECT_EQ(wide->at("s").shape(), Shape({2, 2}));
}

// TF's interleave docstring: range(1, 6).interleave(lambda x: from_tensors(x).repeat(6),
// cycle_length=2, block_length=4).
TEST(TfSemanticsTest, InterleaveOrderOfTheTfDocstring) {
  auto fn = [](const Element& e) { return FromTensors(e.at("x")).Repeat(6); };
  const ElementSpec spec = {{"x", {kInt64, Shape{}}}};
  const std::vector<int64_t> tf = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3,
                                   3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
  EXPECT_EQ(Ints(Range(1, 6).Interleave(fn, spec, {.cycle_length = 2, .block_length = 4})), tf);
  EXPECT_EQ(Ints(Range(1, 6).Interleave(
                fn, spec, {.cycle_length = 2, .block_length = 4, .num_parallel_calls = 2})),
            tf);
}

// TF: cache then repeat runs the input once; a shuffle before the cache is frozen by it.
TEST(TfSemanticsTest, CacheThenRepeatReplaysTheFirstPass) {
  std::atomic<int> calls = 0;
  auto d = Range(6)
               .Map([&calls](Element e) {
                 ++calls;
                 return e;
               })
               .Shuffle(6, {.seed = 1})
               .Cache()
               .Repeat(3);
  auto v = Ints(d);
  ASSERT_EQ(v.size(), 18u);
  EXPECT_TRUE(std::equal(v.begin(), v.begin() + 6, v.begin() + 6));
  EXPECT_TRUE(std::equal(v.begin(), v.begin() + 6, v.begin() + 12));
  EXPECT_EQ(calls, 6);
}

// TF: batch_size <= 0 is "Batch size must be greater than zero", a shuffle buffer <= 0
// "buffer_size must be greater than zero" (InvalidArgument).
TEST(TfSemanticsTest, NonPositiveSizesAreInvalidArgument) {
  for (int64_t n : {0, -1}) {
    std::string message;
    EXPECT_EQ(CodeOf([&] { Range(3).Batch(n); }, &message), ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find("batch_size"), std::string::npos) << message;
    EXPECT_EQ(CodeOf([&] { Range(3).PaddedBatch(n); }), ErrorCode::kInvalidArgument);
    EXPECT_EQ(CodeOf([&] { Range(3).Shuffle(n); }), ErrorCode::kInvalidArgument);
    EXPECT_EQ(CodeOf([&] { Range(3).Window(n); }), ErrorCode::kInvalidArgument);
  }
}

// TF: prefetch(0) reads straight through, prefetch(AUTOTUNE) (-1) prefetches (TF tunes the
// buffer, Loom's is kAutotunePrefetchBuffer); any other negative size is InvalidArgument.
// Both used to be InvalidArgument ("buffer_size must be positive").
TEST(TfSemanticsTest, PrefetchZeroAndAutotune) {
  for (bool indexed : {true, false}) {
    SCOPED_TRACE(indexed ? "index path" : "element path");
    Dataset src = indexed ? Range(7) : Range(7).Map(TfSemanticsPassThrough);
    EXPECT_EQ(Ints(src.Prefetch(0)), Ints(Range(7)));
    EXPECT_EQ(Ints(src.Prefetch(kAutotune)), Ints(Range(7)));
    EXPECT_EQ(Ints(src.Batch(2).Prefetch(0)), Ints(Range(7)));
    EXPECT_EQ(Ints(src.Batch(2).Prefetch(kAutotune)), Ints(Range(7)));
  }
  std::string message;
  EXPECT_EQ(CodeOf([] { Range(3).Prefetch(-2); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("kAutotune"), std::string::npos) << message;
}

// TF: an error in map's function is the iterator's error at that element (the elements
// before it come out first), with or without num_parallel_calls and a prefetch after it.
TEST(TfSemanticsTest, MapThatFailsOnOneElementStopsThere) {
  auto fail_on_3 = [](Element e) {
    if (e.at("x").scalar<int64_t>() == 3) throw InvalidArgument("bad element 3");
    return e;
  };
  for (int parallel : {0, 2}) {
    for (bool prefetch : {false, true}) {
      SCOPED_TRACE(StrCat("num_parallel_calls=", parallel, " prefetch=", prefetch));
      Dataset d = Range(6).Map(fail_on_3, {.num_parallel_calls = parallel});
      if (prefetch) d = d.Prefetch(2);
      auto it = d.MakeIterator();
      for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(it->GetNext()->at("x").scalar<int64_t>(), i);
      std::string message;
      EXPECT_EQ(CodeOf([&] { it->GetNext(); }, &message), ErrorCode::kInvalidArgument);
      EXPECT_NE(message.find("bad element 3"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace loom::data
