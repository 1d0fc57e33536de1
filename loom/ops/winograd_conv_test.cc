// Winograd F(2x2, 5x5) (winograd_conv.h) against float64 sums over the same float32
// inputs: forward, input gradient and filter gradient over SAME and VALID, sizes that are
// not multiples of the tile, 1x1 images, batch 1, channel counts on both sides of a vector,
// 1 and 2 threads; the non-finite fallback; and the dispatch through a Session.
#include "loom/ops/winograd_conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/autodiff/gradients.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_test_util.h"

namespace loom {
namespace {

using nn_internal::Geometry;
using nn_test::ToFloat;
using nn_test::Values;

Geometry MakeGeometry5x5(int64_t n, int64_t h, int64_t w, int64_t c, bool same) {
  Geometry g{.batch = n,
             .in_h = h,
             .in_w = w,
             .channels = c,
             .k_h = 5,
             .k_w = 5,
             .stride_h = 1,
             .stride_w = 1,
             .out_h = 0,
             .out_w = 0,
             .pad_top = 0,
             .pad_left = 0};
  nn_internal::WindowedOutput(h, 5, 1, same, &g.out_h, &g.pad_top);
  nn_internal::WindowedOutput(w, 5, 1, same, &g.out_w, &g.pad_left);
  return g;
}

// The three passes in float64 over float32 inputs x [N,H,W,C], w [5,5,C,K], dy [N,OH,OW,K].
struct Reference {
  std::vector<double> y, dx, dw;
};
Reference DirectSums(const Geometry& g, int64_t k, const float* x, const float* w,
                     const float* dy) {
  Reference r;
  r.y.assign(g.batch * g.out_h * g.out_w * k, 0);
  r.dx.assign(g.batch * g.in_h * g.in_w * g.channels, 0);
  r.dw.assign(25 * g.channels * k, 0);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        for (int64_t a = 0; a < 5; ++a) {
          const int64_t ih = oh - g.pad_top + a;
          if (ih < 0 || ih >= g.in_h) continue;
          for (int64_t b = 0; b < 5; ++b) {
            const int64_t iw = ow - g.pad_left + b;
            if (iw < 0 || iw >= g.in_w) continue;
            const int64_t xi = ((n * g.in_h + ih) * g.in_w + iw) * g.channels;
            const int64_t yi = ((n * g.out_h + oh) * g.out_w + ow) * k;
            for (int64_t c = 0; c < g.channels; ++c) {
              const int64_t wi = ((a * 5 + b) * g.channels + c) * k;
              for (int64_t o = 0; o < k; ++o) {
                r.y[yi + o] += double(x[xi + c]) * w[wi + o];
                r.dx[xi + c] += double(dy[yi + o]) * w[wi + o];
                r.dw[wi + o] += double(x[xi + c]) * dy[yi + o];
              }
            }
          }
        }
      }
    }
  }
  return r;
}

// The largest |got - want| relative to the largest |want|.
double RelativeError(const Tensor& got, const std::vector<double>& want) {
  const float* g = got.data<float>();
  double scale = 1e-30, err = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < want.size(); ++i) err = std::max(err, std::abs(g[i] - want[i]));
  return err / scale;
}

struct WinogradCase {
  int64_t n, h, w, c, k;
  bool same;
};

TEST(WinogradConvTest, MatchesFloat64SumsOverGeometries) {
  if (!nn_internal::WinogradRuns(MakeGeometry5x5(1, 5, 5, 1, true), 1)) {
    GTEST_SKIP() << "no AVX-512F: the Winograd kernels do not run on this CPU";
  }
  const std::vector<WinogradCase> cases = {
      {4, 14, 14, 32, 64, true},                           // the convnet's second layer
      {2, 28, 28, 1, 32, true},                            // its first
      {3, 7, 9, 17, 33, true},                             // odd sizes and channel counts
      {1, 1, 1, 5, 3, true},                               // a 1x1 image
      {1, 1, 6, 16, 16, true},                             // one row
      {2, 5, 5, 3, 70, false},                             // VALID, a single output
      {1, 11, 8, 20, 18, false},                           // VALID, odd output height
      {2, 6, 13, 48, 7, true},   {1, 4, 4, 64, 32, true},  // window larger than the image
  };
  for (int tile : {2, 4}) {
    nn_internal::ScopedConvAlgorithm force(tile == 2 ? nn_internal::ConvAlgorithm::kWinograd2x2
                                                     : nn_internal::ConvAlgorithm::kWinograd4x4);
    const double bound = tile == 2 ? 1e-5 : 3e-5;
    double worst[3] = {0, 0, 0};
    uint64_t seed = 1400;
    for (const WinogradCase& cs : cases) {
      const Geometry g = MakeGeometry5x5(cs.n, cs.h, cs.w, cs.c, cs.same);
      Tensor x = ToFloat(RandomDoubles({cs.n, cs.h, cs.w, cs.c}, ++seed));
      Tensor w = ToFloat(RandomDoubles({5, 5, cs.c, cs.k}, ++seed));
      Tensor dy = ToFloat(RandomDoubles({cs.n, g.out_h, g.out_w, cs.k}, ++seed));
      const Reference want =
          DirectSums(g, cs.k, x.data<float>(), w.data<float>(), dy.data<float>());
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        Tensor y(kFloat32, dy.shape()), dx(kFloat32, x.shape()), dw(kFloat32, w.shape());
        const std::string what =
            StrCat("F(", tile, "x", tile, ", 5x5) in [", cs.n, ",", cs.h, ",", cs.w, ",", cs.c,
                   "] -> ", cs.k, cs.same ? " SAME, " : " VALID, ", threads, " thread(s)");
        ASSERT_TRUE(nn_internal::WinogradConv2D(g, cs.k, x.data<float>(), w.data<float>(),
                                                y.data<float>(), pool))
            << what;
        ASSERT_TRUE(nn_internal::WinogradConv2DBackpropInput(
            g, cs.k, w.data<float>(), dy.data<float>(), dx.data<float>(), pool))
            << what;
        ASSERT_TRUE(nn_internal::WinogradConv2DBackpropFilter(
            g, cs.k, x.data<float>(), dy.data<float>(), dw.data<float>(), pool))
            << what;
        const double errors[3] = {RelativeError(y, want.y), RelativeError(dx, want.dx),
                                  RelativeError(dw, want.dw)};
        for (int pass = 0; pass < 3; ++pass) {
          EXPECT_LT(errors[pass], bound) << what << ", pass " << pass;
          worst[pass] = std::max(worst[pass], errors[pass]);
        }
      }
    }
    std::printf(
        "F(%dx%d, 5x5) worst error / max |reference|: forward %.2g, input gradient "
        "%.2g, filter gradient %.2g\n",
        tile, tile, worst[0], worst[1], worst[2]);
  }
}

// The fused epilogue: y = max(conv + bias, 0) in the output transform.
TEST(WinogradConvTest, BiasAndReluEpilogue) {
  const Geometry g = MakeGeometry5x5(2, 9, 10, 24, true);
  const int64_t k = 20;
  if (!nn_internal::WinogradRuns(g, k)) GTEST_SKIP() << "no AVX-512F";
  Tensor x = ToFloat(RandomDoubles({2, 9, 10, 24}, 21));
  Tensor w = ToFloat(RandomDoubles({5, 5, 24, k}, 22));
  Tensor bias = ToFloat(RandomDoubles({k}, 23, -3, 3));
  Tensor dy(kFloat32, Shape{2, 9, 10, k});  // only its shape: no gradient here
  const Reference want = DirectSums(g, k, x.data<float>(), w.data<float>(), dy.data<float>());
  ThreadPool pool(2);
  for (int tile : {2, 4}) {
    nn_internal::ScopedConvAlgorithm force(tile == 2 ? nn_internal::ConvAlgorithm::kWinograd2x2
                                                     : nn_internal::ConvAlgorithm::kWinograd4x4);
    for (bool relu : {false, true}) {
      Tensor y(kFloat32, dy.shape());
      ASSERT_TRUE(nn_internal::WinogradConv2D(g, k, x.data<float>(), w.data<float>(),
                                              y.data<float>(), pool, bias.data<float>(), relu));
      std::vector<double> expected(want.y.size());
      int64_t zeros = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        expected[i] = want.y[i] + bias.data<float>()[i % k];
        if (relu) expected[i] = std::max(expected[i], 0.0);
        zeros += expected[i] == 0;
      }
      EXPECT_LT(RelativeError(y, expected), 3e-5) << (relu ? "with ReLU" : "bias only");
      if (relu) {
        EXPECT_GT(zeros, 0);
      }
    }
  }
}

// A NaN or an Inf in the input: the kernels say so (the transforms would spread it over
// whole tiles), and Conv2D then gives the direct path's results, bit for bit.
TEST(WinogradConvTest, NonFiniteInputsFallBackToTheDirectPath) {
  const Geometry g = MakeGeometry5x5(2, 14, 14, 32, true);
  if (!nn_internal::WinogradRuns(g, 64)) GTEST_SKIP() << "no AVX-512F";
  for (float special : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
    Tensor x = ToFloat(RandomDoubles({2, 14, 14, 32}, 5));
    Tensor w = ToFloat(RandomDoubles({5, 5, 32, 64}, 6));
    Tensor dy = ToFloat(RandomDoubles({2, 14, 14, 64}, 7));
    x.data<float>()[(3 * 14 + 4) * 32 + 5] = special;
    dy.data<float>()[((14 + 9) * 14 + 2) * 64 + 1] = special;
    ThreadPool pool(1);
    Tensor y(kFloat32, dy.shape()), dx(kFloat32, x.shape()), dw(kFloat32, w.shape());
    for (auto tile :
         {nn_internal::ConvAlgorithm::kWinograd2x2, nn_internal::ConvAlgorithm::kWinograd4x4}) {
      nn_internal::ScopedConvAlgorithm force(tile);
      EXPECT_FALSE(nn_internal::WinogradConv2D(g, 64, x.data<float>(), w.data<float>(),
                                               y.data<float>(), pool));
      EXPECT_FALSE(nn_internal::WinogradConv2DBackpropInput(
          g, 64, w.data<float>(), dy.data<float>(), dx.data<float>(), pool));
      EXPECT_FALSE(nn_internal::WinogradConv2DBackpropFilter(
          g, 64, x.data<float>(), dy.data<float>(), dw.data<float>(), pool));
    }
    // Through a Session: forcing Winograd changes no bit of the direct path's results.
    auto run = [&](nn_internal::ConvAlgorithm algorithm) {
      nn_internal::ScopedConvAlgorithm force(algorithm);
      Graph graph;
      Scope s(graph);
      auto xo = Const(s, x), wo = Const(s, w);
      auto y_out = Conv2D(s, xo, wo, {1, 1}, "SAME");
      auto grads = Gradients(s, {y_out}, {xo, wo}, {Const(s, dy)});
      Session session(graph, {.intra_op_threads = 1});
      return session.Run({}, {y_out, grads[0], grads[1]});
    };
    const std::vector<Tensor> direct = run(nn_internal::ConvAlgorithm::kDirect);
    const std::vector<Tensor> winograd = run(nn_internal::ConvAlgorithm::kWinograd);
    for (int i = 0; i < 3; ++i) {
      const std::vector<double> a = Values(direct[i]), b = Values(winograd[i]);
      ASSERT_EQ(a.size(), b.size());
      int64_t finite = 0;
      for (size_t j = 0; j < a.size(); ++j) {
        if (std::isnan(a[j])) {
          ASSERT_TRUE(std::isnan(b[j])) << "output " << i << " element " << j;
        } else {
          ASSERT_EQ(a[j], b[j]) << "output " << i << " element " << j;
        }
        finite += std::isfinite(a[j]);
      }
      EXPECT_GT(finite, 0) << "output " << i << ": the special must stay in its windows";
    }
  }
}

// Through a Session, forced Winograd against forced direct (oneDNN) on finite inputs:
// the dispatch in nn_conv.cc reaches the kernels and agrees with the direct path.
TEST(WinogradConvTest, SessionPathsAgree) {
  const Geometry g = MakeGeometry5x5(3, 14, 14, 32, true);
  if (!nn_internal::WinogradRuns(g, 24)) GTEST_SKIP() << "no AVX-512F";
  Tensor x = ToFloat(RandomDoubles({3, 14, 14, 32}, 11));
  Tensor w = ToFloat(RandomDoubles({5, 5, 32, 24}, 12));
  Tensor dy = ToFloat(RandomDoubles({3, 14, 14, 24}, 13));
  for (int threads : {1, 2}) {
    auto run = [&](nn_internal::ConvAlgorithm algorithm) {
      nn_internal::ScopedConvAlgorithm force(algorithm);
      Graph graph;
      Scope s(graph);
      auto xo = Const(s, x), wo = Const(s, w);
      auto y_out = Conv2D(s, xo, wo, {1, 1}, "SAME");
      auto grads = Gradients(s, {y_out}, {xo, wo}, {Const(s, dy)});
      Session session(graph, {.intra_op_threads = threads});
      return session.Run({}, {y_out, grads[0], grads[1]});
    };
    const std::vector<Tensor> direct = run(nn_internal::ConvAlgorithm::kDirect);
    const std::vector<Tensor> winograd = run(nn_internal::ConvAlgorithm::kWinograd);
    for (int i = 0; i < 3; ++i) {
      const std::vector<double> a = Values(direct[i]), b = Values(winograd[i]);
      double scale = 1e-30, err = 0;
      bool differs = false;
      for (size_t j = 0; j < a.size(); ++j) {
        scale = std::max(scale, std::abs(a[j]));
        err = std::max(err, std::abs(a[j] - b[j]));
        differs |= a[j] != b[j];
      }
      EXPECT_LT(err / scale, 1e-5) << "output " << i << ", " << threads << " thread(s)";
      // Another summation order: if no bit differed, Winograd did not run.
      EXPECT_TRUE(differs) << "output " << i << ": Winograd did not run";
    }
  }
}

TEST(WinogradConvTest, RunsOnlyFor5x5AtStride1) {
  Geometry g = MakeGeometry5x5(1, 8, 8, 16, true);
  const bool avx512 = nn_internal::WinogradRuns(g, 16);
  g.k_h = 3;
  EXPECT_FALSE(nn_internal::WinogradRuns(g, 16));
  g.k_h = 5;
  g.stride_w = 2;
  EXPECT_FALSE(nn_internal::WinogradRuns(g, 16));
  g.stride_w = 1;
  EXPECT_EQ(nn_internal::WinogradRuns(g, 16), avx512);
  EXPECT_FALSE(nn_internal::WinogradRuns(g, 0));
  nn_internal::ScopedConvAlgorithm direct(nn_internal::ConvAlgorithm::kDirect);
  EXPECT_FALSE(nn_internal::UseWinograd(g, 16, nn_internal::ConvPassKind::kForward));
}

// The measured rule: on AMD CPUs with AVX-512F the convnet's second layer takes Winograd in
// all three passes and its first layer (one input channel) only in the input gradient;
// elsewhere (Intel, AVX2 only) nothing does.
TEST(WinogradConvTest, RuleTakesTheConvnetsSecondLayerOnZen4) {
  using nn_internal::ConvPassKind;
  const Geometry conv1 = MakeGeometry5x5(64, 28, 28, 1, true);
  const Geometry conv2 = MakeGeometry5x5(64, 14, 14, 32, true);
  const Geometry tiny = MakeGeometry5x5(1, 14, 14, 32, true);  // 16 tiles
  bool amd = false;
#if defined(__x86_64__)
  __builtin_cpu_init();
  amd = __builtin_cpu_is("amd");
#endif
  const bool measured = amd && nn_internal::WinogradRuns(conv2, 64);
  for (ConvPassKind pass :
       {ConvPassKind::kForward, ConvPassKind::kInputGrad, ConvPassKind::kFilterGrad}) {
    EXPECT_EQ(nn_internal::UseWinograd(conv2, 64, pass), measured);
    EXPECT_EQ(nn_internal::UseWinograd(conv1, 32, pass),
              measured && pass == ConvPassKind::kInputGrad);
    EXPECT_FALSE(nn_internal::UseWinograd(tiny, 64, pass));
    EXPECT_FALSE(nn_internal::UseWinograd(conv2, 8, pass));  // too few output channels
  }
}

}  // namespace
}  // namespace loom
