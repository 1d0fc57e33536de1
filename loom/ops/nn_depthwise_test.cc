#include "loom/ops/nn_depthwise.h"

#include <gtest/gtest.h>

#include <iostream>
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

struct DwCase {
  int64_t n, h, w, c, kh, kw, m, sh, sw;
  std::string padding;
  int64_t dh = 1, dw = 1;  // dilations
};

std::string DescribeDw(const DwCase& c) {
  return StrCat("[", c.n, ",", c.h, ",", c.w, ",", c.c, "] * [", c.kh, ",", c.kw, ",", c.c, ",",
                c.m, "] strides ", c.sh, "x", c.sw, " dilations ", c.dh, "x", c.dw, " ", c.padding);
}

// TF's definition written out in float64: out[b, i, j, k * M + q] = sum_{di, dj}
// in[b, i * sh + di * dh - pad_top, j * sw + dj * dw - pad_left, k] * filter[di, dj, k, q],
// with the output size and TF's SAME padding (the extra row / column at the bottom / right)
// of the dilated span (k - 1) * d + 1.
std::vector<double> DepthwiseReference(const DwCase& c, const Tensor& x, const Tensor& f) {
  auto out_size = [&](int64_t in, int64_t k, int64_t s, int64_t* pad) {
    if (c.padding == "VALID") {
      *pad = 0;
      return (in - k) / s + 1;
    }
    const int64_t out = (in + s - 1) / s;
    *pad = std::max<int64_t>((out - 1) * s + k - in, 0) / 2;
    return out;
  };
  int64_t pt = 0, pl = 0;
  const int64_t oh = out_size(c.h, (c.kh - 1) * c.dh + 1, c.sh, &pt),
                ow = out_size(c.w, (c.kw - 1) * c.dw + 1, c.sw, &pl);
  std::vector<double> y(c.n * oh * ow * c.c * c.m, 0.0);
  const double* in = x.data<double>();
  const double* w = f.data<double>();
  for (int64_t b = 0; b < c.n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t k = 0; k < c.c; ++k)
          for (int64_t q = 0; q < c.m; ++q) {
            double sum = 0;
            for (int64_t di = 0; di < c.kh; ++di)
              for (int64_t dj = 0; dj < c.kw; ++dj) {
                const int64_t r = i * c.sh + di * c.dh - pt, s = j * c.sw + dj * c.dw - pl;
                if (r < 0 || r >= c.h || s < 0 || s >= c.w) continue;
                sum += in[((b * c.h + r) * c.w + s) * c.c + k] *
                       w[((di * c.kw + dj) * c.c + k) * c.m + q];
              }
            y[((b * oh + i) * ow + j) * c.c * c.m + k * c.m + q] = sum;
          }
  return y;
}

const std::vector<DwCase>& DepthwiseCases() {
  static const auto* cases = new std::vector<DwCase>{
      {2, 5, 4, 3, 3, 3, 1, 1, 1, "SAME"},
      {1, 6, 5, 2, 3, 2, 2, 2, 2, "SAME"},
      {2, 5, 5, 2, 2, 3, 3, 1, 2, "VALID"},
      {1, 7, 6, 4, 3, 3, 1, 3, 2, "VALID"},
      {3, 4, 4, 1, 4, 4, 2, 1, 1, "SAME"},
      {1, 3, 3, 2, 1, 1, 2, 2, 2, "SAME"},
      // dilated (TF's dilations attribute), with and without strides
      {2, 7, 6, 2, 3, 3, 1, 1, 1, "SAME", 2, 2},
      {1, 8, 7, 3, 3, 2, 2, 1, 1, "VALID", 2, 3},
      {1, 9, 8, 2, 2, 3, 1, 2, 3, "SAME", 3, 2},
      {2, 6, 6, 1, 2, 2, 3, 2, 1, "VALID", 2, 1},
  };
  return *cases;
}

Output Depthwise(const DwCase& c, const Scope& s, const std::vector<Output>& in) {
  return DepthwiseConv2dNative(s, in[0], in[1], {c.sh, c.sw}, c.padding, {c.dh, c.dw});
}

TEST(NnDepthwiseTest, MatchesTheFloat64ReferenceInBothDtypes) {
  uint64_t seed = 900;
  for (const DwCase& c : DepthwiseCases()) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.m}, ++seed);
    const std::vector<double> want = DepthwiseReference(c, x, f);
    auto run = [&](const Scope& s, const std::vector<Output>& in) { return Depthwise(c, s, in); };
    ExpectNear(EvalWith({x, f}, run, 2), want, 1e-12, DescribeDw(c));
    ExpectNear(EvalWith({ToFloat(x), ToFloat(f)}, run, 1), want, 1e-5, DescribeDw(c));
  }
}

// One case worked by hand: a 3x3 image of 1..9 (one channel), a 2x2 filter of ones with
// multiplier 2 (the second copy doubled), VALID, stride 1: each output is a 2x2 window sum.
TEST(NnDepthwiseTest, WindowSumsByHand) {
  Tensor x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  Tensor f = Tensor::FromVector<double>({1, 2, 1, 2, 1, 2, 1, 2}, {2, 2, 1, 2});
  Tensor y = EvalWith({x, f}, [](const Scope& s, const std::vector<Output>& in) {
    return DepthwiseConv2dNative(s, in[0], in[1], {1, 1}, "VALID");
  });
  EXPECT_EQ(y.shape(), Shape({1, 2, 2, 2}));
  ExpectNear(y, {12, 24, 16, 32, 24, 48, 28, 56}, 0);
}

TEST(NnDepthwiseTest, NumericGradients) {
  uint64_t seed = 950;
  for (const DwCase& c : DepthwiseCases()) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.m}, ++seed);
    EXPECT_LT(MaxGradientError([&](const Scope& s,
                                   const std::vector<Output>& in) { return Depthwise(c, s, in); },
                               {x, f}),
              1e-8)
        << DescribeDw(c);
  }
}

// float32 takes oneDNN's depthwise kernels (not its reference loops, which the path
// declines) for a MobileNet-like layer, dilated or not, in all three passes; the values are
// MatchesTheFloat64ReferenceInBothDtypes'.
TEST(NnDepthwiseTest, Float32RunsOnOnednnsDepthwiseKernels) {
  for (int64_t rate : {1, 2}) {
    nn_internal::Geometry g{};
    g.batch = 8, g.in_h = g.in_w = 56, g.channels = 64, g.k_h = g.k_w = 3;
    g.stride_h = g.stride_w = 1, g.out_h = g.out_w = 56, g.pad_top = g.pad_left = rate;
    const nn_internal::DepthwiseShape d{g, rate, {rate, rate}};  // multiplier 1, then 2
    for (int pass = 0; pass < 3; ++pass) {
      const std::string impl = nn_internal::OnednnDepthwiseImpl(d, pass, 1);
      EXPECT_FALSE(impl.empty()) << "pass " << pass << " rate " << rate;
      EXPECT_NE(impl.rfind("ref", 0), 0u) << impl << " pass " << pass << " rate " << rate;
      std::cout << "oneDNN depthwise pass " << pass << " rate and multiplier " << rate << ": "
                << impl << "\n";
    }
  }
}

TEST(NnDepthwiseTest, BadInputsNameTheNodeAndShapes) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {1, 4, 4, 3});
  auto f = Placeholder(s, kFloat32, {2, 2, 2, 1});
  std::string m = testing::ErrorOf(
      [&] {
        DepthwiseConv2dNative(s, x, f, {1, 1}, "SAME");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("DepthwiseConv2dNative"), std::string::npos) << m;
  EXPECT_NE(m.find("input channels 3"), std::string::npos) << m;
  EXPECT_NE(m.find("in_channels 2"), std::string::npos) << m;
  auto f3 = Placeholder(s, kFloat32, {5, 5, 3, 1});
  m = testing::ErrorOf(
      [&] {
        DepthwiseConv2dNative(s, x, f3, {1, 1}, "VALID");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("smaller than the window height 5"), std::string::npos) << m;
  m = testing::ErrorOf(
      [&] {
        DepthwiseConv2dNative(s, x, f3, {1, 1}, "FULL");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("padding"), std::string::npos) << m;
  m = testing::ErrorOf(
      [&] {
        DepthwiseConv2dNative(s, x, Placeholder(s, kFloat32, {2, 2, 3, 1}), {1, 1}, "SAME", {0, 2});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("'dilations' must be [1, height, width, 1]"), std::string::npos) << m;
  // A VALID window of the dilated span (2 - 1) * 4 + 1 = 5 does not fit a 4x4 image.
  m = testing::ErrorOf(
      [&] {
        DepthwiseConv2dNative(s, x, Placeholder(s, kFloat32, {2, 2, 3, 1}), {1, 1}, "VALID",
                              {4, 4});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("smaller than the window height 5"), std::string::npos) << m;
  // Shapes known only at run time are checked by the kernel.
  auto xu = Placeholder(s, kFloat32, Shape::Unknown());
  Output y = DepthwiseConv2dNative(s, xu, f, {1, 1}, "SAME");
  Session session(graph);
  m = testing::ErrorOf(
      [&] {
        session.Run({{xu, Tensor::Zeros(kFloat32, {1, 4, 4, 3})},
                     {f, Tensor::Zeros(kFloat32, {2, 2, 2, 1})}},
                    {y});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("input channels 3"), std::string::npos) << m;
}

// Second derivatives: the numeric checker (which weights every output element by a fixed
// random r) over the first-order gradients d sum(sin y) / dx and / df: the backprop ops,
// whose own gradients are the family's ops.
TEST(NnDepthwiseTest, SecondDerivatives) {
  uint64_t seed = 990;
  for (const DwCase& c : DepthwiseCases()) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.m}, ++seed);
    for (int wrt : {0, 1}) {
      auto first_order = [&](const Scope& s, const std::vector<Output>& in) {
        // d sum(sin y) / d in[wrt]: the backprop op of cos(y), so depending on x and f.
        Output y = Depthwise(c, s, in);
        return Gradients(s, {Sum(s, Sin(s, y))}, {in[wrt]})[0];
      };
      EXPECT_LT(MaxGradientError(first_order, {x, f}), 1e-6)
          << DescribeDw(c) << " d/d" << (wrt == 0 ? "x" : "f");
    }
  }
}

}  // namespace
}  // namespace loom
