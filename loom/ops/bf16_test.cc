// The bf16 precision policy (bf16.h, loom/graph/precision.h): rounding; MatMul, BatchMatMul
// and Conv2D with both backprops in emulated bf16 against float64 references of the
// bf16-rounded inputs (tight) and of the float32 inputs (the bound that bf16's 8-bit
// significand gives); the policy's attribute on forward and gradient nodes and
// the GraphDef round trip; the fallback and strict behaviour; and the hardware
// kernels where the CPU has them.
#include "loom/ops/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/graph/graph_def.h"
#include "loom/ops/array.h"
#include "loom/ops/bf16_conv.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/onednn_internal.h"
#include "loom/ops/onednn_matmul.h"
#include "loom/ops/ops_layer.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::CodeOf;

constexpr double kU32 = 1.0 / (1 << 24);  // float32's unit roundoff, 2^-24
constexpr double kU16 = 1.0 / (1 << 8);   // bf16's, 2^-8: 8 significant bits

Tensor ToFloat32(const Tensor& t64) {
  Tensor out(kFloat32, t64.shape());
  for (int64_t i = 0; i < t64.NumElements(); ++i)
    out.data<float>()[i] = static_cast<float>(t64.data<double>()[i]);
  return out;
}

// A float64 copy of a float32 tensor, each value through `f`.
Tensor ToFloat64(
    const Tensor& t32, const std::function<double(float)>& f = [](float x) { return double{x}; }) {
  Tensor out(kFloat64, t32.shape());
  for (int64_t i = 0; i < t32.NumElements(); ++i) out.data<double>()[i] = f(t32.data<float>()[i]);
  return out;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i)
    v[i] = t.dtype() == kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
  return v;
}

// Builds the outputs to fetch from the inputs' constants under a precision.
using Build =
    std::function<std::vector<Output>(const Scope&, const std::vector<Output>&, Precision)>;

std::vector<Tensor> RunBuild(const Build& build, const std::vector<Tensor>& inputs,
                             Precision precision, int threads = 2) {
  Graph graph;
  Scope s(graph);
  std::vector<Output> xs;
  xs.reserve(inputs.size());
  for (const Tensor& t : inputs) xs.push_back(Const(s, t));
  const std::vector<Output> outs = build(s, xs, precision);
  Session session(graph, {.intra_op_threads = threads});
  return session.Run({}, outs);
}

// Checks each output of `build` (every one a sum of `k[i]` products of two inputs) in
// emulated bf16 over float32 `inputs`:
// - against float64 of the bf16-rounded inputs: only float32 summation error,
//   |got - want| <= k u32 sum|a' b'| (any summation order; a' b' is exact in float32);
// - against float64 of the float32 inputs: a' = a(1 + d), |d| <= u16 = 2^-8, so each
//   product is off by at most (2 u16 + u16^2)|a b|, plus the summation error:
//   |got - exact| <= (2^-7 + 2^-16 + 1.01 k u32) sum|a b|;
// - and the bf16 error is real: well above the float32 product's own error.
// sum|a b| per element is the same build over the inputs' absolute values.
// `precision` is the bf16 path under test: kBf16Emulated, or kBf16Strict for the hardware.
void CheckAgainstReferences(const Build& build, const std::vector<Tensor>& inputs32,
                            const std::vector<int64_t>& k, const std::string& what,
                            Precision precision = Precision::kBf16Emulated) {
  std::vector<Tensor> rounded, exact, abs_rounded, abs_exact;
  for (const Tensor& t : inputs32) {
    rounded.push_back(ToFloat64(t, [](float x) { return double{bf16::RoundToBf16(x)}; }));
    exact.push_back(ToFloat64(t));
    abs_rounded.push_back(ToFloat64(t, [](float x) { return std::abs(bf16::RoundToBf16(x)); }));
    abs_exact.push_back(ToFloat64(t, [](float x) { return std::abs(double{x}); }));
  }
  const auto got = RunBuild(build, inputs32, precision);
  const auto f32 = RunBuild(build, inputs32, Precision::kFloat32);
  const auto want_rounded = RunBuild(build, rounded, Precision::kFloat32);
  const auto want_exact = RunBuild(build, exact, Precision::kFloat32);
  const auto mag_rounded = RunBuild(build, abs_rounded, Precision::kFloat32);
  const auto mag_exact = RunBuild(build, abs_exact, Precision::kFloat32);
  ASSERT_EQ(got.size(), k.size()) << what;
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].dtype(), kFloat32) << what;
    const std::vector<double> g = Values(got[o]), f = Values(f32[o]), wr = Values(want_rounded[o]),
                              we = Values(want_exact[o]), mr = Values(mag_rounded[o]),
                              me = Values(mag_exact[o]);
    const std::string out_what = StrCat(what, " output ", o);
    double bf16_error = 0, f32_error = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      ASSERT_LE(std::abs(g[i] - wr[i]), k[o] * kU32 * mr[i] + 1e-30)
          << out_what << " element " << i << ": against the float64 product of bf16 inputs";
      ASSERT_LE(std::abs(g[i] - we[i]),
                (2 * kU16 + kU16 * kU16 + 1.01 * k[o] * kU32) * me[i] + 1e-30)
          << out_what << " element " << i << ": against the float64 product of float32 inputs";
      bf16_error = std::max(bf16_error, std::abs(g[i] - we[i]));
      f32_error = std::max(f32_error, std::abs(f[i] - we[i]));
    }
    EXPECT_GT(bf16_error, 16 * f32_error)
        << out_what << ": the bf16 path's error is no larger than float32's: it did not round";
  }
}

// The convnet's second convolution: 14x14x32 -> 16 or 64 channels, 5x5 SAME.
nn_internal::Geometry SecondConvGeometry(int64_t batch) {
  return {.batch = batch,
          .in_h = 14,
          .in_w = 14,
          .channels = 32,
          .k_h = 5,
          .k_w = 5,
          .stride_h = 1,
          .stride_w = 1,
          .out_h = 14,
          .out_w = 14,
          .pad_top = 2,
          .pad_left = 2};
}

Tensor RandomFloats(const Shape& shape, uint64_t seed) {
  return ToFloat32(RandomDoubles(shape, seed));
}

// ---- rounding ----

// The array conversions (AVX-512 BF16 where the CPU has it) give the scalar rounding's bits
// for every upper half of a float32 (all exponents, signs, NaN and inf payloads, denormals)
// with low halves at and around the ties, at every alignment.
TEST(Bf16Test, ArrayConversionsMatchTheScalarRounding) {
  if (bf16::DetectHardware() != bf16::Hardware::kNone) {
    // oneDNN's bf16 ISAs (AMX, avx512_core_bf16) include AVX-512 BF16: the vector path runs.
    EXPECT_TRUE(bf16::ConvertsWithAvx512Bf16()) << bf16::CpuModelName();
  }
  std::vector<float> in;
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x4321u}) {
      const uint32_t bits = hi << 16 | lo;
      float x;
      std::memcpy(&x, &bits, sizeof(x));
      in.push_back(x);
    }
  }
  ThreadPool pool(2);
  for (int64_t offset : {0, 1, 17}) {
    const int64_t n = static_cast<int64_t>(in.size()) - offset;
    std::vector<uint16_t> bits(n);
    std::vector<float> rounded(n);
    bf16::FloatToBf16(in.data() + offset, bits.data(), n, pool);
    bf16::RoundToBf16(in.data() + offset, rounded.data(), n, pool);
    for (int64_t i = 0; i < n; ++i) {
      const float x = in[offset + i];
      uint32_t x_bits, got_bits, want_bits;
      std::memcpy(&x_bits, &x, 4);
      ASSERT_EQ(bits[i], bf16::FloatToBf16Bits(x)) << std::hex << "FloatToBf16 of 0x" << x_bits;
      const float want = bf16::RoundToBf16(x);
      std::memcpy(&got_bits, &rounded[i], 4);
      std::memcpy(&want_bits, &want, 4);
      ASSERT_EQ(got_bits, want_bits) << std::hex << "RoundToBf16 of 0x" << x_bits;
    }
  }
}

TEST(Bf16Test, RoundsToNearestEven) {
  EXPECT_EQ(bf16::RoundToBf16(1.0f), 1.0f);
  EXPECT_EQ(bf16::RoundToBf16(-2.5f), -2.5f);
  // bf16 spacing at 1 is 2^-7. Halfway cases go to the even significand.
  EXPECT_EQ(bf16::RoundToBf16(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(bf16::RoundToBf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(bf16::RoundToBf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // past halfway
  EXPECT_EQ(bf16::RoundToBf16(-(1.0f + 0x1p-8f + 0x1p-20f)), -(1.0f + 0x1p-7f));
  EXPECT_EQ(bf16::FloatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(bf16::Bf16BitsToFloat(0x4049), 3.140625f);
  EXPECT_EQ(bf16::RoundToBf16(3.14159265f), 3.140625f);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bf16::RoundToBf16(inf), inf);
  EXPECT_EQ(bf16::RoundToBf16(-inf), -inf);
  EXPECT_EQ(bf16::RoundToBf16(std::numeric_limits<float>::max()), inf);  // overflows
  EXPECT_TRUE(std::isnan(bf16::RoundToBf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits in the low half only must not round to inf.
  uint32_t low_nan_bits = 0x7f800001u;
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  EXPECT_TRUE(std::isnan(bf16::RoundToBf16(low_nan)));
  // Relative error at most 2^-8 (half of bf16's 2^-7 spacing at 1) on random values, and
  // more than float32's somewhere; the buffer versions agree.
  Tensor x = RandomFloats({4096}, 3);
  ThreadPool pool(2);
  Tensor r = bf16::Rounded(x, pool);
  std::vector<uint16_t> bits(4096);
  bf16::FloatToBf16(x.data<float>(), bits.data(), 4096, pool);
  double max_relative = 0;
  for (int64_t i = 0; i < 4096; ++i) {
    const float v = x.data<float>()[i], rv = r.data<float>()[i];
    ASSERT_LE(std::abs(double{rv} - v), std::abs(double{v}) * kU16) << v;
    max_relative = std::max(max_relative, std::abs(double{rv} - v) / std::abs(double{v}));
    ASSERT_EQ(bf16::FloatToBf16Bits(rv), bits[i]);
    ASSERT_EQ(bf16::Bf16BitsToFloat(bits[i]), rv);
  }
  EXPECT_GT(max_relative, kU16 / 2);  // rounding to 8 bits, not to float32's 24
}

TEST(Bf16Test, ParsesPolicyNames) {
  for (Precision p :
       {Precision::kFloat32, Precision::kBf16, Precision::kBf16Strict, Precision::kBf16Emulated}) {
    EXPECT_EQ(ParsePrecision(PrecisionName(p), "x"), p);
  }
  std::string message;
  EXPECT_EQ(CodeOf([] { ParsePrecision("fp16", "job.toml: [train] precision"); }, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("job.toml: [train] precision is \"fp16\""), std::string::npos) << message;
  EXPECT_NE(message.find("\"bf16-strict\""), std::string::npos) << message;
}

// ---- numerics of the emulated path ----

// Exact small cases: 1 + 2^-8 is a bf16 tie that rounds to 1, so bf16 gives 3, float32 3.01...
TEST(Bf16Test, EmulatedProductsReadRoundedInputs) {
  const float a = 1.0f + 0x1p-8f;
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<float>({a, a}, {1, 2}));
  // 17 columns: wider than the narrow products that run in float32 on AVX-512 BF16
  // (bf16::ProductRunsInFloat32); only column 0 is checked.
  std::vector<float> w_values(2 * 17, 0.0f);
  w_values[0] = 3;
  auto w = Const(s, Tensor::FromVector<float>(w_values, {2, 17}));
  auto bf = MatMul(s, x, w, {.precision = Precision::kBf16Emulated});
  auto fp = MatMul(s, x, w);
  // 3 input channels of a 3x3 window: deep enough (27) for bf16 (nn_conv.cc's rule).
  std::vector<float> image(3, 0.0f), filter(27, 0.0f);
  image[0] = a;
  filter[4 * 3] = 3;  // the center tap of channel 0
  auto img = Const(s, Tensor::FromVector<float>(image, {1, 1, 1, 3}));
  auto filt = Const(s, Tensor::FromVector<float>(filter, {3, 3, 3, 1}));
  auto conv = Conv2D(s, img, filt, {1, 1}, "SAME", Precision::kBf16Emulated);
  Session session(graph);
  auto out = session.Run({}, {bf, fp, conv});
  EXPECT_EQ(out[0].data<float>()[0], 3.0f);
  EXPECT_EQ(out[1].data<float>()[0], 3.0f * a);
  EXPECT_EQ(out[2].data<float>()[0], 3.0f);
}

void CheckMatMulAndGradients(Precision precision) {
  const int64_t m = 37, k = 300, n = 23;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Build build = [&](const Scope& s, const std::vector<Output>& in,
                        Precision p) -> std::vector<Output> {
        Output z = MatMul(s, in[0], in[1], {.transpose_a = ta, .transpose_b = tb, .precision = p});
        auto grads = Gradients(s, {z}, {in[0], in[1]}, {in[2]});
        return {z, grads[0], grads[1]};
      };
      const Shape a_shape = ta ? Shape{k, m} : Shape{m, k};
      const Shape b_shape = tb ? Shape{n, k} : Shape{k, n};
      CheckAgainstReferences(
          build, {RandomFloats(a_shape, 1), RandomFloats(b_shape, 2), RandomFloats({m, n}, 3)},
          {k, n, m}, StrCat("MatMul ta=", ta, " tb=", tb), precision);
    }
  }
}

TEST(Bf16Test, MatMulAndGradientsMatchReferences) {
  CheckMatMulAndGradients(Precision::kBf16Emulated);
}

TEST(Bf16Test, BatchMatMulMatchesReferences) {
  Build build = [](const Scope& s, const std::vector<Output>& in,
                   Precision p) -> std::vector<Output> {
    Output z = BatchMatMul(s, in[0], in[1], {.transpose_b = true, .precision = p});
    auto grads = Gradients(s, {z}, {in[0], in[1]}, {in[2]});
    return {z, grads[0], grads[1]};
  };
  // a [3,2,9,64] x b [2,17,64]^T -> [3,2,9,17]; b's gradient sums over the broadcast dim.
  CheckAgainstReferences(build,
                         {RandomFloats({3, 2, 9, 64}, 4), RandomFloats({2, 17, 64}, 5),
                          RandomFloats({3, 2, 9, 17}, 6)},
                         {64, 17, 3 * 9}, "BatchMatMul");
}

void CheckConv2DAndBackprops(Precision precision) {
  struct Case {
    int64_t n, h, w, c, kh, kw, o, sh, sw;
    const char* padding;
  };
  // Convolutions deep enough to run in bf16 (ShallowConvolutionsRunInFloat32 has the others).
  for (const Case& c :
       {Case{2, 14, 14, 32, 5, 5, 16, 1, 1, "SAME"},  // the convnet's 2nd layer
        Case{3, 28, 28, 8, 5, 5, 8, 1, 1, "SAME"}, Case{2, 9, 8, 8, 3, 2, 4, 2, 3, "VALID"},
        Case{2, 6, 6, 32, 1, 1, 5, 1, 1, "SAME"}}) {  // pointwise: one GEMM
    Build build = [&](const Scope& s, const std::vector<Output>& in,
                      Precision p) -> std::vector<Output> {
      Output y = Conv2D(s, in[0], in[1], {c.sh, c.sw}, c.padding, p);
      auto grads = Gradients(s, {y}, {in[0], in[1]}, {in[2]});
      return {y, grads[0], grads[1]};
    };
    const int64_t oh =
        std::string(c.padding) == "SAME" ? (c.h + c.sh - 1) / c.sh : (c.h - c.kh) / c.sh + 1;
    const int64_t ow =
        std::string(c.padding) == "SAME" ? (c.w + c.sw - 1) / c.sw : (c.w - c.kw) / c.sw + 1;
    CheckAgainstReferences(
        build,
        {RandomFloats({c.n, c.h, c.w, c.c}, 7), RandomFloats({c.kh, c.kw, c.c, c.o}, 8),
         RandomFloats({c.n, oh, ow, c.o}, 9)},
        {c.kh * c.kw * c.c, c.kh * c.kw * c.o, c.n * oh * ow},
        StrCat("Conv2D in [", c.n, ",", c.h, ",", c.w, ",", c.c, "] filter ", c.kh, "x", c.kw, "x",
               c.o, " ", c.padding),
        precision);
  }
}

TEST(Bf16Test, Conv2DAndBackpropsMatchReferences) {
  CheckConv2DAndBackprops(Precision::kBf16Emulated);
}

// Under every bf16 policy, a pass measured slower in bf16 than in float32 (nn_conv.cc:
// a forward pass with C * k_h * k_w < 27, a filter gradient with C < 8) computes float32's
// bits; the same convolution's input gradient, and a deeper convolution, still round.
TEST(Bf16Test, ShallowConvolutionsRunInFloat32) {
  std::vector<Precision> policies = {Precision::kBf16Emulated};
  if (bf16::DetectHardware() != bf16::Hardware::kNone) policies.push_back(Precision::kBf16Strict);
  struct Case {
    int64_t c, k;
    bool forward_f32, filter_grad_f32;
  };
  for (Precision policy : policies) {
    for (const Case& c : {Case{1, 5, true, true},   // the convnet's first layer
                          Case{2, 3, true, true},   // 18 < 27
                          Case{3, 3, false, true},  // 27: bf16 forward
                          Case{8, 5, false, false}}) {
      const std::vector<Tensor> in = {RandomFloats({3, 16, 16, c.c}, 7),
                                      RandomFloats({c.k, c.k, c.c, 8}, 8),
                                      RandomFloats({3, 16, 16, 8}, 9)};
      Build build = [&](const Scope& s, const std::vector<Output>& x,
                        Precision p) -> std::vector<Output> {
        Output y = Conv2D(s, x[0], x[1], {1, 1}, "SAME", p);
        auto grads = Gradients(s, {y}, {x[0], x[1]}, {x[2]});
        return {y, grads[1], grads[0]};
      };
      const auto got = RunBuild(build, in, policy);
      const auto f32 = RunBuild(build, in, Precision::kFloat32);
      const std::string what = StrCat(PrecisionName(policy), " C=", c.c, " ", c.k, "x", c.k);
      for (int o = 0; o < 3; ++o) {
        const bool want_f32 = o == 0 ? c.forward_f32 : o == 1 ? c.filter_grad_f32 : false;
        const bool same =
            std::memcmp(got[o].raw_data(), f32[o].raw_data(), f32[o].TotalBytes()) == 0;
        EXPECT_EQ(same, want_f32) << what
                                  << (o == 0   ? " forward"
                                      : o == 1 ? " filter grad"
                                               : " input grad");
      }
    }
  }
}

// ---- the policy in the graph ----

std::vector<const Node*> NodesOf(const Graph& graph, const std::string& op) {
  std::vector<const Node*> nodes;
  for (int i = 0; i < graph.num_nodes(); ++i) {
    if (graph.node(i)->op() == op) nodes.push_back(graph.node(i));
  }
  return nodes;
}

TEST(Bf16Test, GradientsTakeTheForwardPolicy) {
  Graph graph;
  Scope s(graph);
  const Precision emulated = Precision::kBf16Emulated;
  auto x = Const(s, RandomFloats({4, 8, 8, 3}, 1));
  auto f = Const(s, RandomFloats({3, 3, 3, 4}, 2));
  auto w = Const(s, RandomFloats({256, 5}, 3));
  auto y = Conv2D(s, x, f, {1, 1}, "SAME", emulated);
  auto z = MatMul(s, Reshape(s, y, {4, 256}), w, {.precision = emulated});
  auto plain = MatMul(s, z, Const(s, RandomFloats({5, 2}, 4)));  // float32
  Gradients(s, {Sum(s, plain, {0, 1})}, {x, f, w});
  const auto matmuls = NodesOf(graph, "MatMul");
  ASSERT_EQ(matmuls.size(), 6u);  // z, plain, and two gradients of each
  int bf16_matmuls = 0;
  for (const Node* node : matmuls) {
    if (bf16::NodePrecision(*node) == Precision::kBf16Emulated)
      ++bf16_matmuls;
    else
      EXPECT_EQ(node->attrs().Find<std::string>("precision"), nullptr) << node->name();
  }
  EXPECT_EQ(bf16_matmuls, 3);  // z and its two gradients; plain's stay float32
  for (const char* op : {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"}) {
    const auto nodes = NodesOf(graph, op);
    ASSERT_EQ(nodes.size(), 1u) << op;
    EXPECT_EQ(nodes[0]->attr<std::string>("precision"), "bf16-emulated") << op;
  }
}

TEST(Bf16Test, GraphDefRoundTripKeepsThePolicy) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, RandomFloats({3, 40}, 5));
  auto w = Const(s, RandomFloats({40, 20}, 6));  // not narrow (bf16::ProductRunsInFloat32)
  auto z = MatMul(s.WithOpName("z"), x, w, {.precision = Precision::kBf16Emulated});
  auto plain = MatMul(s.WithOpName("plain"), x, w);
  OpRegistry registry;
  RegisterOpsLayerOps(registry);
  Graph loaded;
  ImportSerializedGraph(SerializeGraph(graph), registry, loaded);
  EXPECT_EQ(loaded.FindNode("z")->attr<std::string>("precision"), "bf16-emulated");
  EXPECT_EQ(loaded.FindNode("plain")->attrs().Find<std::string>("precision"), nullptr);
  EXPECT_NE(GraphToText(graph).find("bf16-emulated"), std::string::npos);
  Session a(graph), b(loaded);
  auto before = a.Run({}, {z, plain});
  auto after = b.Run({}, {loaded.GetOutput("z"), loaded.GetOutput("plain")});
  EXPECT_EQ(Values(before[0]), Values(after[0]));
  EXPECT_NE(Values(before[0]), Values(before[1]));  // bf16 differs from float32
  EXPECT_EQ(Values(before[1]), Values(after[1]));
}

// ---- fallback and strict ----

TEST(Bf16Test, ChoosesThePathFromPolicyAndHardware) {
  using bf16::ChoosePath;
  using bf16::Hardware;
  using bf16::Path;
  for (Hardware hw : {Hardware::kNone, Hardware::kAvx512Bf16, Hardware::kAmx}) {
    EXPECT_EQ(ChoosePath(Precision::kFloat32, hw, "n"), Path::kFloat32);
    EXPECT_EQ(ChoosePath(Precision::kBf16Emulated, hw, "n"), Path::kEmulated);
  }
  for (Hardware hw : {Hardware::kAvx512Bf16, Hardware::kAmx}) {
    EXPECT_EQ(ChoosePath(Precision::kBf16, hw, "n"), Path::kHardware);
    EXPECT_EQ(ChoosePath(Precision::kBf16Strict, hw, "n"), Path::kHardware);
  }
  EXPECT_EQ(ChoosePath(Precision::kBf16, Hardware::kNone, "MatMul 'a'"), Path::kFloat32);
  EXPECT_EQ(bf16::FallbackWarnings(), 1);
  EXPECT_EQ(ChoosePath(Precision::kBf16, Hardware::kNone, "MatMul 'b'"), Path::kFloat32);
  EXPECT_EQ(bf16::FallbackWarnings(), 1);  // logged once per process
  std::string message;
  EXPECT_EQ(
      CodeOf([] { ChoosePath(Precision::kBf16Strict, Hardware::kNone, "MatMul 'c'"); }, &message),
      ErrorCode::kFailedPrecondition);
  EXPECT_NE(message.find("MatMul 'c'"), std::string::npos) << message;
  EXPECT_NE(message.find("\"bf16-strict\""), std::string::npos) << message;
  EXPECT_NE(message.find(bf16::CpuModelName()), std::string::npos) << message;
}

TEST(Bf16Test, WithoutHardwareBf16RunsFloat32AndStrictFails) {
  if (bf16::DetectHardware() != bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has "
                 << bf16::HardwareName(bf16::DetectHardware()) << ": no fallback to test";
  }
  Graph graph;
  Scope s(graph);
  auto x = Const(s, RandomFloats({16, 64}, 7));
  auto f = Const(s, RandomFloats({3, 3, 4, 2}, 8));
  auto img = Const(s, RandomFloats({2, 8, 8, 4}, 9));
  auto fallback = MatMul(s, x, x, {.transpose_b = true, .precision = Precision::kBf16});
  auto fp = MatMul(s, x, x, {.transpose_b = true});
  auto conv_fallback = Conv2D(s, img, f, {1, 1}, "SAME", Precision::kBf16);
  auto conv_fp = Conv2D(s, img, f, {1, 1}, "SAME");
  auto strict = MatMul(s.WithOpName("strict"), x, x,
                       {.transpose_b = true, .precision = Precision::kBf16Strict});
  Session session(graph);
  auto out = session.Run({}, {fallback, fp, conv_fallback, conv_fp});
  EXPECT_EQ(Values(out[0]), Values(out[1]));  // bit-identical: the float32 product
  EXPECT_EQ(Values(out[2]), Values(out[3]));
  EXPECT_EQ(bf16::FallbackWarnings(), 1);
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Run({}, {strict}); }, &message), ErrorCode::kFailedPrecondition);
  EXPECT_NE(message.find("'strict'"), std::string::npos) << message;
  EXPECT_NE(message.find("AMX-BF16 or AVX-512 BF16"), std::string::npos) << message;
  // Loom never calls oneDNN's bf16 kernels here. oneDNN 2.6 declines them on AVX2, but on
  // AVX-512 without bf16 instructions (a Skylake or Cascade Lake Xeon, or
  // ONEDNN_MAX_CPU_ISA=AVX512_CORE) it has an emulating one: either way a call that is
  // taken must compute the product.
  float out1[1] = {0};
  const float one[1] = {1};
  ThreadPool pool(1);
  if (bf16::OnednnMatMulBf16(false, false, 1, 1, 1, one, 1, one, 1, out1, pool)) {
    EXPECT_EQ(out1[0], 1.0f);
  }
}

// ---- the hardware path (AMX or AVX-512 BF16) ----

TEST(Bf16Test, HardwareKernelsMatchTheEmulatedPath) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName()
                 << ") has neither AMX-BF16 nor AVX-512 BF16, and oneDNN 2.6 has no bf16 "
                    "kernels without them (not even its reference ones): nothing to run";
  }
  // On the hardware path the products read the same rounded inputs as the emulated path
  // and also accumulate in float32: the same tight bound against the rounded references.
  ThreadPool pool(2);
  const int64_t m = 64, k = 200, n = 48;
  Tensor a = RandomFloats({m, k}, 11), b = RandomFloats({n, k}, 12);
  Tensor c(kFloat32, Shape{m, n});
  ASSERT_TRUE(bf16::OnednnMatMulBf16(false, true, m, n, k, a.data<float>(), k, b.data<float>(), k,
                                     c.data<float>(), pool));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = double{bf16::RoundToBf16(a.data<float>()[i * k + p])} *
                         bf16::RoundToBf16(b.data<float>()[j * k + p]);
        want += t;
        mag += std::abs(t);
      }
      ASSERT_LE(std::abs(c.data<float>()[i * n + j] - want), k * kU32 * mag) << i << "," << j;
    }
  }
  nn_internal::Geometry g = SecondConvGeometry(2);
  Tensor x = RandomFloats({2, 14, 14, 32}, 13), w = RandomFloats({5, 5, 32, 16}, 14);
  Tensor dy = RandomFloats({2, 14, 14, 16}, 15);
  Tensor y(kFloat32, dy.shape()), dx(kFloat32, x.shape()), dw(kFloat32, w.shape());
  EXPECT_TRUE(bf16::OnednnConv2DBf16(g, 16, x.data<float>(), w.data<float>(), y.data<float>(), 2));
  EXPECT_TRUE(bf16::OnednnConv2DBackpropInputBf16(g, 16, w.data<float>(), dy.data<float>(),
                                                  dx.data<float>(), 2));
  EXPECT_TRUE(bf16::OnednnConv2DBackpropFilterBf16(g, 16, x.data<float>(), dy.data<float>(),
                                                   dw.data<float>(), 2));
  // Through the graph: "bf16" takes the hardware path and meets the emulated path's bounds.
  // (CheckAgainstReferences runs the emulated policy; run the hardware one the same way.)
  Build conv = [](const Scope& s, const std::vector<Output>& in,
                  Precision p) -> std::vector<Output> {
    Output out = Conv2D(s, in[0], in[1], {1, 1}, "SAME", p);
    auto grads = Gradients(s, {out}, {in[0], in[1]}, {in[2]});
    return {out, grads[0], grads[1]};
  };
  const auto hw = RunBuild(conv, {x, w, dy}, Precision::kBf16Strict);
  const auto em = RunBuild(conv, {x, w, dy}, Precision::kBf16Emulated);
  for (size_t o = 0; o < hw.size(); ++o) {
    const std::vector<double> h = Values(hw[o]), e = Values(em[o]);
    double scale = 1e-30;
    for (double v : e) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < h.size(); ++i) {
      ASSERT_NEAR(h[i], e[i], 1e-5 * scale) << "output " << o << " element " << i;
    }
  }
}

// The kernel oneDNN runs is the CPU's bf16 hardware, not a slower fallback: AMX tiles on an
// AMX CPU, AVX-512 BF16 on one with only that (oneDNN names its implementations after the ISA).
TEST(Bf16Test, HardwarePathRunsTheCpusBf16Kernels) {
  const bf16::Hardware hardware = bf16::DetectHardware();
  if (hardware == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName()
                 << ") has neither AMX-BF16 nor AVX-512 BF16: no bf16 kernel to check";
  }
  const std::string want =
      hardware == bf16::Hardware::kAmx ? "avx512_core_amx" : "avx512_core_bf16";
  for (int threads : {1, 2}) {
    // The MLP's products: forward x[256,784] w[784,512], and both gradients' transposes.
    for (auto [ta, tb, m, n, k] :
         {std::tuple{false, false, 256, 512, 784}, std::tuple{false, true, 256, 784, 512},
          std::tuple{true, false, 784, 512, 256}}) {
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      const std::string impl = bf16::OnednnMatMulBf16Impl(ta, tb, m, n, k, lda, ldb, threads);
      EXPECT_NE(impl.find(want), std::string::npos)
          << "MatMul ta=" << ta << " tb=" << tb << " [" << m << "," << n << "," << k
          << "] threads=" << threads << " runs '" << impl << "', not " << want << " ("
          << bf16::CpuModelName() << ")";
    }
    // The convnet's second convolution (14x14x32 -> 64, 5x5 SAME), all three passes, in
    // the layouts Loom runs them in on this CPU (bf16_conv.h's ConvOperandsFor).
    const nn_internal::Geometry g = SecondConvGeometry(64);
    using onednn_internal::ConvPass;
    for (ConvPass pass :
         {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
      const std::string impl =
          onednn_internal::ConvImpl(bf16::ConvOperandsFor(hardware, pass), pass, g, 64, threads);
      EXPECT_NE(impl.find(want), std::string::npos)
          << "Conv2D pass " << static_cast<int>(pass) << " threads=" << threads << " runs '" << impl
          << "', not " << want;
    }
  }
}

// On the hardware path MatMul, Conv2D and their gradients meet the same bounds as the
// emulated path: against float64 of the bf16-rounded inputs (float32 accumulation) and of
// the float32 inputs (bf16's 2^-8).
TEST(Bf16Test, HardwareMatMulAndGradientsMatchReferences) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has no bf16 hardware";
  }
  CheckMatMulAndGradients(Precision::kBf16Strict);
}

TEST(Bf16Test, HardwareConv2DAndBackpropsMatchReferences) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has no bf16 hardware";
  }
  CheckConv2DAndBackprops(Precision::kBf16Strict);
}

}  // namespace
}  // namespace loom
