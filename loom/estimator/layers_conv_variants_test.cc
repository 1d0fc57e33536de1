// SeparableConv2D, DepthwiseConv2D and Conv2DTranspose layers: TF 1.15's variable names and
// shapes, values against float64 references written out from TF's definitions, Keras'
// output-size rule of the transposed convolution, gradients, and the errors.
#include "loom/estimator/layers_conv_variants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "loom/estimator/all_ops.h"
#include "loom/ops/array.h"
#include "loom/ops/nn.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

namespace L = loom::layers;

// TF's SAME / VALID output size and leading padding for a window spanning `span` inputs.
int64_t OutSize(int64_t in, int64_t span, int64_t stride, bool same, int64_t* pad) {
  if (!same) {
    *pad = 0;
    return (in - span) / stride + 1;
  }
  const int64_t out = (in + stride - 1) / stride;
  *pad = std::max<int64_t>((out - 1) * stride + span - in, 0) / 2;
  return out;
}

struct Geom {
  int64_t kh, kw, sh, sw, dh, dw;
  bool same;
};

// y[b, i, j, c * M + m] = sum_{di, dj} x[b, i*sh + di*dh - pt, j*sw + dj*dw - pl, c] *
// w[di, dj, c, m], in float64.
std::vector<double> DepthwiseRef(const Tensor& x, const Tensor& w, const Geom& g, int64_t* oh,
                                 int64_t* ow) {
  const int64_t n = x.dim(0), h = x.dim(1), wd = x.dim(2), c = x.dim(3), m = w.dim(3);
  int64_t pt = 0, pl = 0;
  *oh = OutSize(h, (g.kh - 1) * g.dh + 1, g.sh, g.same, &pt);
  *ow = OutSize(wd, (g.kw - 1) * g.dw + 1, g.sw, g.same, &pl);
  std::vector<double> y(n * *oh * *ow * c * m, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < *oh; ++i)
      for (int64_t j = 0; j < *ow; ++j)
        for (int64_t di = 0; di < g.kh; ++di)
          for (int64_t dj = 0; dj < g.kw; ++dj) {
            const int64_t r = i * g.sh + di * g.dh - pt, s = j * g.sw + dj * g.dw - pl;
            if (r < 0 || r >= h || s < 0 || s >= wd) continue;
            for (int64_t k = 0; k < c; ++k)
              for (int64_t q = 0; q < m; ++q)
                y[((b * *oh + i) * *ow + j) * c * m + k * m + q] +=
                    x.data<double>()[((b * h + r) * wd + s) * c + k] *
                    w.data<double>()[((di * g.kw + dj) * c + k) * m + q];
          }
  return y;
}

// The transposed convolution of v [n, oh, ow, C] by w [kh, kw, F, C] to [n, H, W, F]: each
// v element spreads v * w over the window the Conv2D of [n, H, W, F] would read.
std::vector<double> TransposeRef(const Tensor& v, const Tensor& w, const Geom& g, int64_t out_h,
                                 int64_t out_w) {
  const int64_t n = v.dim(0), oh = v.dim(1), ow = v.dim(2), c = v.dim(3), f = w.dim(2);
  int64_t pt = 0, pl = 0;
  EXPECT_EQ(OutSize(out_h, (g.kh - 1) * g.dh + 1, g.sh, g.same, &pt), oh);
  EXPECT_EQ(OutSize(out_w, (g.kw - 1) * g.dw + 1, g.sw, g.same, &pl), ow);
  std::vector<double> y(n * out_h * out_w * f, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t di = 0; di < g.kh; ++di)
          for (int64_t dj = 0; dj < g.kw; ++dj) {
            const int64_t r = i * g.sh + di * g.dh - pt, s = j * g.sw + dj * g.dw - pl;
            if (r < 0 || r >= out_h || s < 0 || s >= out_w) continue;
            for (int64_t o = 0; o < f; ++o)
              for (int64_t q = 0; q < c; ++q)
                y[((b * out_h + r) * out_w + s) * f + o] +=
                    v.data<double>()[((b * oh + i) * ow + j) * c + q] *
                    w.data<double>()[((di * g.kw + dj) * f + o) * c + q];
          }
  return y;
}

void ExpectValues(const Tensor& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<double>()[i], want[i], tol) << what << " entry " << i;
}

Shape VariableShape(const Graph& graph, const std::string& name) {
  const Node* node = graph.FindNode(name);
  EXPECT_NE(node, nullptr) << name;
  return node == nullptr ? Shape::Unknown() : node->output_shape(0);
}

TEST(ConvVariantLayersTest, VariablesAreNamedAndShapedAsTf) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 8, 8, 3});
  Output sep = L::SeparableConv2D(
      s, x, {.filters = 5, .kernel_size = 3, .padding = "same", .depth_multiplier = 2});
  Output sep1 = L::SeparableConv2D(s, x, {.filters = 4, .kernel_size = {3, 2}, .use_bias = false});
  Output dw = L::DepthwiseConv2D(s, x, {.kernel_size = 3, .strides = 2, .depth_multiplier = 2});
  Output up =
      L::Conv2DTranspose(s, x, {.filters = 6, .kernel_size = 3, .strides = 2, .padding = "same"});
  EXPECT_EQ(VariableShape(graph, "separable_conv2d/depthwise_kernel"), Shape({3, 3, 3, 2}));
  EXPECT_EQ(VariableShape(graph, "separable_conv2d/pointwise_kernel"), Shape({1, 1, 6, 5}));
  EXPECT_EQ(VariableShape(graph, "separable_conv2d/bias"), Shape({5}));
  EXPECT_EQ(VariableShape(graph, "separable_conv2d_1/depthwise_kernel"), Shape({3, 2, 3, 1}));
  EXPECT_EQ(graph.FindNode("separable_conv2d_1/bias"), nullptr);
  EXPECT_EQ(VariableShape(graph, "depthwise_conv2d/depthwise_kernel"), Shape({3, 3, 3, 2}));
  EXPECT_EQ(VariableShape(graph, "depthwise_conv2d/bias"), Shape({6}));
  EXPECT_EQ(VariableShape(graph, "conv2d_transpose/kernel"), Shape({3, 3, 6, 3}));
  EXPECT_EQ(VariableShape(graph, "conv2d_transpose/bias"), Shape({6}));
  EXPECT_EQ(sep.shape(), Shape({-1, 8, 8, 5}));
  EXPECT_EQ(sep1.shape(), Shape({-1, 6, 7, 4}));
  EXPECT_EQ(dw.shape(), Shape({-1, 3, 3, 6}));
  EXPECT_EQ(up.shape(), Shape({-1, 16, 16, 6}));  // the unknown batch comes from ShapeOf
}

// Every layer on float64 inputs against its reference, with written kernels and biases, over
// strides, paddings and dilations.
TEST(ConvVariantLayersTest, ValuesMatchFloat64References) {
  const std::vector<Geom> geoms = {
      {3, 3, 1, 1, 1, 1, true}, {3, 2, 2, 2, 1, 1, true},  {2, 3, 1, 2, 1, 1, false},
      {3, 3, 1, 1, 2, 2, true}, {2, 2, 2, 1, 2, 3, false},
  };
  uint64_t seed = 40;
  for (const Geom& g : geoms) {
    const std::string what = StrCat("kernel ", g.kh, "x", g.kw, " strides ", g.sh, "x", g.sw,
                                    " dilation ", g.dh, "x", g.dw, g.same ? " same" : " valid");
    Graph graph;
    Scope s(graph);
    const Tensor xv = RandomDoubles({2, 9, 8, 3}, ++seed);
    Output x = Placeholder(s, kFloat64, xv.shape());
    const std::string padding = g.same ? "same" : "valid";
    Output sep = L::SeparableConv2D(s, x,
                                    {.filters = 4,
                                     .kernel_size = {g.kh, g.kw},
                                     .strides = {g.sh, g.sw},
                                     .padding = padding,
                                     .dilation_rate = {g.dh, g.dw},
                                     .depth_multiplier = 2,
                                     .activation = loom::Relu});
    Output dw = L::DepthwiseConv2D(s, x,
                                   {.kernel_size = {g.kh, g.kw},
                                    .strides = {g.sh, g.sw},
                                    .padding = padding,
                                    .depth_multiplier = 2,
                                    .dilation_rate = {g.dh, g.dw}});
    Output up = L::Conv2DTranspose(s, x,
                                   {.filters = 2,
                                    .kernel_size = {g.kh, g.kw},
                                    .strides = {g.sh, g.sw},
                                    .padding = padding,
                                    .dilation_rate = {g.dh, g.dw}});
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    const Tensor sdw = RandomDoubles({g.kh, g.kw, 3, 2}, ++seed);
    const Tensor spw = RandomDoubles({1, 1, 6, 4}, ++seed);
    const Tensor sb = RandomDoubles({4}, ++seed);
    const Tensor dk = RandomDoubles({g.kh, g.kw, 3, 2}, ++seed);
    const Tensor db = RandomDoubles({6}, ++seed);
    const Tensor tk = RandomDoubles({g.kh, g.kw, 2, 3}, ++seed);
    const Tensor tb = RandomDoubles({2}, ++seed);
    session.WriteVariable("separable_conv2d/depthwise_kernel", sdw);
    session.WriteVariable("separable_conv2d/pointwise_kernel", spw);
    session.WriteVariable("separable_conv2d/bias", sb);
    session.WriteVariable("depthwise_conv2d/depthwise_kernel", dk);
    session.WriteVariable("depthwise_conv2d/bias", db);
    session.WriteVariable("conv2d_transpose/kernel", tk);
    session.WriteVariable("conv2d_transpose/bias", tb);
    const std::vector<Tensor> got = session.Run({{x, xv}}, {sep, dw, up});

    int64_t oh = 0, ow = 0;
    std::vector<double> mid = DepthwiseRef(xv, sdw, g, &oh, &ow);
    std::vector<double> want_sep(2 * oh * ow * 4, 0.0);
    for (int64_t p = 0; p < 2 * oh * ow; ++p)
      for (int64_t o = 0; o < 4; ++o) {
        double sum = sb.data<double>()[o];
        for (int64_t q = 0; q < 6; ++q) sum += mid[p * 6 + q] * spw.data<double>()[q * 4 + o];
        want_sep[p * 4 + o] = std::max(sum, 0.0);
      }
    EXPECT_EQ(got[0].shape(), Shape({2, oh, ow, 4})) << what;
    ExpectValues(got[0], want_sep, 1e-12, "SeparableConv2D " + what);

    std::vector<double> want_dw = DepthwiseRef(xv, dk, g, &oh, &ow);
    for (size_t i = 0; i < want_dw.size(); ++i) want_dw[i] += db.data<double>()[i % 6];
    ExpectValues(got[1], want_dw, 1e-12, "DepthwiseConv2D " + what);

    // Keras' deconv_output_length without output_padding.
    auto deconv = [](int64_t in, int64_t k, int64_t st, int64_t d, bool same) {
      const int64_t span = (k - 1) * d + 1;
      return same ? in * st : in * st + std::max<int64_t>(span - st, 0);
    };
    const int64_t uh = deconv(9, g.kh, g.sh, g.dh, g.same),
                  uw = deconv(8, g.kw, g.sw, g.dw, g.same);
    EXPECT_EQ(got[2].shape(), Shape({2, uh, uw, 2})) << what;
    std::vector<double> want_up = TransposeRef(xv, tk, g, uh, uw);
    for (size_t i = 0; i < want_up.size(); ++i) want_up[i] += tb.data<double>()[i % 2];
    ExpectValues(got[2], want_up, 1e-12, "Conv2DTranspose " + what);
  }
}

// Keras' output size with output_padding, and with spatial dims known only at run time.
TEST(ConvVariantLayersTest, TransposeOutputSizeFollowsKeras) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {2, 5, 4, 3});
  // (5 - 1) * 3 + 3 - 2 * 1 + 2 = 15 (same: pad = 3 / 2); (4 - 1) * 2 + 3 - 2 + 1 = 8.
  Output same = L::Conv2DTranspose(s, x,
                                   {.filters = 2,
                                    .kernel_size = 3,
                                    .strides = {3, 2},
                                    .padding = "same",
                                    .output_padding = L::Size2D(2, 1)});
  EXPECT_EQ(same.shape(), Shape({2, 15, 8, 2}));
  // valid, dilated: span 5; (5 - 1) * 2 + 5 + 1 = 14, (4 - 1) * 2 + 5 + 0 = 11.
  Output valid = L::Conv2DTranspose(s, x,
                                    {.filters = 2,
                                     .kernel_size = 3,
                                     .strides = 2,
                                     .output_padding = L::Size2D(1, 0),
                                     .dilation_rate = 2});
  EXPECT_EQ(valid.shape(), Shape({2, 14, 11, 2}));
  Output dynamic = Placeholder(s, kFloat32, {-1, -1, -1, 3});
  Output up = L::Conv2DTranspose(s, dynamic, {.filters = 2, .kernel_size = 4, .strides = 2});
  EXPECT_EQ(up.shape(), Shape({-1, -1, -1, 2}));
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  const std::vector<Tensor> out = session.Run({{x, Tensor::Zeros(kFloat32, {2, 5, 4, 3})},
                                               {dynamic, Tensor::Zeros(kFloat32, {3, 6, 5, 3})}},
                                              {same, valid, up});
  EXPECT_EQ(out[0].shape(), Shape({2, 15, 8, 2}));
  EXPECT_EQ(out[1].shape(), Shape({2, 14, 11, 2}));
  EXPECT_EQ(out[2].shape(), Shape({3, 14, 12, 2}));  // 6 * 2 + max(4 - 2, 0), 5 * 2 + 2
}

// The layers' gradients in float64 through the numeric checker, in the inputs and in every
// variable (fed through the variable getter as placeholders).
TEST(ConvVariantLayersTest, NumericGradients) {
  auto fed = [](const std::vector<Output>& xs) {
    return [xs](const L::VariableRequest& r) -> Output {
      for (const Output& x : xs) {
        if (x.node->name() == r.name) return x;
      }
      ADD_FAILURE() << "no placeholder for " << r.name;
      return Output();
    };
  };
  // The checker's placeholders pass through an Identity named as the variable it stands
  // for, which the getter returns.
  const std::vector<std::string> sep_names = {"depthwise_kernel", "pointwise_kernel", "bias"};
  EXPECT_LT(MaxGradientError(
                [&](const Scope& s, const std::vector<Output>& xs) {
                  std::vector<Output> vars;
                  for (size_t i = 1; i < xs.size(); ++i)
                    vars.push_back(Identity(s.WithOpName(sep_names[i - 1]), xs[i]));
                  return L::SeparableConv2D(s, xs[0],
                                            {.filters = 2,
                                             .kernel_size = 2,
                                             .padding = "same",
                                             .dilation_rate = 2,
                                             .depth_multiplier = 2,
                                             .name = "",
                                             .variable_getter = fed(vars)});
                },
                {RandomDoubles({1, 5, 4, 2}, 3), RandomDoubles({2, 2, 2, 2}, 4),
                 RandomDoubles({1, 1, 4, 2}, 5), RandomDoubles({2}, 6)}),
            1e-7);
  const std::vector<std::string> up_names = {"kernel", "bias"};
  EXPECT_LT(
      MaxGradientError(
          [&](const Scope& s, const std::vector<Output>& xs) {
            std::vector<Output> vars;
            for (size_t i = 1; i < xs.size(); ++i)
              vars.push_back(Identity(s.WithOpName(up_names[i - 1]), xs[i]));
            return L::Conv2DTranspose(s, xs[0],
                                      {.filters = 2,
                                       .kernel_size = 3,
                                       .strides = 2,
                                       .padding = "same",
                                       .output_padding = L::Size2D(1, 0),
                                       .name = "",
                                       .variable_getter = fed(vars)});
          },
          {RandomDoubles({1, 3, 2, 3}, 7), RandomDoubles({3, 3, 2, 3}, 8), RandomDoubles({2}, 9)}),
      1e-7);
}

// layers::Conv2D's dilation_rate (TF's atrous lowering through SpaceToBatchND) against the
// definition: y[b, i, j, o] = sum x[b, i + di * rh - pt, j + dj * rw - pl, c] k[di, dj, c, o].
TEST(ConvVariantLayersTest, Conv2DDilationRateMatchesTheDefinition) {
  struct Case {
    int64_t h, w, kh, kw, rh, rw;
    bool same;
  };
  uint64_t seed = 70;
  for (const Case& t : std::vector<Case>{
           {7, 6, 3, 3, 2, 2, true}, {9, 8, 3, 2, 3, 2, false}, {8, 9, 2, 3, 2, 4, true}}) {
    Graph graph;
    Scope s(graph);
    const Tensor xv = RandomDoubles({2, t.h, t.w, 3}, ++seed);
    const Tensor kv = RandomDoubles({t.kh, t.kw, 3, 2}, ++seed);
    Output x = Placeholder(s, kFloat64, xv.shape());
    Output y = L::Conv2D(s, x,
                         {.filters = 2,
                          .kernel_size = {t.kh, t.kw},
                          .padding = t.same ? "same" : "valid",
                          .dilation_rate = {t.rh, t.rw},
                          .use_bias = false});
    Session session(graph);
    session.RunTarget(GlobalVariablesInitializer(s));
    session.WriteVariable("conv2d/kernel", kv);
    const Tensor got = session.Run({{x, xv}}, {y})[0];
    int64_t pt = 0, pl = 0;
    const int64_t oh = OutSize(t.h, (t.kh - 1) * t.rh + 1, 1, t.same, &pt);
    const int64_t ow = OutSize(t.w, (t.kw - 1) * t.rw + 1, 1, t.same, &pl);
    ASSERT_EQ(got.shape(), Shape({2, oh, ow, 2}));
    EXPECT_EQ(y.shape(), got.shape());
    std::vector<double> want(2 * oh * ow * 2, 0.0);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j)
          for (int64_t di = 0; di < t.kh; ++di)
            for (int64_t dj = 0; dj < t.kw; ++dj) {
              const int64_t r = i + di * t.rh - pt, c = j + dj * t.rw - pl;
              if (r < 0 || r >= t.h || c < 0 || c >= t.w) continue;
              for (int64_t q = 0; q < 3; ++q)
                for (int64_t o = 0; o < 2; ++o)
                  want[((b * oh + i) * ow + j) * 2 + o] +=
                      xv.data<double>()[((b * t.h + r) * t.w + c) * 3 + q] *
                      kv.data<double>()[((di * t.kw + dj) * 3 + q) * 2 + o];
            }
    ExpectValues(got, want, 1e-12,
                 StrCat("dilated Conv2D ", t.h, "x", t.w, " rate ", t.rh, "x", t.rw,
                        t.same ? " same" : " valid"));
  }
  Graph graph;
  Scope s(graph);
  std::string m = testing::ErrorOf(
      [&] {
        L::Conv2D(s, Placeholder(s, kFloat32, {1, 8, 8, 1}),
                  {.filters = 1, .kernel_size = 3, .strides = 2, .dilation_rate = 2});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("strides > 1 are not supported together with a dilation_rate > 1"),
            std::string::npos)
      << m;
  m = testing::ErrorOf(
      [&] {
        L::Conv2D(s, Placeholder(s, kFloat32, {1, -1, 8, 1}),
                  {.filters = 1, .kernel_size = 3, .dilation_rate = 2});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("needs the inputs' height and width known"), std::string::npos) << m;
}

TEST(ConvVariantLayersTest, BadArgumentsNameTheLayer) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {1, 6, 6, 2});
  auto expect = [](const std::function<void()>& build, const std::string& part) {
    const std::string m = testing::ErrorOf(build, ErrorCode::kInvalidArgument);
    EXPECT_NE(m.find(part), std::string::npos) << m;
  };
  expect(
      [&] {
        L::SeparableConv2D(s, Placeholder(s, kFloat32, {1, 6, 6}),
                           {.filters = 2, .kernel_size = 3});
      },
      "inputs need rank >= 4");
  expect([&] { L::SeparableConv2D(s, x, {.filters = 2, .kernel_size = 3, .depth_multiplier = 0}); },
         "depth_multiplier must be positive, got 0");
  expect(
      [&] {
        L::DepthwiseConv2D(s, Placeholder(s, kFloat32, {1, 6, 6, -1}), {.kernel_size = 3});
      },
      "the channel dim of the inputs");
  expect([&] { L::DepthwiseConv2D(s, x, {.kernel_size = 3, .padding = "full"}); },
         "padding must be \"same\" or \"valid\"");
  expect(
      [&] {
        L::Conv2DTranspose(
            s, x,
            {.filters = 2, .kernel_size = 3, .strides = 2, .output_padding = L::Size2D(2, 1)});
      },
      "output_padding 2x1 must be non-negative and less than the strides 2x2");
  expect([&] { L::Conv2DTranspose(s, x, {.filters = 0, .kernel_size = 3}); },
         "layer 'conv2d_transpose");
  expect(
      [&] {
        L::DepthwiseConv2D(s, x, {.kernel_size = 3, .dilation_rate = {0, 1}});
      },
      "dilation_rate must be positive");
}

}  // namespace
}  // namespace loom
