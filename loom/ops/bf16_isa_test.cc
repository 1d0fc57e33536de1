// The bf16 policy's per-hardware choices (bf16.h's ProductRunsInFloat32, bf16_conv.h's
// ConvOperandsFor): each rule for every kind of hardware, the graph following this CPU's
// rule, and both bf16 convolution layouts (oneDNN's blocked ones and NHWC activations)
// meeting the bf16 error bound against float64 references on this CPU's bf16 hardware,
// whichever of them the rule picks here. (bf16_test.cc has the policy's other tests.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "loom/base/strcat.h"
#include "loom/graph/scope.h"
#include "loom/ops/bf16.h"
#include "loom/ops/bf16_conv.h"
#include "loom/ops/matmul.h"
#include "loom/ops/onednn_internal.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

using bf16::Hardware;
using onednn_internal::ConvOperands;
using onednn_internal::ConvPass;

constexpr double kU32 = 1.0 / (1 << 24);  // float32's unit roundoff

std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

Tensor RandomTensor(const Shape& shape, uint32_t seed) {
  return Tensor::FromVector<float>(RandomValues(shape.num_elements(), seed), shape);
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

// ---- MatMul ----

TEST(Bf16IsaTest, NarrowProductsRunInFloat32OnlyOnAvx512Bf16) {
  struct Case {
    bool transpose_b;
    int64_t m, n, k;
    bool on_avx512_bf16;
  };
  for (const Case& c : {
           Case{false, 256, 10, 512, true},      // the MLP's logits
           Case{false, 512, 10, 256, true},      // their weight gradient (x^T dy: b = dy)
           Case{false, 64, 10, 1024, true},      // the convnet's logits
           Case{false, 256, 16, 512, true},      // 16 columns: still narrow
           Case{true, 256, 10, 512, false},      // b transposed: bf16 was faster
           Case{false, 256, 17, 512, false},     // wide
           Case{false, 256, 512, 10, false},     // the logits' input gradient: wide
           Case{false, 1 << 14, 16, 17, false},  // over 2^22 multiply-adds
           Case{false, 16, 16, 256, true},       // 2^16: the rule's lower end
           Case{false, 8, 12, 16, false},        // under 2^16: not measured, stays bf16
           Case{false, 256, 0, 512, false},
       }) {
    const std::string what = StrCat("tb=", c.transpose_b, " [", c.m, " x ", c.n, " x ", c.k, "]");
    EXPECT_EQ(bf16::ProductRunsInFloat32(Hardware::kAvx512Bf16, c.transpose_b, c.m, c.n, c.k),
              c.on_avx512_bf16)
        << what;
    // AMX's choices were measured without the rule; without hardware nothing is faster.
    EXPECT_FALSE(bf16::ProductRunsInFloat32(Hardware::kAmx, c.transpose_b, c.m, c.n, c.k)) << what;
    EXPECT_FALSE(bf16::ProductRunsInFloat32(Hardware::kNone, c.transpose_b, c.m, c.n, c.k)) << what;
  }
}

// Under every bf16 policy a narrow product computes float32's bits exactly where this
// CPU's rule says so, and rounds everywhere else.
TEST(Bf16IsaTest, MatMulFollowsThisCpusRule) {
  std::vector<Precision> policies = {Precision::kBf16Emulated};
  if (bf16::DetectHardware() != Hardware::kNone) policies.push_back(Precision::kBf16Strict);
  const int64_t m = 64, k = 300;
  struct Case {
    int64_t n;
    bool transpose_b;
  };
  for (Precision policy : policies) {
    for (const Case& c : {Case{10, false}, Case{10, true}, Case{40, false}}) {
      Graph graph;
      Scope s(graph);
      auto a = Const(s, RandomTensor({m, k}, 1));
      auto b = Const(s, RandomTensor(c.transpose_b ? Shape{c.n, k} : Shape{k, c.n}, 2));
      auto got = MatMul(s, a, b, {.transpose_b = c.transpose_b, .precision = policy});
      auto f32 = MatMul(s, a, b, {.transpose_b = c.transpose_b});
      Session session(graph);
      const auto out = session.Run({}, {got, f32});
      const bool want_f32 =
          bf16::ProductRunsInFloat32(bf16::DetectHardware(), c.transpose_b, m, c.n, k);
      const std::string what = StrCat(PrecisionName(policy), " n=", c.n, " tb=", c.transpose_b,
                                      " on ", bf16::HardwareName(bf16::DetectHardware()));
      if (want_f32) {
        EXPECT_EQ(Values(out[0]), Values(out[1])) << what << ": should run in float32";
      } else {
        EXPECT_NE(Values(out[0]), Values(out[1])) << what << ": should round to bf16";
      }
    }
  }
}

// ---- Conv2D ----

TEST(Bf16IsaTest, ConvLayoutsPerHardware) {
  EXPECT_EQ(bf16::ConvOperandsFor(Hardware::kAvx512Bf16, ConvPass::kForward),
            ConvOperands::kBf16Nhwc);
  EXPECT_EQ(bf16::ConvOperandsFor(Hardware::kAvx512Bf16, ConvPass::kBackwardData),
            ConvOperands::kBf16Nhwc);
  EXPECT_EQ(bf16::ConvOperandsFor(Hardware::kAvx512Bf16, ConvPass::kBackwardWeights),
            ConvOperands::kBf16);
  for (Hardware hw : {Hardware::kAmx, Hardware::kNone}) {
    for (ConvPass pass :
         {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
      EXPECT_EQ(bf16::ConvOperandsFor(hw, pass), ConvOperands::kBf16) << bf16::HardwareName(hw);
    }
  }
}

// float64 references of a convolution's three passes over NHWC x, HWIO w, NHWC dy (each
// input mapped through `f` first: the bf16 rounding, or the absolute value for magnitudes).
struct ConvReference {
  std::vector<double> y, dx, dw;
};

template <typename F>
ConvReference Reference(const nn_internal::Geometry& g, int64_t out_c, const std::vector<float>& x,
                        const std::vector<float>& w, const std::vector<float>& dy, F f) {
  ConvReference r{std::vector<double>(dy.size()), std::vector<double>(x.size()),
                  std::vector<double>(w.size())};
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        for (int64_t i = 0; i < g.k_h; ++i) {
          const int64_t h = oh * g.stride_h - g.pad_top + i;
          if (h < 0 || h >= g.in_h) continue;
          for (int64_t j = 0; j < g.k_w; ++j) {
            const int64_t wi = ow * g.stride_w - g.pad_left + j;
            if (wi < 0 || wi >= g.in_w) continue;
            for (int64_t c = 0; c < g.channels; ++c) {
              const int64_t xi = ((n * g.in_h + h) * g.in_w + wi) * g.channels + c;
              for (int64_t o = 0; o < out_c; ++o) {
                const int64_t yi = ((n * g.out_h + oh) * g.out_w + ow) * out_c + o;
                const int64_t fi = ((i * g.k_w + j) * g.channels + c) * out_c + o;
                r.y[yi] += f(x[xi]) * f(w[fi]);
                r.dx[xi] += f(dy[yi]) * f(w[fi]);
                r.dw[fi] += f(x[xi]) * f(dy[yi]);
              }
            }
          }
        }
      }
    }
  }
  return r;
}

nn_internal::Geometry MakeGeometry(int64_t batch, int64_t in_h, int64_t in_w, int64_t channels,
                                   int64_t k_h, int64_t k_w, int64_t stride, bool same) {
  nn_internal::Geometry g{};
  g.batch = batch;
  g.in_h = in_h;
  g.in_w = in_w;
  g.channels = channels;
  g.k_h = k_h;
  g.k_w = k_w;
  g.stride_h = g.stride_w = stride;
  if (same) {
    g.out_h = (in_h + stride - 1) / stride;
    g.out_w = (in_w + stride - 1) / stride;
    g.pad_top = std::max<int64_t>(0, ((g.out_h - 1) * stride + k_h - in_h) / 2);
    g.pad_left = std::max<int64_t>(0, ((g.out_w - 1) * stride + k_w - in_w) / 2);
  } else {
    g.out_h = (in_h - k_h) / stride + 1;
    g.out_w = (in_w - k_w) / stride + 1;
  }
  return g;
}

// Both bf16 layouts, every pass, on this CPU's bf16 hardware: the results against the
// float64 convolution of the bf16-rounded inputs within float32 accumulation's bound
// (k u32 sum|a b|, k the reduction's length), and, for the layouts this CPU's rule picks,
// an optimized kernel, not oneDNN's reference one (bf16_test.cc's
// HardwarePathRunsTheCpusBf16Kernels names the ISA's). The rule picks
// one layout per pass; both are checked so that a CPU of either kind tests the other's.
TEST(Bf16IsaTest, BothBf16ConvLayoutsMeetTheBoundsOnThisCpu) {
  if (bf16::DetectHardware() == Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has no bf16 hardware";
  }
  struct Case {
    const char* name;
    nn_internal::Geometry g;
    int64_t out_c;
  };
  for (const Case& c :
       {Case{"the convnet's first layer", MakeGeometry(3, 28, 28, 1, 5, 5, 1, true), 8},
        Case{"its second", MakeGeometry(2, 14, 14, 32, 5, 5, 1, true), 16},
        Case{"3x3 over 4, stride 2, VALID", MakeGeometry(2, 9, 9, 4, 3, 3, 2, false), 8}}) {
    const auto& g = c.g;
    const std::vector<float> x = RandomValues(g.batch * g.in_h * g.in_w * g.channels, 3);
    const std::vector<float> w = RandomValues(g.k_h * g.k_w * g.channels * c.out_c, 4);
    const std::vector<float> dy = RandomValues(g.batch * g.out_h * g.out_w * c.out_c, 5);
    const std::vector<float> bias = RandomValues(c.out_c, 6);
    const ConvReference want =
        Reference(g, c.out_c, x, w, dy, [](float v) { return double{bf16::RoundToBf16(v)}; });
    const ConvReference mag = Reference(
        g, c.out_c, x, w, dy, [](float v) { return std::abs(double{bf16::RoundToBf16(v)}); });
    for (ConvOperands operands : {ConvOperands::kBf16, ConvOperands::kBf16Nhwc}) {
      const std::string what =
          StrCat(c.name, operands == ConvOperands::kBf16 ? " (blocked)" : " (NHWC)");
      for (ConvPass pass :
           {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
        // The layouts this CPU's rule picks must get an optimized kernel; the other kind's
        // (checked for their numbers) may not have one here.
        if (bf16::ConvOperandsFor(bf16::DetectHardware(), pass) != operands) continue;
        const std::string impl = onednn_internal::ConvImpl(operands, pass, g, c.out_c, 1);
        EXPECT_FALSE(impl.empty() || impl.rfind("ref", 0) == 0)
            << what << " pass " << static_cast<int>(pass) << " runs '" << impl << "'";
      }
      std::vector<float> y(dy.size()), y_epilogue(dy.size()), dx(x.size()), dw(w.size());
      ASSERT_TRUE(onednn_internal::Conv2D(operands, g, c.out_c, x.data(), w.data(), y.data(), 1))
          << what;
      ASSERT_TRUE(onednn_internal::Conv2D(operands, g, c.out_c, x.data(), w.data(),
                                          y_epilogue.data(), 2, {bias.data(), true}))
          << what;
      ASSERT_TRUE(onednn_internal::Conv2DBackpropInput(operands, g, c.out_c, w.data(), dy.data(),
                                                       dx.data(), 1))
          << what;
      ASSERT_TRUE(onednn_internal::Conv2DBackpropFilter(operands, g, c.out_c, x.data(), dy.data(),
                                                        dw.data(), 2))
          << what;
      const double k_y = double(g.k_h * g.k_w * g.channels), k_dx = double(g.k_h * g.k_w * c.out_c),
                   k_dw = double(g.batch * g.out_h * g.out_w);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_LE(std::abs(y[i] - want.y[i]), k_y * kU32 * mag.y[i] + 1e-30) << what << " y " << i;
        // the epilogue in float32 after the float32 accumulation: max(y + bias, 0)
        const double with_bias = want.y[i] + bias[i % c.out_c];
        ASSERT_LE(std::abs(y_epilogue[i] - std::max(with_bias, 0.0)),
                  (k_y + 1) * kU32 * (mag.y[i] + std::abs(bias[i % c.out_c])) + 1e-30)
            << what << " y with bias and ReLU " << i;
      }
      for (size_t i = 0; i < dx.size(); ++i) {
        ASSERT_LE(std::abs(dx[i] - want.dx[i]), k_dx * kU32 * mag.dx[i] + 1e-30)
            << what << " dx " << i;
      }
      for (size_t i = 0; i < dw.size(); ++i) {
        ASSERT_LE(std::abs(dw[i] - want.dw[i]), k_dw * kU32 * mag.dw[i] + 1e-30)
            << what << " dw " << i;
      }
    }
  }
}

}  // namespace
}  // namespace loom
