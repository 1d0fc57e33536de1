// Window, GroupByWindow and Reduce against hand-computed elements (TF 1.15's semantics),
// and their save/restore in the middle of a window or group.
#include <gtest/gtest.h>

#include "loom/data/dataset.h"
#include "loom/data/test_util.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom::data {
namespace {
using loom::testing::ErrorOf;
using testing::CodeOf;
using testing::Ints;
using Rows = std::vector<std::vector<int64_t>>;

// Each element's int64 component `name` as one row.
Rows ReadRows(Iterator& it, const std::string& name = "x", int64_t limit = -1) {
  Rows out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it.GetNext();
    if (!e) break;
    auto flat = e->at(name).flat<int64_t>();
    out.emplace_back(flat.begin(), flat.end());
  }
  return out;
}
Rows ReadRows(const Dataset& d, const std::string& name = "x") {
  auto it = d.MakeIterator();
  return ReadRows(*it, name);
}

// For every split point: read k elements, save, restore into a fresh iterator, read the
// rest; the two parts must be the uninterrupted sequence.
void ExpectRestoresAtEveryPoint(const Dataset& d, const std::string& name = "x") {
  const Rows all = ReadRows(d, name);
  ASSERT_FALSE(all.empty());
  for (size_t k = 0; k <= all.size(); ++k) {
    SCOPED_TRACE(StrCat(d.DebugString(), " split at ", k));
    auto it = d.MakeIterator();
    Rows got = ReadRows(*it, name, static_cast<int64_t>(k));
    const std::string blob = it->Save();
    auto resumed = d.MakeIterator();
    resumed->Restore(blob);
    Rows rest = ReadRows(*resumed, name);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(got, all);
  }
}

TEST(WindowTest, DefaultShiftIsTheSize) {
  // tf.data.Dataset.range(7).window(3): [0 1 2] [3 4 5] [6].
  EXPECT_EQ(ReadRows(Range(7).Window(3)), (Rows{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(ReadRows(Range(7).Window(3, {.drop_remainder = true})), (Rows{{0, 1, 2}, {3, 4, 5}}));
}

TEST(WindowTest, ShiftAndStride) {
  // range(7).window(3, shift=2): starts 0, 2, 4, 6.
  EXPECT_EQ(ReadRows(Range(7).Window(3, {.shift = 2})),
            (Rows{{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6}}));
  // range(7).window(3, shift=1, stride=2): every other element, each start in turn.
  EXPECT_EQ(ReadRows(Range(7).Window(3, {.shift = 1, .stride = 2})),
            (Rows{{0, 2, 4}, {1, 3, 5}, {2, 4, 6}, {3, 5}, {4, 6}, {5}, {6}}));
  EXPECT_EQ(ReadRows(Range(7).Window(3, {.shift = 1, .stride = 2, .drop_remainder = true})),
            (Rows{{0, 2, 4}, {1, 3, 5}, {2, 4, 6}}));
  // A shift longer than the window skips the elements in between.
  EXPECT_EQ(ReadRows(Range(10).Window(2, {.shift = 4})), (Rows{{0, 1}, {4, 5}, {8, 9}}));
  EXPECT_EQ(ReadRows(Range(9).Window(2, {.shift = 4})), (Rows{{0, 1}, {4, 5}, {8}}));
}

TEST(WindowTest, SpecAndStackedComponents) {
  auto d = FromTensorSlices({{"x", testing::Iota(5, 2)}, {"y", testing::Iota(5)}}).Window(2);
  EXPECT_EQ(SpecString(d.spec()), "{x: int64[?,2], y: int64[?]}");
  auto it = d.MakeIterator();
  auto first = it->GetNext();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->at("x").shape(), (Shape{2, 2}));
  auto flat = first->at("x").flat<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(flat.begin(), flat.end()), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(SpecString(Range(5).Window(2, {.drop_remainder = true}).spec()), "{x: int64[2]}");
}

TEST(WindowTest, FlatMapOfBatchIsTheCommonUse) {
  // ds.window(3, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(3)): sliding.
  auto d = Range(5)
               .Window(3, {.shift = 1, .drop_remainder = true})
               .Interleave([](const Element& w) { return FromTensorSlices(w).Batch(3); },
                           {{"x", {kInt64, Shape{kUnknownDim}}}}, {.cycle_length = 1});
  EXPECT_EQ(ReadRows(d), (Rows{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}}));
}

TEST(WindowTest, RejectsBadArgumentsAndRaggedWindows) {
  EXPECT_EQ(CodeOf([] { Range(3).Window(0); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([] { Range(3).Window(2, {.shift = -1}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(CodeOf([] { Range(3).Window(2, {.stride = 0}); }), ErrorCode::kInvalidArgument);
  auto ragged = Range(4).Map(
      [](Element e) {
        return Element{{"x", Tensor::Zeros(kInt64, {e.at("x").scalar<int64_t>()})}};
      },
      {.output_spec = ElementSpec{{"x", {kInt64, Shape{kUnknownDim}}}}});
  std::string message = ErrorOf([&] { ReadRows(ragged.Window(2)); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Window"), std::string::npos) << message;
}

TEST(WindowTest, RestoresMidWindow) {
  ExpectRestoresAtEveryPoint(Range(11).Window(3, {.shift = 1, .stride = 2}));
  ExpectRestoresAtEveryPoint(Range(10).Window(2, {.shift = 4}));
  // Mid-window from the consumer's view: inside the flat_map of a sliding window.
  ExpectRestoresAtEveryPoint(Range(8)
                                 .Window(3, {.shift = 1})
                                 .Interleave([](const Element& w) { return FromTensorSlices(w); },
                                             {{"x", {kInt64, Shape{}}}}, {.cycle_length = 1}));
}

TEST(WindowTest, CorruptBufferCountIsDataLoss) {
  auto d = Range(10).Window(3);
  auto it = d.MakeIterator();
  it->GetNext();
  std::string blob = it->Save();
  auto fresh = d.MakeIterator();
  // Grow the saved buffer count past what a window spans.
  const std::string tag = "Window";
  size_t at = blob.rfind(tag);  // the state's tag, after the pipeline identity
  ASSERT_NE(at, std::string::npos);
  at += tag.size() + 1 + 8;  // the tag, input_done, consumed
  blob[at] = 100;
  EXPECT_EQ(CodeOf([&] { fresh->Restore(blob); }), ErrorCode::kDataLoss);
}

// group_by_window(key_func=lambda x: x % 3, reduce_func=lambda k, w: w.batch(2), 2).
Dataset GroupedByMod3(const Dataset& d, int64_t window_size) {
  return d.GroupByWindow([](const Element& e) { return e.at("x").scalar<int64_t>() % 3; },
                         [](int64_t, const Dataset& w) { return w.Batch(2); }, window_size,
                         {{"x", {kInt64, Shape{kUnknownDim}}}});
}

TEST(GroupByWindowTest, FlushesFullGroupsThenTheRestByKey) {
  // 0..9 by x % 3 in windows of 2: {0,3} full at 3, {1,4} at 4, {2,5} at 5, {6,9} at 9;
  // left at the end: key 1 {7}, key 2 {8}, flushed in key order.
  EXPECT_EQ(ReadRows(GroupedByMod3(Range(10), 2)),
            (Rows{{0, 3}, {1, 4}, {2, 5}, {6, 9}, {7}, {8}}));
  // Windows of 3, each reduced to batches of 2: {0,3,6} full at 6 -> [0 3] [6]; then
  // {1,4,7} -> [1 4] [7]; {2,5,8} -> [2 5] [8]; left: key 0 {9}.
  EXPECT_EQ(ReadRows(GroupedByMod3(Range(10), 3)),
            (Rows{{0, 3}, {6}, {1, 4}, {7}, {2, 5}, {8}, {9}}));
}

TEST(GroupByWindowTest, WindowSizePerKeyAndReduceSeesTheKey) {
  // Key 0 (even) groups of 1, key 1 (odd) groups of 3; reduce_fn adds 100 * key.
  auto d = Range(8).GroupByWindow(
      [](const Element& e) { return e.at("x").scalar<int64_t>() % 2; },
      [](int64_t key, const Dataset& w) {
        return w
            .Map([key](Element e) {
              return Element{
                  {"x", Tensor::Scalar<int64_t>(e.at("x").scalar<int64_t>() + 100 * key)}};
            })
            .Batch(3);
      },
      [](int64_t key) -> int64_t { return key == 0 ? 1 : 3; },
      {{"x", {kInt64, Shape{kUnknownDim}}}});
  EXPECT_EQ(ReadRows(d), (Rows{{0}, {2}, {4}, {101, 103, 105}, {6}, {107}}));
}

TEST(GroupByWindowTest, GroupsMayHoldElementsOfDifferentShapes) {
  // Sequences of length x % 4 grouped by length parity and padded per group (what
  // bucket_by_sequence_length does).
  auto seqs = Range(8).Map(
      [](Element e) {
        const int64_t n = e.at("x").scalar<int64_t>() % 4;
        std::vector<int64_t> v(n, e.at("x").scalar<int64_t>());
        return Element{{"x", Tensor::FromVector(v)}};
      },
      {.output_spec = ElementSpec{{"x", {kInt64, Shape{kUnknownDim}}}}});
  auto d = seqs.GroupByWindow([](const Element& e) { return e.at("x").dim(0) % 2; },
                              [](int64_t, const Dataset& w) { return w.PaddedBatch(2); }, 2,
                              {{"x", {kInt64, Shape{kUnknownDim, kUnknownDim}}}});
  // Even lengths: 0 (x=0), 2 (x=2) -> [[2 2]] padded over [] : rows [0 0] and [2 2];
  // odd: 1 (x=1), 3 (x=3) -> [1 0 0] [3 3 3]; then x=4..7 the same way.
  EXPECT_EQ(ReadRows(d),
            (Rows{{0, 0, 2, 2}, {1, 0, 0, 3, 3, 3}, {0, 0, 6, 6}, {5, 0, 0, 7, 7, 7}}));
}

TEST(GroupByWindowTest, RestoresMidGroupAndWithGroupsBuffered) {
  ExpectRestoresAtEveryPoint(GroupedByMod3(Range(10), 2));
  ExpectRestoresAtEveryPoint(GroupedByMod3(Range(20), 3));
  // Mid-group: every reduced dataset yields its group element by element.
  ExpectRestoresAtEveryPoint(Range(13).GroupByWindow(
      [](const Element& e) { return e.at("x").scalar<int64_t>() % 2; },
      [](int64_t, const Dataset& w) { return w; }, 4, {{"x", {kInt64, Shape{}}}}));
}

TEST(GroupByWindowTest, WrongReduceSpecAndBadWindowSize) {
  auto wrong = Range(4).GroupByWindow([](const Element&) { return int64_t{0}; },
                                      [](int64_t, const Dataset& w) { return w; }, 2,
                                      {{"y", {kInt64, Shape{}}}});
  std::string message = ErrorOf([&] { ReadRows(wrong); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("reduce_fn"), std::string::npos) << message;
  EXPECT_EQ(CodeOf([] { GroupedByMod3(Range(3), 0); }), ErrorCode::kInvalidArgument);
  auto zero = Range(4).GroupByWindow(
      [](const Element&) { return int64_t{7}; }, [](int64_t, const Dataset& w) { return w; },
      [](int64_t) -> int64_t { return 0; }, {{"x", {kInt64, Shape{}}}});
  message = ErrorOf([&] { ReadRows(zero); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("key 7"), std::string::npos) << message;
}

// group_by_reducer(lambda x: x % 3, Reducer(init: (key, 0), reduce: sum, finalize: as is)).
Dataset SumByMod3(const Dataset& d) {
  Reducer reducer{
      .init = [](int64_t key) -> Element {
        return {{"key", Tensor::Scalar<int64_t>(key)}, {"x", Tensor::Scalar<int64_t>(0)}};
      },
      .reduce = [](Element state, Element e) -> Element {
        state["x"] =
            Tensor::Scalar<int64_t>(state.at("x").scalar<int64_t>() + e.at("x").scalar<int64_t>());
        return state;
      },
      .finalize = [](Element state) { return state; },
  };
  return d.GroupByReducer([](const Element& e) { return e.at("x").scalar<int64_t>() % 3; }, reducer,
                          {{"key", {kInt64, Shape{}}}, {"x", {kInt64, Shape{}}}});
}

TEST(GroupByReducerTest, OneElementPerKeyInKeyOrder) {
  // 0..9 by x % 3: key 0 sums 0+3+6+9, key 1 1+4+7, key 2 2+5+8.
  auto d = SumByMod3(Range(10).Map([](Element e) {
    // Keys first seen in the order 1, 2, 0: the output is still in key order.
    e["x"] = Tensor::Scalar<int64_t>(e.at("x").scalar<int64_t>() + 1);
    return e;
  }));
  EXPECT_EQ(Ints(d, "key"), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(Ints(d, "x"), (std::vector<int64_t>{3 + 6 + 9, 1 + 4 + 7 + 10, 2 + 5 + 8}));
  ExpectRestoresAtEveryPoint(d, "x");
  EXPECT_EQ(Ints(SumByMod3(Range(0)), "x"), (std::vector<int64_t>{}));
}

TEST(ReduceTest, FoldsEveryElement) {
  // range(1, 6).reduce((0, 1), lambda s, x: (s[0] + x, s[1] * x)) = (15, 120).
  auto sum_and_product = [](Element s, Element e) {
    const int64_t x = e.at("x").scalar<int64_t>();
    return Element{{"sum", Tensor::Scalar<int64_t>(s.at("sum").scalar<int64_t>() + x)},
                   {"product", Tensor::Scalar<int64_t>(s.at("product").scalar<int64_t>() * x)}};
  };
  Element init{{"sum", Tensor::Scalar<int64_t>(0)}, {"product", Tensor::Scalar<int64_t>(1)}};
  Element out = Range(1, 6).Reduce(init, sum_and_product);
  EXPECT_EQ(out.at("sum").scalar<int64_t>(), 15);
  EXPECT_EQ(out.at("product").scalar<int64_t>(), 120);
  // An empty dataset gives the initial state.
  EXPECT_EQ(Range(0).Reduce(init, sum_and_product).at("product").scalar<int64_t>(), 1);
}

TEST(ReduceTest, StateMustKeepItsComponentsAndDtypes) {
  Element init{{"s", Tensor::Scalar<int64_t>(0)}};
  std::string message = ErrorOf(
      [&] {
        Range(3).Reduce(init, [](Element, Element) {
          return Element{{"s", Tensor::Scalar<float>(1.0f)}};
        });
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Reduce"), std::string::npos) << message;
}

TEST(ReduceTest, InAGraphOverAPlaceholderEachRunReadsTheDatasetAgain) {
  Graph graph;
  Scope s(graph);
  auto values = Placeholder(s.WithOpName("values"), kInt64, {-1});
  auto zero = Placeholder(s.WithOpName("zero"), kInt64, {});
  auto total = FromTensorSlices(values).Reduce(
      s, {{"sum", zero}},
      [](Element state, Element e) {
        return Element{{"sum", Tensor::Scalar<int64_t>(state.at("sum").scalar<int64_t>() +
                                                       e.at("x").scalar<int64_t>())}};
      },
      {{"sum", {kInt64, Shape{}}}});
  ASSERT_EQ(total.size(), 1u);
  EXPECT_EQ(total.at("sum").node->op(), "ReduceDataset");
  Session session(graph);
  auto run = [&](std::vector<int64_t> v, int64_t start) {
    return session
        .Run({{values, Tensor::FromVector(v)}, {zero, Tensor::Scalar<int64_t>(start)}},
             {total.at("sum")})[0]
        .scalar<int64_t>();
  };
  EXPECT_EQ(run({1, 2, 3}, 0), 6);
  EXPECT_EQ(run({1, 2, 3}, 10), 16);
  EXPECT_EQ(run({}, 5), 5);
  EXPECT_EQ(CodeOf([&] {
              FromTensorSlices(values).Reduce(s, {{"sum", zero}},
                                              [](Element st, Element) { return st; },
                                              {{"sum", {kFloat32, Shape{}}}});
            }),
            ErrorCode::kInvalidArgument);
}

// TF1's map: a function raising OutOfRange ends the dataset there (a py_func raising
// StopIteration does); the ended state is saved as such.
TEST(MapEndsOnOutOfRangeTest, SequentialAndParallel) {
  auto stop_at_4 = [](Element e) {
    if (e.at("x").scalar<int64_t>() == 4) throw OutOfRange("no more");
    return e;
  };
  for (int parallel : {0, 3}) {
    SCOPED_TRACE(parallel);
    auto d = Range(10).Map(stop_at_4, {.num_parallel_calls = parallel});
    EXPECT_EQ(Ints(d), (std::vector<int64_t>{0, 1, 2, 3}));
    // Each pass of a Repeat ends there.
    EXPECT_EQ(Ints(d.Repeat(2)), (std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3}));
    // Saved after the end: the restored iterator is at the end too.
    auto it = d.MakeIterator();
    while (it->GetNext()) {
    }
    auto resumed = d.MakeIterator();
    resumed->Restore(it->Save());
    EXPECT_FALSE(resumed->GetNext());
    ExpectRestoresAtEveryPoint(d.Batch(3));
  }
  // Other errors still fail.
  auto fails = Range(3).Map([](Element) -> Element { throw InvalidArgument("bad"); });
  EXPECT_EQ(CodeOf([&] { Ints(fails); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace loom::data
