// Float32 Conv2D on oneDNN (onednn_conv.h) against the float64 im2col path (itself checked
// against plain loops and the gradient checker in nn_conv_test.cc): forward, input gradient
// and filter gradient over strides, both paddings, odd sizes and channel counts on both
// sides of the filter-gradient rule, 1 and 2 threads.
#include "loom/ops/onednn_conv.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/autodiff/gradients.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_test_util.h"

namespace loom {
namespace {

using nn_test::ToFloat;
using nn_test::Values;

struct Case {
  int64_t n, h, w, c, kh, kw, o, sh, sw;
  const char* padding;
};

std::string Describe(const Case& c) {
  return StrCat("in [", c.n, ",", c.h, ",", c.w, ",", c.c, "] filter [", c.kh, ",", c.kw, ",", c.c,
                ",", c.o, "] strides ", c.sh, "x", c.sw, " ", c.padding);
}

// {y, dx, dw} of Conv2D for dy, in the dtype of the inputs.
std::vector<Tensor> ConvAndGrads(const Case& c, const Tensor& x, const Tensor& f, const Tensor& dy,
                                 int threads) {
  Graph graph;
  Scope s(graph);
  auto xo = Const(s, x), fo = Const(s, f);
  auto y = Conv2D(s, xo, fo, {c.sh, c.sw}, c.padding);
  auto grads = Gradients(s, {y}, {xo, fo}, {Const(s, dy)});
  Session session(graph, {.intra_op_threads = threads});
  return session.Run({}, {y, grads[0], grads[1]});
}

// Each float32 value within `tol` of the float64 one, relative to the largest magnitude
// of the float64 tensor (sums of products cancel, so single entries can be near zero).
void ExpectClose(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  std::vector<double> g = Values(got), w = Values(want);
  ASSERT_EQ(g.size(), w.size()) << what;
  double scale = 1e-30;
  for (double v : w) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol * scale) << what << " element " << i;
  }
}

TEST(OnednnConvTest, Float32MatchesTheFloat64PathForwardAndBackprops) {
  const std::vector<Case> cases = {
      {4, 28, 28, 1, 5, 5, 32, 1, 1, "SAME"},   // the convnet's first layer
      {4, 14, 14, 32, 5, 5, 64, 1, 1, "SAME"},  // and its second
      {2, 9, 7, 3, 3, 3, 5, 2, 2, "SAME"},      // odd padding total, RGB-like input
      {2, 9, 8, 8, 3, 2, 4, 2, 3, "VALID"},     // VALID leaving trailing input unread
      {3, 6, 5, 17, 4, 4, 9, 1, 1, "SAME"},     // even window, odd channel counts
      {1, 4, 4, 16, 5, 5, 8, 1, 1, "SAME"},     // window larger than the image
      {2, 10, 10, 8, 3, 3, 16, 3, 1, "VALID"},
  };
  uint64_t seed = 900;
  for (const Case& c : cases) {
    Tensor x = RandomDoubles({c.n, c.h, c.w, c.c}, ++seed);
    Tensor f = RandomDoubles({c.kh, c.kw, c.c, c.o}, ++seed);
    const Shape y_shape =
        nn_test::EvalWith({x, f}, [&](const Scope& s, const std::vector<Output>& in) {
          return Conv2D(s, in[0], in[1], {c.sh, c.sw}, c.padding);
        }).shape();
    Tensor dy = RandomDoubles(y_shape, ++seed);
    const std::vector<Tensor> want = ConvAndGrads(c, x, f, dy, 1);
    for (int threads : {1, 2}) {
      const std::vector<Tensor> got = ConvAndGrads(c, ToFloat(x), ToFloat(f), ToFloat(dy), threads);
      const std::string what = StrCat(Describe(c), ", ", threads, " thread(s): ");
      ExpectClose(got[0], want[0], 1e-5, what + "forward");
      ExpectClose(got[1], want[1], 1e-5, what + "input gradient");
      ExpectClose(got[2], want[2], 1e-5, what + "filter gradient");
    }
  }
}

// The convnet's layers take oneDNN's path (a silent fallback to im2col would pass the test
// above): each call accepts the geometry and matches a plain loop.
TEST(OnednnConvTest, AcceptsTheConvnetGeometries) {
  for (int64_t channels : {1, 32}) {
    // batch 2, 14x14 (28x28 for the first layer), 5x5 SAME, 8 filters
    const int64_t size = channels == 1 ? 28 : 14, out_c = 8;
    nn_internal::Geometry g{.batch = 2,
                            .in_h = size,
                            .in_w = size,
                            .channels = channels,
                            .k_h = 5,
                            .k_w = 5,
                            .stride_h = 1,
                            .stride_w = 1,
                            .out_h = size,
                            .out_w = size,
                            .pad_top = 2,
                            .pad_left = 2};
    Tensor x = ToFloat(RandomDoubles({g.batch, size, size, channels}, 7));
    Tensor w = ToFloat(RandomDoubles({5, 5, channels, out_c}, 8));
    Tensor dy = ToFloat(RandomDoubles({g.batch, size, size, out_c}, 9));
    Tensor y(kFloat32, dy.shape()), dx(kFloat32, x.shape()), dw(kFloat32, w.shape());
    ASSERT_TRUE(
        nn_internal::OnednnConv2D(g, out_c, x.data<float>(), w.data<float>(), y.data<float>(), 1));
    ASSERT_TRUE(nn_internal::OnednnConv2DBackpropInput(g, out_c, w.data<float>(), dy.data<float>(),
                                                       dx.data<float>(), 1));
    ASSERT_TRUE(nn_internal::OnednnConv2DBackpropFilter(g, out_c, x.data<float>(), dy.data<float>(),
                                                        dw.data<float>(), 1));
    EXPECT_TRUE(nn_internal::OnednnFilterGradPays(g));
    // Spot-check y, dx and dw against the sums that define them.
    auto X = [&](int64_t n, int64_t h, int64_t w_, int64_t ch) -> double {
      if (h < 0 || h >= size || w_ < 0 || w_ >= size) return 0;
      return x.data<float>()[((n * size + h) * size + w_) * channels + ch];
    };
    auto W = [&](int64_t i, int64_t j, int64_t ch, int64_t o) -> double {
      return w.data<float>()[((i * 5 + j) * channels + ch) * out_c + o];
    };
    auto DY = [&](int64_t n, int64_t h, int64_t w_, int64_t o) -> double {
      if (h < 0 || h >= size || w_ < 0 || w_ >= size) return 0;
      return dy.data<float>()[((n * size + h) * size + w_) * out_c + o];
    };
    for (int64_t probe = 0; probe < 40; ++probe) {
      const int64_t n = probe % 2, h = (probe * 7) % size, wi = (probe * 11) % size;
      const int64_t o = probe % out_c, ch = probe % channels;
      double y_ref = 0, dx_ref = 0;
      for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          for (int64_t cc = 0; cc < channels; ++cc)
            y_ref += X(n, h - 2 + i, wi - 2 + j, cc) * W(i, j, cc, o);
          for (int64_t oo = 0; oo < out_c; ++oo)
            dx_ref += DY(n, h + 2 - i, wi + 2 - j, oo) * W(i, j, ch, oo);
        }
      const int64_t i = probe % 5, j = (probe / 5) % 5;
      double dw_ref = 0;
      for (int64_t nn = 0; nn < g.batch; ++nn)
        for (int64_t hh = 0; hh < size; ++hh)
          for (int64_t ww = 0; ww < size; ++ww)
            dw_ref += X(nn, hh - 2 + i, ww - 2 + j, ch) * DY(nn, hh, ww, o);
      EXPECT_NEAR(y.data<float>()[((n * size + h) * size + wi) * out_c + o], y_ref,
                  1e-4 * (1 + std::abs(y_ref)));
      EXPECT_NEAR(dx.data<float>()[((n * size + h) * size + wi) * channels + ch], dx_ref,
                  1e-4 * (1 + std::abs(dx_ref)));
      EXPECT_NEAR(dw.data<float>()[((i * 5 + j) * channels + ch) * out_c + o], dw_ref,
                  1e-4 * (1 + std::abs(dw_ref)));
    }
  }
}

}  // namespace
}  // namespace loom
