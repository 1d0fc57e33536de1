#include "loom/ops/array.h"

#include <gtest/gtest.h>

#include <numeric>

#include "loom/autodiff/gradients.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// 0, 1, 2, ... as float64 (hand-checkable values).
Tensor Iota(const Shape& shape) {
  Tensor t(kFloat64, shape);
  auto v = t.flat<double>();
  std::iota(v.begin(), v.end(), 0.0);
  return t;
}

std::vector<double> Values(const Tensor& t) {
  auto v = t.flat<double>();
  return std::vector<double>(v.begin(), v.end());
}

Tensor Eval(Graph& graph, Output y, const FeedList& feeds = {}) {
  Session session(graph, {.intra_op_threads = 2});
  return session.Eval(y, feeds);
}

// Runs y's kernel directly on `inputs`, to see what it produced (e.g. a view).
std::vector<Tensor> RunKernel(Output y, std::vector<Tensor> inputs) {
  std::vector<Tensor> outputs(y.node->num_outputs());
  ThreadPool pool(1);
  ResourceMgr resources;
  KernelContext ctx(*y.node, std::span<Tensor>(inputs), outputs, pool, resources, 0);
  y.node->op_def().kernel(ctx);
  return outputs;
}

using Fn = GradientCheckFn;
constexpr double kTolerance = 1e-8;

// ---- Reshape, ExpandDims, Squeeze ------------------------------------------------------

TEST(ReshapeTest, InfersMinusOneAndIsAView) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {2, 6});
  auto y = Reshape(s, x, {-1, 3, 2});
  EXPECT_EQ(y.shape(), Shape({2, 3, 2}));
  Tensor value = Iota({2, 6});
  Tensor out = RunKernel(y, {value})[0];
  EXPECT_EQ(out.shape(), Shape({2, 3, 2}));
  EXPECT_TRUE(out.SharesBufferWith(value));
  EXPECT_EQ(Values(Eval(graph, y, {{x, value}})), Values(value));
}

TEST(ReshapeTest, PartialShapesAndErrorsNameNodeAndShapes) {
  Graph graph;
  Scope s(graph);
  auto images = Placeholder(s, kFloat32, {-1, 28, 28, 1});
  EXPECT_EQ(Reshape(s, images, {-1, 784}).shape(), Shape({-1, 784}));
  auto x = Placeholder(s, kFloat32, {32, 784});
  std::string message = ErrorOf(
      [&] {
        Reshape(s.WithOpName("r"), x, {-1, 100});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(message, "Reshape 'r': cannot reshape [32,784] (25088 elements) to [-1,100]");
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Reshape(s, x, {-1, -1});
                      },
                      ErrorCode::kInvalidArgument),
                  "only one dimension");
  // At run time the fed shape is checked the same way.
  auto y = Reshape(s.WithOpName("flat"), images, {-1, 700});
  message = ErrorOf(
      [&] {
        Eval(graph, y, {{images, Tensor::Zeros(kFloat32, {2, 28, 28, 1})}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(message, "'flat'");
  EXPECT_CONTAINS(message, "1568 elements");
}

// A target shape comes from a GraphDef attribute: its product is checked arithmetic (it
// used to overflow a signed multiply), a zero dim notwithstanding.
TEST(ReshapeTest, TargetShapeProductIsChecked) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {-1, 4});
  constexpr int64_t k2to62 = int64_t{1} << 62;
  for (const std::vector<int64_t>& target :
       {std::vector<int64_t>{k2to62, k2to62}, std::vector<int64_t>{k2to62, 4, 0},
        std::vector<int64_t>{-1, k2to62, k2to62}}) {
    EXPECT_CONTAINS(
        ErrorOf([&] { Reshape(s.WithOpName("big"), x, target); }, ErrorCode::kInvalidArgument),
        "has more elements than an int64 can count");
  }
  EXPECT_EQ(Reshape(s, x, std::vector<int64_t>{0, 5}).shape(), Shape({0, 5}));
}

TEST(ReshapeTest, DynamicShapeTensorAndStaticShapeValue) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {-1, 4});
  auto like = Placeholder(s, kFloat64, {-1, 2, 2});
  auto y = Reshape(s, x, ShapeOf(s, like));
  EXPECT_EQ(y.shape(), Shape({-1, 2, 2}));
  // Concat and Slice of shape vectors are seen through.
  auto tail = Slice(s, ShapeOf(s, like), {1}, {-1});
  auto target = Concat(s, {Const(s, Tensor::FromVector<int64_t>({-1})), tail}, 0);
  EXPECT_EQ(StaticShapeValue(target), Shape({-1, 2, 2}));
  auto z = Reshape(s, x, target);
  EXPECT_EQ(z.shape(), Shape({-1, 2, 2}));
  Session session(graph);
  auto out = session.Run({{x, Iota({3, 4})}, {like, Iota({3, 2, 2})}}, {y, z});
  EXPECT_EQ(out[0].shape(), Shape({3, 2, 2}));
  EXPECT_EQ(out[1].shape(), Shape({3, 2, 2}));
  EXPECT_EQ(Values(out[1]), Values(Iota({12})));
  // A fully static input resolves the single -1.
  auto w = Reshape(s, Const(s, Iota({3, 4})), Const(s, Tensor::FromVector<int32_t>({2, -1})));
  EXPECT_EQ(w.shape(), Shape({2, 6}));
}

TEST(ReshapeTest, ExpandDimsAndSqueeze) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {2, 1, 3, 1});
  EXPECT_EQ(Squeeze(s, x).shape(), Shape({2, 3}));
  EXPECT_EQ(Squeeze(s, x, {-1}).shape(), Shape({2, 1, 3}));
  EXPECT_EQ(ExpandDims(s, x, 0).shape(), Shape({1, 2, 1, 3, 1}));
  EXPECT_EQ(ExpandDims(s, x, -1).shape(), Shape({2, 1, 3, 1, 1}));
  EXPECT_CONTAINS(ErrorOf([&] { Squeeze(s, x, {0}); }, ErrorCode::kInvalidArgument),
                  "cannot squeeze dim 0 of [2,1,3,1]");
  EXPECT_CONTAINS(ErrorOf([&] { ExpandDims(s, x, 6); }, ErrorCode::kInvalidArgument),
                  "axis 6 is out of range");
  // Squeezing all size-1 dims of a partly unknown shape leaves the rank unknown.
  auto p = Placeholder(s, kFloat64, {-1, 1});
  EXPECT_FALSE(Squeeze(s, p).shape().rank_known());
  Tensor out = Eval(graph, Squeeze(s, p), {{p, Iota({1, 1})}});
  EXPECT_EQ(out.shape(), Shape({}));
}

TEST(ReshapeTest, Gradients) {
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Reshape(s, x[0], {3, -1});
                },
                {RandomDoubles({2, 6})}),
            kTolerance);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Reshape(s, x[0], ShapeOf(s, Const(s, Iota({4, 3}))));
                },
                {RandomDoubles({2, 6})}),
            kTolerance);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Squeeze(s, ExpandDims(s, x[0], 1), {1});
                },
                {RandomDoubles({3, 2})}),
            kTolerance);
}

TEST(ReshapeTest, GradientsWithUnknownDims) {
  Graph graph;
  Scope s(graph);
  auto one = Placeholder(s, kFloat64, {-1, 6});
  auto two = Placeholder(s, kFloat64, {-1, -1});
  auto d_one = Gradients(s, {Reshape(s, one, {-1, 3})}, {one})[0];
  auto d_two = Gradients(s, {Reshape(s, two, {-1})}, {two})[0];
  // One unknown dim: a static Reshape with -1, which does not keep x alive for backprop.
  EXPECT_EQ(d_one.node->op(), "Reshape");
  EXPECT_EQ(d_one.shape(), Shape({-1, 6}));
  EXPECT_EQ(d_two.node->op(), "ReshapeLike");
  Session session(graph);
  auto out = session.Run({{one, Iota({2, 6})}, {two, Iota({3, 2})}}, {d_one, d_two});
  EXPECT_EQ(out[0].shape(), Shape({2, 6}));
  EXPECT_EQ(out[1].shape(), Shape({3, 2}));
  EXPECT_EQ(Values(out[1]), std::vector<double>(6, 1.0));
}

// EnsureShape refines a static shape (what the Python Tensor.set_shape builds after a
// py_func) and checks the value's shape at run time.
TEST(EnsureShapeTest, RefinesStaticShapeAndChecksTheValue) {
  OpRegistry registry;
  RegisterArrayOps(registry);
  const OpDef& op = registry.Get("EnsureShape");
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, Shape::Unknown());
  Output y = s.WithOpName("ensure")
                 .AddNode(op, {x}, {{"shape", AttrValue(Shape{kUnknownDim, 3})}}, "EnsureShape")
                 ->output(0);
  EXPECT_EQ(y.shape(), Shape({kUnknownDim, 3}));
  Tensor value = Iota({2, 3});
  EXPECT_EQ(Values(Eval(graph, y, {{x, value}})), Values(value));
  std::string message = ErrorOf(
      [&] {
        Eval(graph, y, {{x, Iota({3, 2})}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(message, "'ensure'");
  EXPECT_CONTAINS(message, "[3,2] is not compatible with [?,3]");
  auto known = Placeholder(s, kFloat64, {2, 4});
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        s.AddNode(op, {known}, {{"shape", AttrValue(Shape{2, 3})}}, "EnsureShape");
                      },
                      ErrorCode::kInvalidArgument),
                  "[2,4] is not compatible with [2,3]");
  // The gradient passes through unchanged.
  auto v = Placeholder(s, kFloat64, {2, 3});
  Output e = s.AddNode(op, {v}, {{"shape", AttrValue(Shape{2, 3})}}, "EnsureShape")->output(0);
  Output g = Gradients(s, {Sum(s, Mul(s, e, e))}, {v})[0];
  EXPECT_EQ(Values(Eval(graph, g, {{v, value}})), (std::vector<double>{0, 2, 4, 6, 8, 10}));
}

// ---- Transpose --------------------------------------------------------------------------

// Reference transpose of a float64 tensor.
Tensor NaiveTranspose(const Tensor& x, const std::vector<int64_t>& perm) {
  const int r = x.rank();
  std::vector<int64_t> out_dims(r), in_strides(r, 1);
  for (int i = r - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * x.dim(i + 1);
  for (int i = 0; i < r; ++i) out_dims[i] = x.dim(perm[i]);
  Tensor y(kFloat64, Shape(out_dims));
  std::vector<int64_t> idx(r, 0);
  for (int64_t k = 0; k < y.NumElements(); ++k) {
    int64_t src = 0;
    for (int i = 0; i < r; ++i) src += idx[i] * in_strides[perm[i]];
    y.data<double>()[k] = x.data<double>()[src];
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return y;
}

TEST(TransposeTest, MatchesReferenceOnManyPermutations) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Case& c : std::vector<Case>{{{2, 3}, {1, 0}},
                                         {{70, 45}, {1, 0}},
                                         {{4, 33, 65}, {0, 2, 1}},
                                         {{3, 4, 5}, {2, 0, 1}},
                                         {{3, 4, 5}, {1, 0, 2}},
                                         {{2, 3, 4, 5}, {0, 2, 3, 1}},
                                         {{2, 1, 3}, {1, 2, 0}},
                                         {{5}, {0}}}) {
    Graph graph;
    Scope s(graph);
    Tensor x = Iota(c.shape);
    auto y = Transpose(s, Const(s, x), c.perm);
    Tensor expected = NaiveTranspose(x, c.perm);
    EXPECT_EQ(y.shape(), expected.shape());
    EXPECT_TRUE(Eval(graph, y).Equals(expected)) << c.shape << " perm " << c.perm.size();
  }
}

TEST(TransposeTest, StringsAndErrors) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<std::string>({"a", "b", "c", "d", "e", "f"}, {2, 3}));
  Tensor y = Eval(graph, Transpose(s, x, {1, 0}));
  EXPECT_EQ(y.flat<std::string>()[1], "d");
  EXPECT_EQ(y.flat<std::string>()[2], "b");
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Transpose(s, x, {0, 0});
                      },
                      ErrorCode::kInvalidArgument),
                  "is not a permutation");
  // Moving only size-1 dims is a view.
  auto p = Placeholder(s, kFloat64, {2, 1, 3});
  auto t = Transpose(s, p, {1, 0, 2});
  Tensor value = Iota({2, 1, 3});
  Tensor view = RunKernel(t, {value})[0];
  EXPECT_EQ(view.shape(), Shape({1, 2, 3}));
  EXPECT_TRUE(view.SharesBufferWith(value));
}

TEST(TransposeTest, Gradient) {
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Transpose(s, x[0], {2, 0, 1});
                },
                {RandomDoubles({2, 3, 4})}),
            kTolerance);
}

// ---- Concat / Split ---------------------------------------------------------------------

TEST(ConcatTest, ValuesShapesAndErrors) {
  Graph graph;
  Scope s(graph);
  auto a = Const(s, Iota({2, 2}));
  auto b = Const(s, Iota({2, 1}));
  auto c1 = Concat(s, {a, b}, 1);
  EXPECT_EQ(c1.shape(), Shape({2, 3}));
  EXPECT_EQ(Values(Eval(graph, c1)), (std::vector<double>{0, 1, 0, 2, 3, 1}));
  auto c0 = Concat(s, {a, Const(s, Iota({1, 2}))}, -2);
  EXPECT_EQ(Values(Eval(graph, c0)), (std::vector<double>{0, 1, 2, 3, 0, 1}));
  auto p = Placeholder(s, kFloat64, {-1, 2});
  EXPECT_EQ(Concat(s, {a, p}, 0).shape(), Shape({-1, 2}));
  std::string message = ErrorOf(
      [&] {
        Concat(s.WithOpName("cat"), {a, b}, 0);
      },
      ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(message, "Concat 'cat'");
  EXPECT_CONTAINS(message, "[2,1]");
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Concat(s, {a, Const(s, Tensor::Scalar<int32_t>(1))}, 0);
                      },
                      ErrorCode::kInvalidArgument),
                  "same dtype");
}

TEST(ConcatTest, Gradient) {
  EXPECT_LT(
      MaxGradientError(
          [](const Scope& s, const std::vector<Output>& x) {
            return Concat(s, {x[0], x[1], x[2]}, 1);
          },
          {RandomDoubles({2, 1, 3}), RandomDoubles({2, 2, 3}, 2), RandomDoubles({2, 3, 3}, 3)}),
      kTolerance);
}

TEST(SplitTest, ValuesViewsAndGradient) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {4, 3});
  auto rows = Split(s, x, 2, 0);
  auto cols = Split(s, x, 3, 1);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(cols[0].shape(), Shape({4, 1}));
  Tensor value = Iota({4, 3});
  auto out = RunKernel(rows[0], {value});
  EXPECT_TRUE(out[1].SharesBufferWith(value));  // split along dim 0 is zero-copy
  EXPECT_EQ(Values(out[1]), (std::vector<double>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(Values(Eval(graph, cols[2], {{x, value}})), (std::vector<double>{2, 5, 8, 11}));
  EXPECT_CONTAINS(ErrorOf([&] { Split(s, x, 3, 0); }, ErrorCode::kInvalidArgument),
                  "into 3 equal parts");
  // Unused parts get zero gradients.
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  auto parts = Split(s, x[0], 3, -1);
                  return AddN(s, {parts[0], parts[2]});
                },
                {RandomDoubles({2, 6})}),
            kTolerance);
}

// ---- Slice / StridedSlice ---------------------------------------------------------------

TEST(SliceTest, ValuesAndGradient) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Iota({3, 4}));
  auto y = Slice(s, x, {1, 1}, {2, -1});
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_EQ(Values(Eval(graph, y)), (std::vector<double>{5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(Values(Eval(graph, Slice(s, x, {2, 0}, {1, 4}))), (std::vector<double>{8, 9, 10, 11}));
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Slice(s, x, {2, 0}, {2, 4});
                      },
                      ErrorCode::kInvalidArgument),
                  "out of bounds");
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Slice(s, x[0], {0, 1, 1}, {2, 2, -1});
                },
                {RandomDoubles({3, 4, 3})}),
            kTolerance);
}

struct StridedCase {
  std::vector<int64_t> begin, end, strides;
  StridedSliceMasks masks;
  Shape expected_shape;
  std::vector<double> expected;
};

TEST(StridedSliceTest, PythonSlicingSemantics) {
  // x = arange(12).reshape(3, 4)
  std::vector<StridedCase> cases = {
      // x[1:3, ::2]
      {{1, 0}, {3, 0}, {1, 2}, {.end_mask = 2}, {2, 2}, {4, 6, 8, 10}},
      // x[::-1, -1]  (shrink dim 1)
      {{0, -1},
       {0, 0},
       {-1, 1},
       {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 2},
       {3},
       {11, 7, 3}},
      // x[..., 0]
      {{0, 0}, {0, 1}, {1, 1}, {.shrink_axis_mask = 2, .ellipsis_mask = 1}, {3}, {0, 4, 8}},
      // x[:, None, 1:100]  (new axis, end clamped)
      {{0, 0, 1},
       {0, 0, 100},
       {1, 1, 1},
       {.begin_mask = 1, .end_mask = 1, .new_axis_mask = 2},
       {3, 1, 3},
       {1, 2, 3, 5, 6, 7, 9, 10, 11}},
      // x[2:0:-1, 3:0:-2]
      {{2, 3}, {0, 0}, {-1, -2}, {}, {2, 2}, {11, 9, 7, 5}},
      // x[1]  (only the first dim specified)
      {{1}, {2}, {1}, {.shrink_axis_mask = 1}, {4}, {4, 5, 6, 7}},
      // x[5:7]  (empty)
      {{5}, {7}, {1}, {}, {0, 4}, {}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const StridedCase& c = cases[i];
    Graph graph;
    Scope s(graph);
    auto y = StridedSlice(s, Const(s, Iota({3, 4})), c.begin, c.end, c.strides, c.masks);
    EXPECT_EQ(y.shape(), c.expected_shape) << "case " << i;
    Tensor out = Eval(graph, y);
    EXPECT_EQ(out.shape(), c.expected_shape) << "case " << i;
    EXPECT_EQ(Values(out), c.expected) << "case " << i;
  }
}

TEST(StridedSliceTest, UnknownDimsAndErrors) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {-1, 4});
  auto last = StridedSlice(s, x, {0, -1}, {0, 0}, {1, 1},
                           {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 2});
  EXPECT_EQ(last.shape(), Shape({-1}));
  EXPECT_EQ(Values(Eval(graph, last, {{x, Iota({2, 4})}})), (std::vector<double>{3, 7}));
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        StridedSlice(s, x, {0, 4}, {0, 0}, {1, 1}, {.shrink_axis_mask = 2});
                      },
                      ErrorCode::kInvalidArgument),
                  "index 4 is out of range for dim 1 of size 4");
  EXPECT_CONTAINS(ErrorOf([&] { StridedSlice(s, x, {0}, {1}, {0}); }, ErrorCode::kInvalidArgument),
                  "non-zero");
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        StridedSlice(s, x, {0, 0, 0}, {1, 1, 1}, {1, 1, 1});
                      },
                      ErrorCode::kInvalidArgument),
                  "too long");
}

TEST(StridedSliceTest, Gradients) {
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return StridedSlice(s, x[0], {2, 3}, {0, 0}, {-1, -2});
                },
                {RandomDoubles({3, 4})}),
            kTolerance);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return StridedSlice(
                      s, x[0], {0, 1, 0}, {0, 0, 1}, {1, 1, 1},
                      {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 4, .new_axis_mask = 2});
                },
                {RandomDoubles({3, 2})}),
            kTolerance);
}

// ---- Gather -----------------------------------------------------------------------------

TEST(GatherTest, ValuesOnBothAxesAndIndexShapes) {
  Graph graph;
  Scope s(graph);
  auto params = Const(s, Iota({4, 3}));
  auto rows = Gather(s, params, Const(s, Tensor::FromVector<int32_t>({3, 0, 3})));
  EXPECT_EQ(rows.shape(), Shape({3, 3}));
  EXPECT_EQ(Values(Eval(graph, rows)), (std::vector<double>{9, 10, 11, 0, 1, 2, 9, 10, 11}));
  auto cols = Gather(s, params, Const(s, Tensor::FromVector<int64_t>({2, 0, 1, 1}, {2, 2})), 1);
  EXPECT_EQ(cols.shape(), Shape({4, 2, 2}));
  Tensor c = Eval(graph, cols);
  EXPECT_EQ(Values(c.Slice(1, 2)), (std::vector<double>{5, 3, 4, 4}));
  auto scalar = Gather(s, params, 2);  // a literal index is an int32 scalar
  EXPECT_EQ(Values(Eval(graph, scalar)), (std::vector<double>{6, 7, 8}));
}

TEST(GatherTest, OutOfRangeIndexNamesIndexAndRange) {
  Graph graph;
  Scope s(graph);
  auto params = Placeholder(s, kFloat32, {-1, 2});
  auto ids = Placeholder(s, kInt64, {-1});
  auto y = Gather(s.WithOpName("lookup"), params, ids);
  std::string message = ErrorOf(
      [&] {
        Eval(graph, y,
             {{params, Tensor::Zeros(kFloat32, {5, 2})},
              {ids, Tensor::FromVector<int64_t>({1, 7})}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(message, "'lookup'");
  EXPECT_CONTAINS(message, "indices[1] = 7 is out of range [0, 5)");
  EXPECT_CONTAINS(
      ErrorOf([&] { Gather(s, params, Const(s, Iota({2}))); }, ErrorCode::kInvalidArgument),
      "int32 or int64");
}

TEST(GatherTest, DenseGradientsOnBothAxes) {
  Fn axis0 = [](const Scope& s, const std::vector<Output>& x) {
    return Gather(s, x[0], Const(s, Tensor::FromVector<int32_t>({2, 0, 2, 1}, {2, 2})));
  };
  EXPECT_LT(MaxGradientError(axis0, {RandomDoubles({3, 2, 2})}), kTolerance);
  Fn axis1 = [](const Scope& s, const std::vector<Output>& x) {
    return Gather(s, x[0], Const(s, Tensor::FromVector<int64_t>({1, 1, 0})), -2);
  };
  EXPECT_LT(MaxGradientError(axis1, {RandomDoubles({2, 3, 2})}), kTolerance);
}

TEST(GatherTest, SparseGradientEqualsDenseReference) {
  Graph graph;
  Scope s(graph);
  Variable table(s.WithOpName("table"), Iota({5, 3}));
  auto ids = Const(s, Tensor::FromVector<int32_t>({4, 1, 4}, {3, 1}));
  auto rows = Gather(s, table, ids);  // [3, 1, 3]
  Tensor weights = RandomDoubles({3, 1, 3}, 5);
  auto grad_y = Const(s, weights);
  auto sparse = GradientsWithSparse(s, {rows}, {table}, {grad_y})[0];
  ASSERT_TRUE(sparse.is_sparse());
  auto dense = Gradients(s, {rows}, {table}, {grad_y})[0];
  EXPECT_EQ(dense.shape(), Shape({5, 3}));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  auto out = session.Run({}, {sparse.indices, sparse.values, sparse.dense_shape, dense});
  EXPECT_EQ(out[0].shape(), Shape({3}));
  EXPECT_EQ(out[1].shape(), Shape({3, 3}));
  EXPECT_EQ(out[2].flat<int64_t>()[0], 5);
  EXPECT_EQ(out[2].flat<int64_t>()[1], 3);
  // Reference: rows 1 and 4 get their weights; row 4 twice (summed).
  std::vector<double> expected(15, 0.0);
  const auto w = weights.flat<double>();
  for (int j = 0; j < 3; ++j) {
    expected[4 * 3 + j] = w[0 * 3 + j] + w[2 * 3 + j];
    expected[1 * 3 + j] = w[1 * 3 + j];
  }
  std::vector<double> got = Values(out[3]);
  for (int k = 0; k < 15; ++k) EXPECT_NEAR(got[k], expected[k], 1e-12) << k;
}

TEST(GatherTest, SparseGradientWithUnknownRowShape) {
  Graph graph;
  Scope s(graph);
  auto params = Placeholder(s, kFloat64, {-1, -1});
  auto y = Gather(s, params, Const(s, Tensor::FromVector<int32_t>({0, 0})));
  auto dense = Gradients(s, {y}, {params})[0];
  Tensor out = Eval(graph, dense, {{params, Iota({2, 3})}});
  EXPECT_EQ(Values(out), (std::vector<double>{2, 2, 2, 0, 0, 0}));
}

TEST(GatherTest, BatchOfRowsIsCorrect) {
  // The input pipeline's shape: 256 rows of 784 floats out of a large table.
  Graph graph;
  Scope s(graph);
  const int64_t table_rows = 8192, width = 784, batch = 256;
  Tensor table(kFloat32, {table_rows, width});
  for (int64_t k = 0; k < table.NumElements(); ++k)
    table.data<float>()[k] = static_cast<float>(k % 1000);
  std::vector<int64_t> ids(batch);
  for (int64_t i = 0; i < batch; ++i) ids[i] = (i * 7919) % table_rows;
  auto p = Placeholder(s, kFloat32, {table_rows, width});
  auto y = Gather(s, p, Const(s, Tensor::FromVector(ids)));
  Session session(graph, {.intra_op_threads = 2});
  FeedList feeds = {{p, table}};
  Tensor out = session.Eval(y, feeds);
  for (int64_t i = 0; i < batch; i += 37) {
    EXPECT_EQ(std::memcmp(out.data<float>() + i * width, table.data<float>() + ids[i] * width,
                          width * sizeof(float)),
              0);
  }
}

// ---- OneHot, Tile, Pad ------------------------------------------------------------------

TEST(OneHotTest, AxesAndOutOfRange) {
  Graph graph;
  Scope s(graph);
  auto ids = Const(s, Tensor::FromVector<int32_t>({2, -1, 0}));
  auto last = OneHot(s, ids, 3);
  EXPECT_EQ(last.shape(), Shape({3, 3}));
  EXPECT_EQ(Eval(graph, last).flat<float>()[2], 1.0f);
  Tensor l = Eval(graph, last);
  EXPECT_EQ(std::vector<float>(l.flat<float>().begin(), l.flat<float>().end()),
            (std::vector<float>{0, 0, 1, 0, 0, 0, 1, 0, 0}));
  auto first = OneHot(s, ids, 3, 5.0, -1.0, 0, kFloat64);
  EXPECT_EQ(first.shape(), Shape({3, 3}));
  EXPECT_EQ(Values(Eval(graph, first)), (std::vector<double>{-1, -1, 5, -1, -1, -1, 5, -1, -1}));
  EXPECT_CONTAINS(ErrorOf([&] { OneHot(s, Const(s, Iota({2})), 3); }, ErrorCode::kInvalidArgument),
                  "int32 or int64");
}

TEST(TileTest, ValuesAndGradient) {
  Graph graph;
  Scope s(graph);
  auto y = Tile(s, Const(s, Iota({2, 2})), {2, 3});
  EXPECT_EQ(y.shape(), Shape({4, 6}));
  EXPECT_EQ(Values(Eval(graph, y)), (std::vector<double>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3,
                                                         0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Tile(s, Const(s, Iota({2, 2})), {2});
                      },
                      ErrorCode::kInvalidArgument),
                  "one entry per dim");
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Tile(s, x[0], {2, 1, 3});
                },
                {RandomDoubles({2, 3, 2})}),
            kTolerance);
}

TEST(PadTest, ValuesAndGradient) {
  Graph graph;
  Scope s(graph);
  auto y = Pad(s, Const(s, Iota({2, 2})), {{1, 0}, {0, 2}}, 9.0);
  EXPECT_EQ(y.shape(), Shape({3, 4}));
  EXPECT_EQ(Values(Eval(graph, y)), (std::vector<double>{9, 9, 9, 9, 0, 1, 9, 9, 2, 3, 9, 9}));
  auto ints = Pad(s, Const(s, Tensor::FromVector<int32_t>({7})), {{2, 1}});
  Tensor i = Eval(graph, ints);
  EXPECT_EQ(std::vector<int32_t>(i.flat<int32_t>().begin(), i.flat<int32_t>().end()),
            (std::vector<int32_t>{0, 0, 7, 0}));
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Pad(s, Const(s, Iota({2, 2})), {{1, 1}});
                      },
                      ErrorCode::kInvalidArgument),
                  "padding pair");
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& x) {
                  return Pad(s, x[0], {{1, 2}, {0, 0}, {2, 1}});
                },
                {RandomDoubles({2, 3, 2})}),
            kTolerance);
}

// ---- Fill and shape descriptions -------------------------------------------------------

TEST(FillTest, FillZerosOnesAndShapeOps) {
  Graph graph;
  Scope s(graph);
  Tensor f = Eval(graph, Fill(s, {2, 2}, 1.5));
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.flat<float>()[3], 1.5f);
  Tensor z = Eval(graph, Zeros(s, {3}, kInt64));
  EXPECT_EQ(z.flat<int64_t>()[2], 0);
  Tensor o = Eval(graph, Ones(s, {2, 1}, kFloat64));
  EXPECT_EQ(Values(o), (std::vector<double>{1, 1}));
  auto x = Placeholder(s, kFloat64, {-1, 3});
  auto shape = ShapeOf(s, x);
  EXPECT_EQ(shape.shape(), Shape({2}));
  EXPECT_EQ(shape.dtype(), kInt64);
  Session session(graph);
  auto out = session.Run({{x, Iota({4, 3})}}, {shape, Size(s, x), Rank(s, x), Fill(s, shape, 2.0)});
  EXPECT_EQ(out[0].flat<int64_t>()[0], 4);
  EXPECT_EQ(out[0].flat<int64_t>()[1], 3);
  EXPECT_EQ(out[1].scalar<int64_t>(), 12);
  EXPECT_EQ(out[2].scalar<int64_t>(), 2);
  EXPECT_EQ(out[3].shape(), Shape({4, 3}));
  EXPECT_EQ(Fill(s, shape, 2.0).shape(), Shape({-1, 3}));
  EXPECT_CONTAINS(ErrorOf(
                      [&] {
                        Zeros(s, {-1, 2});
                      },
                      ErrorCode::kInvalidArgument),
                  "fully defined");
}

TEST(FillTest, NonDifferentiableOpsSayWhy) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {});
  auto y = Fill(s.WithOpName("filled"), {2}, x);
  std::string message = ErrorOf([&] { Gradients(s, {y}, {x}); }, ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(message, "Fill 'filled'");
  EXPECT_CONTAINS(message, "reduction");
}

TEST(ArrayRegistryTest, RegistersEveryOp) {
  OpRegistry registry;
  RegisterArrayOps(registry);
  for (const char* name : {"Reshape",
                           "ReshapeDynamic",
                           "ReshapeLike",
                           "Transpose",
                           "ExpandDims",
                           "Squeeze",
                           "Concat",
                           "ConcatGrad",
                           "Split",
                           "Slice",
                           "SliceGrad",
                           "StridedSlice",
                           "StridedSliceGrad",
                           "Gather",
                           "GatherGrad",
                           "OneHot",
                           "Tile",
                           "TileGrad",
                           "Pad",
                           "Fill",
                           "FillDynamic",
                           "Shape",
                           "Size",
                           "Rank"}) {
    EXPECT_NE(registry.Find(name), nullptr) << name;
  }
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

TEST(RangeTest, LengthsSignsAndDtypesAsTf) {
  Graph graph;
  Scope s(graph);
  auto ints = [&](int64_t a, int64_t b, int64_t d) {
    Output r = Range(s, Const(s, Tensor::Scalar<int64_t>(a)), b, d);
    Tensor t = Eval(graph, r);
    EXPECT_EQ(r.shape(), t.shape()) << "constant inputs give the static length";
    auto v = t.flat<int64_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  };
  EXPECT_EQ(ints(0, 5, 1), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ints(1, 8, 3), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(ints(5, 0, -2), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(ints(3, 3, 1), (std::vector<int64_t>{}));
  // Floats: ceil(|limit - start| / delta) elements, accumulated (val += delta) as TF does.
  Output f = Range(s, Const(s, Tensor::Scalar<float>(0.f)), 1.f, 0.3f);
  Tensor ft = Eval(graph, f);
  ASSERT_EQ(ft.NumElements(), 4);
  float want = 0.f;
  for (int i = 0; i < 4; ++i, want += 0.3f) EXPECT_EQ(ft.flat<float>()[i], want);
  // A computed limit: the length is unknown until the run.
  Output limit = Placeholder(s, kInt32, Shape({}));
  Output dyn = Range(s, Const(s, Tensor::Scalar<int32_t>(2)), limit, 2);
  EXPECT_EQ(dyn.shape(), Shape({kUnknownDim}));
  Tensor dt = Eval(graph, dyn, {{limit, Tensor::Scalar<int32_t>(7)}});
  EXPECT_EQ(dt.dtype(), kInt32);
  EXPECT_EQ(std::vector<int32_t>(dt.flat<int32_t>().begin(), dt.flat<int32_t>().end()),
            (std::vector<int32_t>{2, 4, 6}));
  // Bad ranges fail at construction when constant, at run time when computed.
  EXPECT_CONTAINS(
      ErrorOf([&] { Range(s.WithOpName("zero"), Const(s, Tensor::Scalar<int64_t>(0)), 4, 0); }),
      "delta must not be 0");
  EXPECT_CONTAINS(
      ErrorOf([&] { Range(s.WithOpName("back"), Const(s, Tensor::Scalar<int64_t>(5)), 1, 1); }),
      "back");
  Output bad = Range(s.WithOpName("late"), Const(s, Tensor::Scalar<int32_t>(9)), limit, 1);
  std::string message = ErrorOf([&] { Eval(graph, bad, {{limit, Tensor::Scalar<int32_t>(1)}}); });
  EXPECT_CONTAINS(message, "late");
  EXPECT_CONTAINS(message, "is past limit 1");
  Output fs = Placeholder(s, kFloat32, Shape({}));
  EXPECT_CONTAINS(ErrorOf([&] { Gradients(s, {Sum(s, Range(s, fs, 1.f, 0.3f))}, {fs}); }), "Range");
}

TEST(CumsumTest, ExclusiveReverseAxesAndGradient) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Iota({2, 3}));  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_EQ(Values(Eval(graph, Cumsum(s, x, 1))), (std::vector<double>{0, 1, 3, 3, 7, 12}));
  EXPECT_EQ(Values(Eval(graph, Cumsum(s, x, 0))), (std::vector<double>{0, 1, 2, 3, 5, 7}));
  EXPECT_EQ(Values(Eval(graph, Cumsum(s, x, -1, {.exclusive = true}))),
            (std::vector<double>{0, 0, 1, 0, 3, 7}));
  EXPECT_EQ(Values(Eval(graph, Cumsum(s, x, 1, {.reverse = true}))),
            (std::vector<double>{3, 3, 2, 12, 9, 5}));
  EXPECT_EQ(Values(Eval(graph, Cumsum(s, x, 1, {.exclusive = true, .reverse = true}))),
            (std::vector<double>{3, 2, 0, 9, 5, 0}));
  auto i = Const(s, Tensor::FromVector<int32_t>({1, 2, 3}));
  Tensor it = Eval(graph, Cumsum(s, i));
  EXPECT_EQ(std::vector<int32_t>(it.flat<int32_t>().begin(), it.flat<int32_t>().end()),
            (std::vector<int32_t>{1, 3, 6}));
  EXPECT_CONTAINS(ErrorOf([&] { Cumsum(s.WithOpName("axis"), x, 2); }), "axis 2 is out of range");
  for (CumsumOptions o : {CumsumOptions{}, CumsumOptions{.exclusive = true},
                          CumsumOptions{.reverse = true}, CumsumOptions{true, true}}) {
    for (int64_t axis : {0, 1}) {
      EXPECT_LT(MaxGradientError(
                    [axis, o](const Scope& sc, const std::vector<Output>& v) {
                      return Cumsum(sc, v[0], axis, o);
                    },
                    {RandomDoubles({2, 3}, 5)}),
                1e-6)
          << axis << " " << o.exclusive << o.reverse;
    }
  }
}

}  // namespace
}  // namespace loom
