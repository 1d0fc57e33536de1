#include "loom/ops/sparse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loom/autodiff/gradients.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"
#include "loom/testing/values.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using testing::ErrorOf;
using ::testing::HasSubstr;
using testing::Values;

Tensor Int64s(std::vector<int64_t> v, Shape shape) { return Tensor::FromVector(v, shape); }
Tensor Int64s(std::vector<int64_t> v) { return Tensor::FromVector(v); }

SparseTensor ConstSparse(const Scope& s, Tensor indices, Tensor values, Tensor dense_shape) {
  return {Const(s, indices), Const(s, values), Const(s, dense_shape)};
}

// The VarLenFeature layout of rows {7, 8}, {}, {9}: [batch, position], row-major.
SparseTensor Rows(const Scope& s) {
  return ConstSparse(s, Int64s({0, 0, 0, 1, 2, 0}, {3, 2}), Int64s({7, 8, 9}), Int64s({3, 2}));
}

TEST(SparseToDenseTest, FillsTheDefaultAroundTheValues) {
  Graph graph;
  Scope s(graph);
  Output dense = SparseToDense(s, Rows(s), int64_t{-1});
  EXPECT_EQ(dense.shape(), Shape({3, 2}));  // dense_shape is a constant here
  Session session(graph);
  Tensor y = session.Eval(dense);
  EXPECT_EQ(y.shape(), Shape({3, 2}));
  EXPECT_THAT(Values<int64_t>(y), ElementsAre(7, 8, -1, -1, 9, -1));
}

TEST(SparseToDenseTest, StringsAndAnyIndexOrder) {
  Graph graph;
  Scope s(graph);
  SparseTensor sp = ConstSparse(s, Int64s({1, 1, 0, 0}, {2, 2}),
                                Tensor::FromVector<std::string>({"b", "a"}), Int64s({2, 2}));
  Session session(graph);
  Tensor y = session.Eval(SparseToDense(s, sp, Tensor::ScalarString("")));
  EXPECT_THAT(Values<std::string>(y), ElementsAre("a", "", "", "b"));
}

TEST(SparseToDenseTest, RejectsIndicesOutsideTheShapeAndRepeats) {
  Graph graph;
  Scope s(graph);
  Output outside = SparseToDense(
      s, ConstSparse(s, Int64s({0, 0, 1, 3}, {2, 2}), Int64s({1, 2}), Int64s({2, 3})), int64_t{0});
  Output repeated = SparseToDense(
      s, ConstSparse(s, Int64s({1, 2, 1, 2}, {2, 2}), Int64s({1, 2}), Int64s({2, 3})), int64_t{0});
  Session session(graph);
  std::string message = ErrorOf([&] { session.Eval(outside); });
  EXPECT_THAT(message, HasSubstr("indices[1] = [1,3] is outside dense_shape [2,3]"));
  EXPECT_THAT(message, HasSubstr("SparseToDense"));
  EXPECT_THAT(ErrorOf([&] { session.Eval(repeated); }),
              HasSubstr("indices[1] = [1,2] repeats an earlier index"));
}

TEST(SparseToDenseTest, GradientReachesValuesAndDefault) {
  // y = SparseToDense(indices, values, [2, 3], default) * r; numeric vs symbolic.
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  SparseTensor sp{Const(s, Int64s({0, 1, 1, 0, 1, 2}, {3, 2})), x[0],
                                  Const(s, Int64s({2, 3}))};
                  Output dense = SparseToDense(s, sp, Reshape(s, x[1], std::vector<int64_t>{}));
                  return Mul(s, dense, dense);  // nonlinear, so the values matter
                },
                {RandomDoubles({3}), RandomDoubles({1}, 2)}),
            1e-7);
}

TEST(SparseToDenseTest, GradientOfTheGradient) {
  // g = d/dvalues sum(SparseToDense(values) * w) = w at the indices (SparseToDenseGrad);
  // its own gradient w.r.t. w scatters back (second order through the gradient op).
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  SparseTensor sp{Const(s, Int64s({0, 1, 1, 0, 1, 2}, {3, 2})), x[0],
                                  Const(s, Int64s({2, 3}))};
                  Output loss = Sum(s, Mul(s, SparseToDense(s, sp, 0.0), x[1]));
                  Output g = Gradients(s, {loss}, {x[0]})[0];
                  return Mul(s, g, g);
                },
                {RandomDoubles({3}), RandomDoubles({2, 3}, 2)}),
            1e-7);
}

TEST(SparseReorderTest, SortsRowMajor) {
  Graph graph;
  Scope s(graph);
  SparseTensor sp = ConstSparse(s, Int64s({1, 0, 0, 1, 0, 0}, {3, 2}),
                                Tensor::FromVector<float>({1, 2, 3}), Int64s({2, 2}));
  SparseTensor sorted = SparseReorder(s, sp);
  Session session(graph);
  auto out = session.Run({}, {sorted.indices, sorted.values});
  EXPECT_THAT(Values<int64_t>(out[0]), ElementsAre(0, 0, 0, 1, 1, 0));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(3, 2, 1));
}

TEST(SparseReduceSumTest, SumsRowsAndAll) {
  Graph graph;
  Scope s(graph);
  SparseTensor sp = ConstSparse(s, Int64s({0, 0, 0, 1, 2, 0}, {3, 2}),
                                Tensor::FromVector<float>({1, 2, 4}), Int64s({3, 2}));
  Session session(graph);
  EXPECT_THAT(Values<float>(session.Eval(SparseReduceSum(s, sp, {1}))), ElementsAre(3, 0, 4));
  EXPECT_THAT(Values<float>(session.Eval(SparseReduceSum(s, sp))), ElementsAre(7));
}

// params rows are 10^r, so a combination is readable digit by digit.
Tensor Table() { return Tensor::FromVector<double>({1, 2, 10, 20, 100, 200, 1000, 2000}, {4, 2}); }

TEST(EmbeddingLookupSparseTest, CombinersGolden) {
  Graph graph;
  Scope s(graph);
  // Rows: {1, 3}, {}, {2, 2} with weights {1, 2}, -, {3, 1}.
  SparseTensor ids = ConstSparse(s, Int64s({0, 0, 0, 1, 2, 0, 2, 1}, {4, 2}), Int64s({1, 3, 2, 2}),
                                 Int64s({3, 2}));
  SparseTensor weights = ids;
  weights.values = Const(s, Tensor::FromVector<double>({1, 2, 3, 1}));
  Output table = Const(s, Table());
  Session session(graph);
  auto eval = [&](std::optional<SparseTensor> w, SparseCombiner combiner) {
    return Values<double>(
        session.Eval(EmbeddingLookupSparse(s, table, ids, w, {.combiner = combiner})));
  };
  EXPECT_THAT(eval(std::nullopt, SparseCombiner::kSum), ElementsAre(1010, 2020, 0, 0, 200, 400));
  EXPECT_THAT(eval(std::nullopt, SparseCombiner::kMean), ElementsAre(505, 1010, 0, 0, 100, 200));
  // Weighted: row 0 = 1*10 + 2*1000 = 2010, row 2 = 3*100 + 1*100 = 400.
  EXPECT_THAT(eval(weights, SparseCombiner::kSum), ElementsAre(2010, 4020, 0, 0, 400, 800));
  EXPECT_THAT(eval(weights, SparseCombiner::kMean), ElementsAre(670, 1340, 0, 0, 100, 200));
  const double n0 = std::sqrt(5.0), n2 = std::sqrt(10.0);
  std::vector<double> sqrtn = eval(weights, SparseCombiner::kSqrtN);
  ASSERT_EQ(sqrtn.size(), 6u);
  EXPECT_DOUBLE_EQ(sqrtn[0], 2010 / n0);
  EXPECT_DOUBLE_EQ(sqrtn[3], 0.0);
  EXPECT_DOUBLE_EQ(sqrtn[5], 800 / n2);
}

TEST(EmbeddingLookupSparseTest, GradientsNumericAndSparse) {
  for (SparseCombiner combiner :
       {SparseCombiner::kSum, SparseCombiner::kMean, SparseCombiner::kSqrtN}) {
    // Gradient w.r.t. the table and the weights.
    EXPECT_LT(MaxGradientError(
                  [combiner](const Scope& s, const std::vector<Output>& x) {
                    Tensor indices = Int64s({0, 0, 0, 1, 2, 0, 2, 1}, {4, 2});
                    SparseTensor ids{Const(s, indices), Const(s, Int64s({1, 3, 2, 0})),
                                     Const(s, Int64s({3, 2}))};
                    SparseTensor w{Const(s, indices), x[1], Const(s, Int64s({3, 2}))};
                    return EmbeddingLookupSparse(s, x[0], ids, w, {.combiner = combiner});
                  },
                  {RandomDoubles({4, 2}), RandomDoubles({4}, 3, 0.5, 1.5)}),
              1e-7)
        << static_cast<int>(combiner);
  }
  // Into a variable, the table's gradient is IndexedSlices: one row per id looked up.
  Graph graph;
  Scope s(graph);
  Output table = Variable(s.WithOpName("table"), Table());
  SparseTensor ids = ConstSparse(s, Int64s({0, 0, 1, 0}, {2, 2}), Int64s({3, 1}), Int64s({2, 1}));
  Output loss = Sum(s, EmbeddingLookupSparse(s, table, ids));
  std::vector<GradOutput> grads = GradientsWithSparse(s, {loss}, {table});
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_FALSE(grads[0].dense.node) << "expected an IndexedSlices gradient";
  ASSERT_TRUE(grads[0].indices.node);
}

TEST(SparseBatchPaddedTest, PrependsTheBatchPosition) {
  Graph graph;
  Scope s(graph);
  // Element 0: [7, 8] of dense shape [2]; element 1: [9] at position 2 of [3]; padded to 2.
  SparseTensor batch =
      SparseBatchPadded(s, Const(s, Int64s({0, 1, 2, -1}, {2, 2, 1})),
                        Const(s, Int64s({7, 8, 9, 0}, {2, 2})), Const(s, Int64s({2, 3}, {2, 1})));
  Session session(graph);
  auto out = session.Run({}, {batch.indices, batch.values, batch.dense_shape});
  EXPECT_EQ(out[0].shape(), Shape({3, 2}));
  EXPECT_THAT(Values<int64_t>(out[0]), ElementsAre(0, 0, 0, 1, 1, 2));
  EXPECT_THAT(Values<int64_t>(out[1]), ElementsAre(7, 8, 9));
  EXPECT_THAT(Values<int64_t>(out[2]), ElementsAre(2, 3));
}

}  // namespace
}  // namespace loom
