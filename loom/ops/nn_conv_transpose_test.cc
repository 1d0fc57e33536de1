#include "loom/ops/nn_conv_transpose.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/ops/math_trig.h"
#include "loom/ops/nn_test_util.h"
#include "loom/ops/onednn_depthwise.h"
#include "loom/ops/reduce.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using nn_test::EvalWith;
using nn_test::ExpectNear;
using nn_test::ToFloat;

// y [n, h, w, c] from value [n, oh, ow, k] by filter [kh, kw, c, k].
struct TransposeCase {
  int64_t n, h, w, c, kh, kw, k, sh, sw;
  std::string padding;
  int64_t dh = 1, dw = 1;  // dilations
};

std::string DescribeTranspose(const TransposeCase& t) {
  return StrCat("out [", t.n, ",", t.h, ",", t.w, ",", t.c, "] filter [", t.kh, ",", t.kw, ",", t.c,
                ",", t.k, "] strides ", t.sh, "x", t.sw, " dilations ", t.dh, "x", t.dw, " ",
                t.padding);
}

// TF's output size and leading padding of the Conv2D that conv2d_transpose inverts, for a
// k-tap filter dilated by d (the span (k - 1) * d + 1).
int64_t ConvOut(const TransposeCase& t, int64_t in, int64_t taps, int64_t d, int64_t s,
                int64_t* pad) {
  const int64_t k = (taps - 1) * d + 1;
  if (t.padding == "VALID") {
    *pad = 0;
    return (in - k) / s + 1;
  }
  const int64_t out = (in + s - 1) / s;
  *pad = std::max<int64_t>((out - 1) * s + k - in, 0) / 2;
  return out;
}

Shape ValueShape(const TransposeCase& t) {
  int64_t pt = 0, pl = 0;
  return Shape{t.n, ConvOut(t, t.h, t.kh, t.dh, t.sh, &pt), ConvOut(t, t.w, t.kw, t.dw, t.sw, &pl),
               t.k};
}

// conv2d_transpose written out in float64: each value element spreads value * filter over
// the window it would have been computed from, y[b, i*sh + di*dh - pt, j*sw + dj*dw - pl, c]
// += value[b, i, j, q] * filter[di, dj, c, q].
std::vector<double> TransposeReference(const TransposeCase& t, const Tensor& v, const Tensor& f) {
  int64_t pt = 0, pl = 0;
  const int64_t oh = ConvOut(t, t.h, t.kh, t.dh, t.sh, &pt),
                ow = ConvOut(t, t.w, t.kw, t.dw, t.sw, &pl);
  std::vector<double> y(t.n * t.h * t.w * t.c, 0.0);
  for (int64_t b = 0; b < t.n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t di = 0; di < t.kh; ++di)
          for (int64_t dj = 0; dj < t.kw; ++dj) {
            const int64_t r = i * t.sh + di * t.dh - pt, s = j * t.sw + dj * t.dw - pl;
            if (r < 0 || r >= t.h || s < 0 || s >= t.w) continue;
            for (int64_t c = 0; c < t.c; ++c)
              for (int64_t q = 0; q < t.k; ++q)
                y[((b * t.h + r) * t.w + s) * t.c + c] +=
                    v.data<double>()[((b * oh + i) * ow + j) * t.k + q] *
                    f.data<double>()[((di * t.kw + dj) * t.c + c) * t.k + q];
          }
  return y;
}

const std::vector<TransposeCase>& TransposeCases() {
  static const auto* cases = new std::vector<TransposeCase>{
      {2, 4, 4, 3, 3, 3, 2, 2, 2, "SAME"},
      {1, 7, 6, 2, 3, 3, 4, 2, 2, "SAME"},
      {2, 5, 5, 2, 2, 3, 3, 1, 1, "VALID"},
      {1, 8, 7, 1, 4, 3, 2, 3, 2, "VALID"},
      {1, 5, 4, 3, 1, 1, 2, 2, 2, "SAME"},
      {3, 6, 6, 4, 5, 5, 3, 1, 1, "SAME"},
      // dilated (TF's dilations attribute), with and without strides
      {2, 7, 6, 2, 3, 3, 2, 1, 1, "SAME", 2, 2},
      {1, 9, 8, 3, 3, 2, 2, 1, 1, "VALID", 2, 3},
      {1, 9, 8, 2, 2, 3, 3, 2, 2, "SAME", 3, 2},
  };
  return *cases;
}

Output Transposed(const TransposeCase& t, const Scope& s, const std::vector<Output>& in) {
  return Conv2DTranspose(s, in[0], in[1],
                         Const(s, Tensor::FromVector<int64_t>({t.n, t.h, t.w, t.c})), {t.sh, t.sw},
                         t.padding, {t.dh, t.dw});
}

TEST(NnConvTransposeTest, MatchesTheFloat64ReferenceInBothDtypes) {
  uint64_t seed = 1200;
  for (const TransposeCase& t : TransposeCases()) {
    Tensor v = RandomDoubles(ValueShape(t), ++seed);
    Tensor f = RandomDoubles({t.kh, t.kw, t.c, t.k}, ++seed);
    const std::vector<double> want = TransposeReference(t, v, f);
    auto run = [&](const Scope& s, const std::vector<Output>& in) { return Transposed(t, s, in); };
    Tensor y = EvalWith({v, f}, run, 2);
    EXPECT_EQ(y.shape(), Shape({t.n, t.h, t.w, t.c})) << DescribeTranspose(t);
    ExpectNear(y, want, 1e-12, DescribeTranspose(t));
    // float32: oneDNN's path (the direct loops when dilated).
    ExpectNear(EvalWith({ToFloat(v), ToFloat(f)}, run, 1), want, 1e-5, DescribeTranspose(t));
  }
}

// The transpose is Conv2D's adjoint: <Conv2D(x, f), v> = <x, Conv2DTranspose(v, f)>.
TEST(NnConvTransposeTest, IsTheAdjointOfConv2D) {
  uint64_t seed = 1300;
  for (const TransposeCase& t : TransposeCases()) {
    if (t.dh != 1 || t.dw != 1) continue;  // Conv2D has no dilations
    Tensor x = RandomDoubles({t.n, t.h, t.w, t.c}, ++seed);
    Tensor v = RandomDoubles(ValueShape(t), ++seed);
    Tensor f = RandomDoubles({t.kh, t.kw, t.c, t.k}, ++seed);
    Tensor conv = EvalWith({x, f}, [&](const Scope& s, const std::vector<Output>& in) {
      return Conv2D(s, in[0], in[1], {t.sh, t.sw}, t.padding);
    });
    Tensor tr = EvalWith({v, f}, [&](const Scope& s, const std::vector<Output>& in) {
      return Transposed(t, s, in);
    });
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < conv.NumElements(); ++i)
      lhs += conv.data<double>()[i] * v.data<double>()[i];
    for (int64_t i = 0; i < tr.NumElements(); ++i)
      rhs += tr.data<double>()[i] * x.data<double>()[i];
    EXPECT_NEAR(lhs, rhs, 1e-10 * std::max(1.0, std::abs(lhs))) << DescribeTranspose(t);
  }
}

TEST(NnConvTransposeTest, NumericGradients) {
  uint64_t seed = 1400;
  for (const TransposeCase& t : TransposeCases()) {
    Tensor v = RandomDoubles(ValueShape(t), ++seed);
    Tensor f = RandomDoubles({t.kh, t.kw, t.c, t.k}, ++seed);
    EXPECT_LT(MaxGradientError([&](const Scope& s,
                                   const std::vector<Output>& in) { return Transposed(t, s, in); },
                               {v, f}),
              1e-7)  // finite differences over the largest case reach ~5e-8
        << DescribeTranspose(t);
  }
}

// Second derivatives: the numeric checker over d sum(sin y) / d value and / d filter, which
// are a Conv2D and Conv2DTransposeBackpropFilter (whose gradient is a Conv2DTranspose and a
// Conv2D), dilated cases included.
TEST(NnConvTransposeTest, SecondDerivatives) {
  uint64_t seed = 1450;
  for (const TransposeCase& t : TransposeCases()) {
    if (t.n * t.h * t.w * t.c > 200) continue;  // finite differences over every element
    Tensor v = RandomDoubles(ValueShape(t), ++seed);
    Tensor f = RandomDoubles({t.kh, t.kw, t.c, t.k}, ++seed);
    for (int wrt : {0, 1}) {
      auto first_order = [&](const Scope& s, const std::vector<Output>& in) {
        return Gradients(s, {Sum(s, Sin(s, Transposed(t, s, in)))}, {in[wrt]})[0];
      };
      EXPECT_LT(MaxGradientError(first_order, {v, f}), 1e-6)
          << DescribeTranspose(t) << " d/d" << (wrt == 0 ? "value" : "filter");
    }
  }
}

// A dilated float32 Conv2DTranspose takes oneDNN's kernels (onednn_depthwise.h), not its
// reference loops (declined there); the values are MatchesTheFloat64ReferenceInBothDtypes'.
TEST(NnConvTransposeTest, DilatedFloat32RunsOnOnednn) {
  nn_internal::Geometry g{};
  g.batch = 8, g.in_h = g.in_w = 28, g.channels = 32, g.k_h = g.k_w = 3;
  g.stride_h = g.stride_w = 1, g.out_h = g.out_w = 28, g.pad_top = g.pad_left = 2;
  for (int pass : {1, 2}) {
    const std::string impl = nn_internal::OnednnDilatedConv2DImpl(g, 64, {2, 2}, pass, 1);
    EXPECT_FALSE(impl.empty()) << "pass " << pass;
    EXPECT_NE(impl.rfind("ref", 0), 0u) << impl << " pass " << pass;
  }
}

// output_shape computed at run time (a fed batch size); float32 gradients through oneDNN
// match float64's.
TEST(NnConvTransposeTest, RunTimeOutputShape) {
  Graph graph;
  Scope s(graph);
  auto v = Placeholder(s, kFloat32, Shape{kUnknownDim, 2, 2, 3});
  auto shape = Placeholder(s, kInt32, Shape{4});
  Tensor f0 = ToFloat(RandomDoubles({3, 3, 2, 3}, 7));
  Output y = Conv2DTranspose(s, v, Const(s, f0), shape, {2, 2}, "SAME");
  EXPECT_EQ(y.shape(), Shape({kUnknownDim, kUnknownDim, kUnknownDim, 2}));
  Session session(graph);
  Tensor v0 = ToFloat(RandomDoubles({2, 2, 2, 3}, 8));
  for (int32_t h : {3, 4}) {  // both convolve to 2 at stride 2
    Tensor out = session.Run({{v, v0}, {shape, Tensor::FromVector<int32_t>({2, h, 4, 2})}}, {y})[0];
    EXPECT_EQ(out.shape(), Shape({2, h, 4, 2}));
  }
  std::string m = testing::ErrorOf(
      [&] {
        session.Run({{v, v0}, {shape, Tensor::FromVector<int32_t>({2, 6, 4, 2})}}, {y});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("output_shape [2,6,4,2] does not fit value [2,2,2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("gives [2,3,2,3]"), std::string::npos) << m;
}

TEST(NnConvTransposeTest, BadShapesNameTheNode) {
  Graph graph;
  Scope s(graph);
  auto v = Placeholder(s, kFloat32, {1, 2, 2, 3});
  auto f = Placeholder(s, kFloat32, {3, 3, 2, 3});
  std::string m = testing::ErrorOf(
      [&] {
        Conv2DTranspose(s, v, f, Const(s, Tensor::FromVector<int64_t>({1, 4, 4, 5})), {2, 2},
                        "SAME");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("Conv2DTranspose"), std::string::npos) << m;
  EXPECT_NE(m.find("output_shape [1,4,4,5] has 5 channels"), std::string::npos) << m;
  auto f4 = Placeholder(s, kFloat32, {3, 3, 2, 4});
  m = testing::ErrorOf(
      [&] {
        Conv2DTranspose(s, v, f4, Const(s, Tensor::FromVector<int64_t>({1, 4, 4, 2})), {2, 2},
                        "SAME");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("value channels 3"), std::string::npos) << m;
  m = testing::ErrorOf(
      [&] {
        Conv2DTranspose(s, v, f, Const(s, Tensor::FromVector<int64_t>({1, 4, 4})), {2, 2}, "SAME");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("[batch, height, width, channels]"), std::string::npos) << m;
  // Dilated 2x2 by 3 (span 4) at stride 2, SAME: H = 4 convolves to 2, so the shape check
  // runs over the dilated span; a bad dilation names the attribute.
  Output ok =
      Conv2DTranspose(s, v, Placeholder(s, kFloat32, {2, 2, 2, 3}),
                      Const(s, Tensor::FromVector<int64_t>({1, 4, 4, 2})), {2, 2}, "SAME", {3, 3});
  EXPECT_EQ(ok.shape(), Shape({1, 4, 4, 2}));
  m = testing::ErrorOf(
      [&] {
        Conv2DTranspose(s, v, f, Const(s, Tensor::FromVector<int64_t>({1, 4, 4, 2})), {2, 2},
                        "SAME", {1, 2, 2});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("dilations must have 2 entries"), std::string::npos) << m;
  m = testing::ErrorOf(
      [&] {
        Conv2DTranspose(s, v, f, Const(s, Tensor::FromVector<int64_t>({1, 5, 5, 2})), {1, 1},
                        "VALID", {2, 2});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("dilations [1,2,2,1]"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom
