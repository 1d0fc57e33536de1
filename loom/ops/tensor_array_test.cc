#include "loom/ops/tensor_array.h"

#include <gtest/gtest.h>

#include <numeric>

#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

constexpr double kTolerance = 1e-8;

Tensor Mask(const std::vector<int64_t>& bits) { return Tensor::FromVector<int64_t>(bits); }
Output Index(const Scope& s, int64_t i) { return Const(s, Tensor::Scalar<int64_t>(i)); }
// The empty placeholder of an array nothing was written to.
Output Empty(const Scope& s) { return Const(s, Tensor::Zeros(kFloat64, {0})); }

std::vector<double> Values(const Tensor& t) {
  auto v = t.flat<double>();
  return std::vector<double>(v.begin(), v.end());
}

Tensor Eval(Graph& graph, Output y, const FeedList& feeds = {}) {
  Session session(graph, {.intra_op_threads = 1});
  return session.Eval(y, feeds);
}

TEST(TensorArrayTest, WritesInAnyOrderThenReadsGathersAndStacks) {
  Graph graph;
  Scope s(graph);
  TensorArrayState ta = {Empty(s), Const(s, Mask({0, 0, 0}))};
  ta = TensorArrayWrite(s, ta.data, ta.written, Index(s, 2),
                        Const(s, std::vector<double>{5, 6}, Shape{2}), false, "ta");
  ta = TensorArrayWrite(s, ta.data, ta.written, Index(s, 0),
                        Const(s, std::vector<double>{1, 2}, Shape{2}), false, "ta");
  ta = TensorArrayWrite(s, ta.data, ta.written, Index(s, 1),
                        Const(s, std::vector<double>{3, 4}, Shape{2}), false, "ta");
  EXPECT_EQ(ta.data.shape(), Shape({3, 2}));
  Tensor stacked = Eval(graph, TensorArrayStack(s, ta.data, ta.written, "ta"));
  EXPECT_EQ(stacked.shape(), Shape({3, 2}));
  EXPECT_EQ(Values(stacked), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Values(Eval(graph, TensorArrayRead(s, ta.data, ta.written, Index(s, 1), "ta"))),
            (std::vector<double>{3, 4}));
  Output rows = TensorArrayRead(s, ta.data, ta.written,
                                Const(s, Tensor::FromVector<int32_t>({2, 2, 0})), "ta");
  EXPECT_EQ(rows.shape(), Shape({3, 2}));
  EXPECT_EQ(Values(Eval(graph, rows)), (std::vector<double>{5, 6, 5, 6, 1, 2}));
}

TEST(TensorArrayTest, DynamicSizeGrowsWithUnwrittenGaps) {
  Graph graph;
  Scope s(graph);
  TensorArrayState ta = TensorArrayWrite(s, Empty(s), Const(s, Mask({})), Index(s, 3),
                                         Const(s, Tensor::Scalar<double>(7)), true, "grow");
  Tensor mask = Eval(graph, ta.written);
  EXPECT_EQ(std::vector<int64_t>(mask.flat<int64_t>().begin(), mask.flat<int64_t>().end()),
            (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(Values(Eval(graph, ta.data)), (std::vector<double>{0, 0, 0, 7}));
  EXPECT_CONTAINS(ErrorOf([&] { Eval(graph, TensorArrayStack(s, ta.data, ta.written, "grow")); },
                          ErrorCode::kInvalidArgument),
                  "TensorArray grow: Could not read from TensorArray index 0 because it has not "
                  "yet been written to.");
}

TEST(TensorArrayTest, RunTimeErrorsAreTfs) {
  Graph graph;
  Scope s(graph);
  auto index = Placeholder(s, kInt64, {});
  auto value = Placeholder(s, kFloat64, {-1});
  TensorArrayState one = TensorArrayWrite(s, Empty(s), Const(s, Mask({0, 0})), Index(s, 0),
                                          Const(s, std::vector<double>{1}, Shape{1}), false, "a");
  Output again = TensorArrayWrite(s, one.data, one.written, index, value, false, "a").data;
  auto run = [&](Output y, int64_t i, std::vector<double> v) {
    return ErrorOf(
        [&] {
          Eval(graph, y,
               {{index, Tensor::Scalar<int64_t>(i)}, {value, Tensor::FromVector<double>(v)}});
        },
        ErrorCode::kInvalidArgument);
  };
  EXPECT_CONTAINS(run(again, 0, {2}),
                  "TensorArray a: Could not write to TensorArray index 0 because it has already "
                  "been written to.");
  EXPECT_CONTAINS(run(again, 2, {2}),
                  "TensorArray a: Tried to write to index 2 but array is not resizeable and "
                  "size is: 2");
  EXPECT_CONTAINS(run(again, -1, {2}), "Tried to write to index -1");
  EXPECT_CONTAINS(run(again, 1, {2, 3}),
                  "because the value shape is [2] which is incompatible with the TensorArray's "
                  "inferred element shape: [1]");
  Output read = TensorArrayRead(s, one.data, one.written, index, "a");
  EXPECT_CONTAINS(run(read, 1, {}),
                  "TensorArray a: Could not read from TensorArray index 1 because it has not yet "
                  "been written to.");
  EXPECT_CONTAINS(run(read, 5, {}),
                  "TensorArray a: Tried to read from index 5 but array size is: 2");
  Output unstacked = TensorArrayUnstack(s, Const(s, Mask({0, 0, 0})), value, false, "u").data;
  EXPECT_CONTAINS(run(unstacked, 0, {1, 2}),
                  "TensorArray u: Input value must have first dimension equal to the array size "
                  "(2 vs. 3)");
  Output over = TensorArrayUnstack(s, one.written, value, true, "u").data;
  EXPECT_CONTAINS(run(over, 0, {1, 2}), "Could not write to TensorArray index 0 because it has");
}

// After the first write every version of the array views one storage: a write copies
// one element (no O(n) copy), and, as TF's resource, two versions of one flow share it.
TEST(TensorArrayTest, WritesFillOneStorageInPlace) {
  Graph graph;
  Scope s(graph);
  TensorArrayState ta = {Empty(s), Const(s, Mask({0, 0, 0}))};
  TensorArrayState first =
      TensorArrayWrite(s, ta.data, ta.written, Index(s, 0),
                       Const(s, std::vector<double>{1, 2}, Shape{2}), false, "ta");
  TensorArrayState second =
      TensorArrayWrite(s, first.data, first.written, Index(s, 1),
                       Const(s, std::vector<double>{3, 4}, Shape{2}), false, "ta");
  TensorArrayState third =
      TensorArrayWrite(s, second.data, second.written, Index(s, 2),
                       Const(s, std::vector<double>{5, 6}, Shape{2}), false, "ta");
  Session session(graph, {.intra_op_threads = 1});
  std::vector<Tensor> got = session.Run({}, {first.data, third.data, third.written});
  EXPECT_EQ(Values(got[1]), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // The first version's data is the same storage (fetches of a shared buffer are copies,
  // taken after the run): its rows are the later writes' too.
  EXPECT_EQ(Values(got[0]), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // A second write of index 1 through the first version's flow: already written.
  Output again = TensorArrayWrite(s, first.data, first.written, Index(s, 1),
                                  Const(s, std::vector<double>{7, 8}, Shape{2}), false, "ta")
                     .data;
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        session.Run({}, {third.data, again});
                      },
                      ErrorCode::kInvalidArgument),
                  "Could not write to TensorArray index 1 because it has already been written to.");
  // A dynamic array grows into its storage's spare capacity, then into a new storage.
  TensorArrayState grow = {Empty(s), Const(s, Mask({}))};
  for (int i = 0; i < 5; ++i) {
    grow = TensorArrayWrite(s, grow.data, grow.written, Index(s, i),
                            Const(s, Tensor::Scalar<double>(i + 1)), true, "grow");
  }
  EXPECT_EQ(Values(session.Eval(TensorArrayStack(s, grow.data, grow.written, "grow"))),
            (std::vector<double>{1, 2, 3, 4, 5}));
}

// d/dvalue of a write is the written row of d data'; d/ddata every other row.
TEST(TensorArrayTest, WriteGradients) {
  GradientCheckFn fn = [](const Scope& s, const std::vector<Output>& x) {
    TensorArrayState ta =
        TensorArrayWrite(s, x[0], Const(s, Mask({1, 0, 1})), Index(s, 1), x[1], false, "ta");
    return Mul(s, ta.data, ta.data);
  };
  EXPECT_LT(MaxGradientError(fn, {RandomDoubles({3, 2}), RandomDoubles({2}, 2)}), kTolerance);
  // Growing, and from the empty placeholder (no gradient reaches it).
  GradientCheckFn grow = [](const Scope& s, const std::vector<Output>& x) {
    TensorArrayState ta =
        TensorArrayWrite(s, x[0], Const(s, Mask({1, 0})), Index(s, 3), x[1], true, "ta");
    return Mul(s, ta.data, ta.data);
  };
  EXPECT_LT(MaxGradientError(grow, {RandomDoubles({2, 2}), RandomDoubles({2}, 2)}), kTolerance);
  GradientCheckFn first = [](const Scope& s, const std::vector<Output>& x) {
    TensorArrayState ta =
        TensorArrayWrite(s, Empty(s), Const(s, Mask({0, 0})), Index(s, 0), x[0], false, "ta");
    return Mul(s, ta.data, ta.data);
  };
  EXPECT_LT(MaxGradientError(first, {RandomDoubles({2, 3})}), kTolerance);
}

TEST(TensorArrayTest, ReadStackAndUnstackGradients) {
  GradientCheckFn read = [](const Scope& s, const std::vector<Output>& x) {
    // Index 2 twice: the gradients add up.
    return TensorArrayRead(s, x[0], Const(s, Mask({1, 1, 1})),
                           Const(s, Tensor::FromVector<int64_t>({2, 0, 2})), "ta");
  };
  EXPECT_LT(MaxGradientError(read, {RandomDoubles({3, 2})}), kTolerance);
  GradientCheckFn stack = [](const Scope& s, const std::vector<Output>& x) {
    return Mul(s, TensorArrayStack(s, x[0], Const(s, Mask({1, 1})), "ta"), x[0]);
  };
  EXPECT_LT(MaxGradientError(stack, {RandomDoubles({2, 3})}), kTolerance);
  GradientCheckFn unstack = [](const Scope& s, const std::vector<Output>& x) {
    TensorArrayState ta = TensorArrayUnstack(s, Const(s, Mask({0, 0, 0, 0})), x[0], true, "ta");
    return Mul(s, ta.data, ta.data);  // grown to 4 rows: the gradient of the first 2
  };
  EXPECT_LT(MaxGradientError(unstack, {RandomDoubles({2, 3})}), kTolerance);
}

}  // namespace
}  // namespace loom
