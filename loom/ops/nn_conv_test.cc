// Conv2D and pooling: forward values against straightforward float64 loops (TF's SAME
// arithmetic written out independently), gradients through the numeric checker, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "loom/autodiff/gradients.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/nn_test_util.h"

namespace loom {
namespace {

using nn_test::EvalWith;
using nn_test::ExpectNear;
using nn_test::InvalidArgumentMessage;
using nn_test::ToFloat;
using nn_test::Values;

struct Window {
  int64_t out, pad;
};

Window Along(int64_t in, int64_t k, int64_t stride, bool same) {
  if (same) {
    int64_t out = (in + stride - 1) / stride;
    return {out, std::max<int64_t>((out - 1) * stride + k - in, 0) / 2};
  }
  return {(in - k + stride) / stride, 0};
}

struct ConvCase {
  int64_t n, h, w, c, kh, kw, o, sh, sw;
  const char* padding;
};

std::string Describe(const ConvCase& c) {
  return StrCat("in [", c.n, ",", c.h, ",", c.w, ",", c.c, "] filter [", c.kh, ",", c.kw, ",", c.c,
                ",", c.o, "] strides ", c.sh, "x", c.sw, " ", c.padding);
}

std::vector<double> ConvReference(const ConvCase& c, const Tensor& x, const Tensor& f) {
  const bool same = std::string(c.padding) == "SAME";
  Window wh = Along(c.h, c.kh, c.sh, same), ww = Along(c.w, c.kw, c.sw, same);
  std::vector<double> out;
  auto xv = x.flat<double>();
  auto fv = f.flat<double>();
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oh = 0; oh < wh.out; ++oh)
      for (int64_t ow = 0; ow < ww.out; ++ow)
        for (int64_t o = 0; o < c.o; ++o) {
          double acc = 0;
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              int64_t ih = oh * c.sh - wh.pad + i, iw = ow * c.sw - ww.pad + j;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              for (int64_t ch = 0; ch < c.c; ++ch) {
                acc += xv[((n * c.h + ih) * c.w + iw) * c.c + ch] *
                       fv[((i * c.kw + j) * c.c + ch) * c.o + o];
              }
            }
          out.push_back(acc);
        }
  return out;
}

std::vector<ConvCase> ForwardCases() {
  return {
      {2, 5, 7, 3, 3, 3, 4, 1, 1, "SAME"},  {2, 5, 7, 3, 3, 3, 4, 1, 1, "VALID"},
      {2, 5, 7, 3, 3, 3, 4, 2, 2, "SAME"},  {2, 5, 7, 3, 3, 3, 4, 2, 2, "VALID"},
      {1, 6, 6, 2, 2, 2, 3, 2, 2, "SAME"},  {1, 7, 5, 2, 4, 2, 3, 2, 1, "SAME"},
      {3, 4, 4, 2, 5, 5, 2, 1, 1, "SAME"},   // filter larger than the image
      {2, 4, 3, 5, 1, 1, 6, 1, 1, "SAME"},   // 1x1 fast path
      {2, 5, 5, 3, 1, 1, 2, 2, 2, "VALID"},  // 1x1 with stride: im2col path
      {1, 9, 8, 1, 5, 5, 4, 3, 2, "VALID"},
  };
}

Output Conv(const ConvCase& c, const Scope& s, const std::vector<Output>& in) {
  return Conv2D(s, in[0], in[1], {c.sh, c.sw}, c.padding);
}

TEST(NnConvTest, ForwardMatchesReference) {
  uint64_t seed = 100;
  for (const ConvCase& c : ForwardCases()) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.o}, ++seed);
    std::vector<double> expected = ConvReference(c, x, f);
    auto fn = [&](const Scope& s, const std::vector<Output>& in) { return Conv(c, s, in); };
    Tensor y = EvalWith({x, f}, fn);
    const bool same = std::string(c.padding) == "SAME";
    EXPECT_EQ(y.shape(),
              (Shape{c.n, Along(c.h, c.kh, c.sh, same).out, Along(c.w, c.kw, c.sw, same).out, c.o}))
        << Describe(c);
    ExpectNear(y, expected, 1e-12, Describe(c));
    ExpectNear(EvalWith({ToFloat(x), ToFloat(f)}, fn), expected, 1e-5, Describe(c));
  }
}

TEST(NnConvTest, LargeBatchRunsInChunksForwardAndBackward) {
  // 30 images of 14x14x32 with a 5x5 window: the im2col matrix exceeds one chunk, so the
  // forward pass and both backprops run (and the filter gradient accumulates) per chunk.
  ConvCase c{30, 14, 14, 32, 5, 5, 2, 1, 1, "SAME"};
  Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, 601);
  Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.o}, 602);
  Tensor dy = RandomDoubles({c.n, c.h, c.w, c.o}, 603);
  std::vector<double> dx(x.NumElements(), 0), df(f.NumElements(), 0);
  auto xv = x.flat<double>(), fv = f.flat<double>(), dyv = dy.flat<double>();
  const int64_t pad = 2;  // SAME, stride 1, 5x5
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oh = 0; oh < c.h; ++oh)
      for (int64_t ow = 0; ow < c.w; ++ow)
        for (int64_t o = 0; o < c.o; ++o) {
          double g = dyv[((n * c.h + oh) * c.w + ow) * c.o + o];
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              int64_t ih = oh - pad + i, iw = ow - pad + j;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              for (int64_t ch = 0; ch < c.c; ++ch) {
                int64_t xi = ((n * c.h + ih) * c.w + iw) * c.c + ch;
                int64_t fi = ((i * c.kw + j) * c.c + ch) * c.o + o;
                dx[xi] += g * fv[fi];
                df[fi] += g * xv[xi];
              }
            }
        }
  Graph graph;
  Scope s(graph);
  auto xo = Const(s, x), fo = Const(s, f);
  auto y = Conv2D(s, xo, fo, {1, 1}, "SAME");
  auto grads = Gradients(s, {y}, {xo, fo}, {Const(s, dy)});
  Session session(graph, {.intra_op_threads = 2});
  auto out = session.Run({}, {y, grads[0], grads[1]});
  ExpectNear(out[0], ConvReference(c, x, f), 1e-12, "forward");
  ExpectNear(out[1], dx, 1e-12, "input gradient");
  ExpectNear(out[2], df, 1e-11, "filter gradient");
}

TEST(NnConvTest, StaticShapeWithUnknownBatch) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {-1, 28, 28, 1});
  auto w = Placeholder(s, kFloat32, {5, 5, 1, 32});
  EXPECT_EQ(Conv2D(s, x, w, {1, 1}, "SAME").shape(), (Shape{-1, 28, 28, 32}));
  EXPECT_EQ(Conv2D(s, x, w, {2, 2}, "VALID").shape(), (Shape{-1, 12, 12, 32}));
  EXPECT_EQ(MaxPool(s, x, {2, 2}, {2, 2}, "SAME").shape(), (Shape{-1, 14, 14, 1}));
  EXPECT_EQ(AvgPool(s, x, {3, 3}, {2, 2}, "VALID").shape(), (Shape{-1, 13, 13, 1}));
}

TEST(NnConvTest, GradientsPassTheChecker) {
  std::vector<ConvCase> cases = {
      {2, 4, 5, 2, 3, 3, 3, 1, 1, "SAME"},  {1, 5, 5, 2, 3, 2, 2, 2, 2, "SAME"},
      {2, 5, 4, 2, 2, 3, 2, 2, 1, "VALID"}, {1, 3, 3, 3, 1, 1, 2, 1, 1, "SAME"},
      {1, 3, 3, 2, 4, 4, 2, 1, 1, "SAME"},
  };
  uint64_t seed = 200;
  for (const ConvCase& c : cases) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.o}, ++seed);
    double err = MaxGradientError(
        [&](const Scope& s, const std::vector<Output>& in) { return Conv(c, s, in); }, {x, f});
    EXPECT_LT(err, 1e-8) << Describe(c);
  }
}

TEST(NnConvTest, ChannelMismatchFailsAtConstructionNamingNodeAndShapes) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {-1, 28, 28, 3});
  auto w = Placeholder(s, kFloat32, {5, 5, 1, 32});
  std::string msg = InvalidArgumentMessage([&] {
    Conv2D(s.WithOpName("conv1"), x, w, {1, 1}, "SAME");
  });
  EXPECT_NE(msg.find("Conv2D 'conv1'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[?,28,28,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5,5,1,32]"), std::string::npos) << msg;
  msg = InvalidArgumentMessage([&] {
    Conv2D(s.WithOpName("conv2"), x, Placeholder(s, kFloat32, {30, 3, 3, 4}), {1, 1}, "VALID");
  });
  EXPECT_NE(msg.find("smaller than the window"), std::string::npos) << msg;
  msg = InvalidArgumentMessage([&] {
    Conv2D(s.WithOpName("conv3"), x, Placeholder(s, kFloat32, {3, 3, 3, 4}), {1, 1}, "FULL");
  });
  EXPECT_NE(msg.find("padding"), std::string::npos) << msg;
  msg = InvalidArgumentMessage([&] { MaxPool(s.WithOpName("pool"), x, {2, 2}, {0, 2}, "SAME"); });
  EXPECT_NE(msg.find("'pool'"), std::string::npos) << msg;
}

TEST(NnConvTest, ChannelMismatchAtRunTimeIsInvalidArgument) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32);  // shape unknown until fed
  auto w = Placeholder(s, kFloat32, {3, 3, 2, 4});
  auto y = Conv2D(s.WithOpName("conv"), x, w, {1, 1}, "SAME");
  Session session(graph, {.intra_op_threads = 1});
  std::string msg = InvalidArgumentMessage([&] {
    session.Run(
        {{x, Tensor::Zeros(kFloat32, {1, 4, 4, 3})}, {w, Tensor::Zeros(kFloat32, {3, 3, 2, 4})}},
        {y});
  });
  EXPECT_NE(msg.find("'conv'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1,4,4,3]"), std::string::npos) << msg;
}

// The im2col buffer is the Session's unnamed ConvScratch resource: a graph node of any
// name, even the one the buffer's resource once had, leaves it alone.
TEST(NnConvTest, ScratchBufferIsNotAGraphName) {
  Graph graph;
  Scope s(graph);
  Variable scale(s.WithOpName("_nn_conv_scratch"), Tensor::Scalar<float>(2));
  auto x = Const(s, Tensor::FromVector<float>(std::vector<float>(9, 1), {1, 3, 3, 1}));
  auto w = Const(s, Tensor::FromVector<float>(std::vector<float>(9, 1), {3, 3, 1, 1}));
  auto y = Mul(s, Conv2D(s.WithOpName("conv"), x, w, {1, 1}, "SAME"), scale);
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  for (int run = 0; run < 2; ++run) {  // the second run reuses the kept buffer
    Tensor out = session.Eval(y);
    EXPECT_EQ(out.flat<float>()[4], 18) << "run " << run;  // 9 ones under the window, x2
    EXPECT_EQ(out.flat<float>()[0], 8) << "run " << run;   // a corner: 4 ones, x2
  }
  EXPECT_EQ(session.resources().Names(), (std::vector<std::string>{"_nn_conv_scratch"}));
}

// ---- Pooling ----

struct PoolCase {
  int64_t n, h, w, c, kh, kw, sh, sw;
  const char* padding;
};

std::vector<double> PoolReference(const PoolCase& c, const Tensor& x, bool max) {
  const bool same = std::string(c.padding) == "SAME";
  Window wh = Along(c.h, c.kh, c.sh, same), ww = Along(c.w, c.kw, c.sw, same);
  auto xv = x.flat<double>();
  std::vector<double> out;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t oh = 0; oh < wh.out; ++oh)
      for (int64_t ow = 0; ow < ww.out; ++ow)
        for (int64_t ch = 0; ch < c.c; ++ch) {
          double best = -INFINITY, sum = 0;
          int count = 0;
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              int64_t ih = oh * c.sh - wh.pad + i, iw = ow * c.sw - ww.pad + j;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              double v = xv[((n * c.h + ih) * c.w + iw) * c.c + ch];
              best = std::max(best, v);
              sum += v;
              ++count;
            }
          out.push_back(max ? best : sum / count);
        }
  return out;
}

std::vector<PoolCase> PoolCases() {
  return {
      {2, 4, 4, 3, 2, 2, 2, 2, "SAME"},  {2, 5, 5, 2, 2, 2, 2, 2, "SAME"},
      {2, 5, 5, 2, 2, 2, 2, 2, "VALID"}, {1, 5, 7, 2, 3, 3, 1, 1, "SAME"},
      {1, 7, 6, 3, 3, 2, 2, 1, "SAME"},  {1, 7, 6, 3, 3, 3, 2, 2, "VALID"},
  };
}

std::string Describe(const PoolCase& c) {
  return StrCat("in [", c.n, ",", c.h, ",", c.w, ",", c.c, "] ksize ", c.kh, "x", c.kw, " strides ",
                c.sh, "x", c.sw, " ", c.padding);
}

// Distinct values at least 0.01 apart (no ties for MaxPool), in random order.
Tensor DistinctValues(const Shape& shape, uint64_t seed) {
  Tensor t(kFloat64, shape);
  std::vector<int> order(t.NumElements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = order[i] * 0.01 - 1;
  return t;
}

TEST(NnPoolTest, ForwardMatchesReference) {
  uint64_t seed = 300;
  for (const PoolCase& c : PoolCases()) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    auto max_fn = [&](const Scope& s, const std::vector<Output>& in) {
      return MaxPool(s, in[0], {c.kh, c.kw}, {c.sh, c.sw}, c.padding);
    };
    auto avg_fn = [&](const Scope& s, const std::vector<Output>& in) {
      return AvgPool(s, in[0], {c.kh, c.kw}, {c.sh, c.sw}, c.padding);
    };
    ExpectNear(EvalWith({x}, max_fn), PoolReference(c, x, true), 1e-15, Describe(c));
    ExpectNear(EvalWith({x}, avg_fn), PoolReference(c, x, false), 1e-12, Describe(c));
    ExpectNear(EvalWith({ToFloat(x)}, max_fn), PoolReference(c, x, true), 1e-6, Describe(c));
    ExpectNear(EvalWith({ToFloat(x)}, avg_fn), PoolReference(c, x, false), 1e-6, Describe(c));
  }
}

TEST(NnPoolTest, GradientsPassTheChecker) {
  uint64_t seed = 400;
  for (const PoolCase& c : PoolCases()) {
    Tensor x = DistinctValues({c.n, c.h, c.w, c.c}, ++seed);
    EXPECT_LT(MaxGradientError(
                  [&](const Scope& s, const std::vector<Output>& in) {
                    return MaxPool(s, in[0], {c.kh, c.kw}, {c.sh, c.sw}, c.padding);
                  },
                  {x}),
              1e-8)
        << Describe(c);
    EXPECT_LT(MaxGradientError(
                  [&](const Scope& s, const std::vector<Output>& in) {
                    return AvgPool(s, in[0], {c.kh, c.kw}, {c.sh, c.sw}, c.padding);
                  },
                  {x}),
              1e-8)
        << Describe(c);
  }
}

// Tiling windows (stride = window) take MaxPoolGrad's write-once path; with ties, signed
// zeros and NaNs it must route each gradient exactly where the first-maximum rule does
// (the first NaN of the window, else its first maximum in row-major order), and leave
// elements outside every window (VALID leftovers) zero.
TEST(NnPoolTest, MaxPoolGradOverTilingWindowsFollowsTheFirstMaximumRule) {
  const double nan = std::nan("");
  const std::vector<PoolCase> cases = {
      {2, 5, 7, 3, 2, 2, 2, 2, "SAME"},   {2, 5, 7, 3, 2, 2, 2, 2, "VALID"},
      {1, 8, 8, 9, 3, 3, 3, 3, "SAME"},   {1, 7, 8, 2, 2, 3, 2, 3, "VALID"},
      {3, 4, 4, 32, 2, 2, 2, 2, "VALID"},
  };
  std::mt19937 rng(77);
  for (const PoolCase& c : cases) {
    const bool same = std::string(c.padding) == "SAME";
    Window wh = Along(c.h, c.kh, c.sh, same), ww = Along(c.w, c.kw, c.sw, same);
    Tensor x(kFloat64, {c.n, c.h, c.w, c.c});
    const double choices[] = {0.0, -0.0, 1.0, 2.0, 2.0, nan};  // ties are the common case
    for (double& v : x.flat<double>()) v = choices[rng() % (rng() % 9 == 0 ? 6 : 5)];
    Tensor dy = RandomDoubles({c.n, wh.out, ww.out, c.c}, 5);
    std::vector<double> want(x.NumElements(), 0.0);
    auto xv = x.flat<double>();
    auto dyv = dy.flat<double>();
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t oh = 0; oh < wh.out; ++oh)
        for (int64_t ow = 0; ow < ww.out; ++ow)
          for (int64_t ch = 0; ch < c.c; ++ch) {
            int64_t winner = -1, first_nan = -1;
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                const int64_t ih = oh * c.sh - wh.pad + i, iw = ow * c.sw - ww.pad + j;
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
                const int64_t at = ((n * c.h + ih) * c.w + iw) * c.c + ch;
                if (std::isnan(xv[at]) && first_nan < 0) first_nan = at;
                if (winner < 0 || xv[at] > xv[winner]) winner = at;
              }
            if (first_nan >= 0) winner = first_nan;
            if (winner >= 0) want[winner] += dyv[((n * wh.out + oh) * ww.out + ow) * c.c + ch];
          }
    for (DType dtype : {kFloat64, kFloat32}) {
      Graph graph;
      Scope s(graph);
      Output xi = Const(s, dtype == kFloat64 ? x : ToFloat(x));
      Output y = MaxPool(s, xi, {c.kh, c.kw}, {c.sh, c.sw}, c.padding);
      Output dx = Gradients(s, {y}, {xi}, {Const(s, dtype == kFloat64 ? dy : ToFloat(dy))})[0];
      Session session(graph, {.intra_op_threads = 2});
      ExpectNear(session.Eval(dx), want, dtype == kFloat64 ? 0.0 : 1e-7,
                 StrCat(Describe(c), dtype == kFloat64 ? " float64" : " float32"));
    }
  }
}

// A NaN in a window makes that window's max NaN (numpy's maximum), wherever it sits in
// the window, and MaxPool's gradient goes to the first NaN (the value the forward pass
// returned), not to the largest finite value.
TEST(NnPoolTest, MaxPoolPropagatesNaNForwardAndRoutesTheGradientToIt) {
  const double nan = std::nan("");
  // One image 2x4, one channel, 2x2 windows with stride 2: windows {0,1,4,5}, {2,3,6,7}.
  Tensor x = Tensor::FromVector<double>({1, nan, 9, 2, 8, 3, 4, nan}, {1, 2, 4, 1});
  for (DType dtype : {kFloat64, kFloat32}) {
    Tensor in = dtype == kFloat64 ? x : ToFloat(x);
    Graph graph;
    Scope s(graph);
    Output xi = Const(s, in);
    Output y = MaxPool(s, xi, {2, 2}, {2, 2}, "VALID");
    Output dx = Gradients(s, {y}, {xi})[0];
    Session session(graph);
    std::vector<double> yv = Values(session.Eval(y));
    ASSERT_EQ(yv.size(), 2u);
    EXPECT_TRUE(std::isnan(yv[0])) << yv[0];
    EXPECT_TRUE(std::isnan(yv[1])) << yv[1];
    EXPECT_EQ(Values(session.Eval(dx)), (std::vector<double>{0, 1, 0, 0, 0, 0, 0, 1}));
  }
}

// MaxPool 2x2 / 2's gradient takes the tiling-windows path; it must give the general
// scatter loop's bits (ScopedGeneralMaxPool), and the forward pass is checked alongside: ties,
// signed zeros, NaNs, -Inf and lowest() (an all--Inf window's forward value is lowest(), the
// general scan's start), VALID leftovers, several channel counts, both dtypes, 1 and 2 threads.
TEST(NnPoolTest, TwoByTwoTiledGradientGivesTheGeneralPathsBits) {
  const double nan = std::nan(""), inf = HUGE_VAL;
  struct Case {
    int64_t n, h, w, c;
    const char* padding;
  };
  const std::vector<Case> cases = {{2, 4, 6, 1, "VALID"},   {3, 5, 7, 3, "VALID"},
                                   {2, 8, 8, 32, "SAME"},   {1, 6, 4, 17, "SAME"},
                                   {4, 28, 28, 32, "SAME"}, {2, 14, 15, 64, "VALID"}};
  std::mt19937 rng(2026);
  for (const Case& c : cases) {
    Tensor x(kFloat64, {c.n, c.h, c.w, c.c});
    for (double& v : x.flat<double>()) {
      const double choices[] = {0.0, -0.0, 1.0, 2.0, -inf, -1.0, nan};
      const int pick = static_cast<int>(rng() % 40);
      v = pick < 7 ? choices[pick] : static_cast<double>(rng() % 1000) / 100 - 5;
    }
    // Image 0's first window is all -Inf.
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t ch = 0; ch < c.c; ++ch) x.data<double>()[(i * c.w + j) * c.c + ch] = -inf;
    const int64_t out_h = std::string(c.padding) == "SAME" ? (c.h + 1) / 2 : c.h / 2;
    const int64_t out_w = std::string(c.padding) == "SAME" ? (c.w + 1) / 2 : c.w / 2;
    Tensor dy = RandomDoubles({c.n, out_h, out_w, c.c}, 9);
    for (DType dtype : {kFloat64, kFloat32}) {
      for (int threads : {1, 2}) {
        Graph graph;
        Scope s(graph);
        Output xi = Const(s, dtype == kFloat64 ? x : ToFloat(x));
        Output y = MaxPool(s, xi, {2, 2}, {2, 2}, c.padding);
        Output dx = Gradients(s, {y}, {xi}, {Const(s, dtype == kFloat64 ? dy : ToFloat(dy))})[0];
        Session session(graph, {.intra_op_threads = threads});
        std::vector<Tensor> fast = session.Run({}, {y, dx});
        std::vector<Tensor> general;
        {
          nn_internal::ScopedGeneralMaxPool use_general;
          general = session.Run({}, {y, dx});
        }
        const std::string what = StrCat("[", c.n, ",", c.h, ",", c.w, ",", c.c, "] ", c.padding,
                                        " ", DTypeName(dtype), " threads ", threads);
        ASSERT_EQ(fast[0].shape(), (Shape{c.n, out_h, out_w, c.c})) << what;
        // Bitwise: NaN payloads and signed zeros included.
        for (int k = 0; k < 2; ++k) {
          ASSERT_EQ(fast[k].TotalBytes(), general[k].TotalBytes()) << what;
          EXPECT_EQ(std::memcmp(fast[k].raw_data(), general[k].raw_data(), fast[k].TotalBytes()), 0)
              << what << (k == 0 ? " forward" : " gradient");
        }
      }
    }
  }
}

TEST(NnPoolTest, SmallConvnetGradient) {
  // conv SAME -> bias -> relu -> maxpool -> conv VALID to 1x1 -> sparse xent over the
  // class (last) dim of [N,1,1,classes] logits.
  Tensor images = RandomDoubles({2, 6, 6, 1}, 501);
  Tensor w1 = RandomDoubles({3, 3, 1, 2}, 502);
  Tensor b1 = RandomDoubles({2}, 503, 0.2, 0.4);
  Tensor w2 = RandomDoubles({3, 3, 2, 3}, 504);
  Tensor labels = Tensor::FromVector<int32_t>({1, 2}, {2, 1, 1});
  double err = MaxGradientError(
      [&](const Scope& s, const std::vector<Output>& in) {
        auto h = Relu(s, BiasAdd(s, Conv2D(s, in[0], in[1], {1, 1}, "SAME"), in[2]));
        auto p = MaxPool(s, h, {2, 2}, {2, 2}, "SAME");
        auto logits = Conv2D(s, p, in[3], {1, 1}, "VALID");
        return SparseSoftmaxCrossEntropyWithLogits(s, Const(s, labels), logits);
      },
      {images, w1, b1, w2});
  EXPECT_LT(err, 1e-7);
}

}  // namespace
}  // namespace loom
