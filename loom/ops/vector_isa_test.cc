// The kernels' auto-vectorized loops run as compiled for baseline x86-64 or, when the CPU
// has AVX2, as compiled for it (vector_isa.h). The choice must follow the CPU, and the two
// copies of every dispatched kernel must give bitwise equal results (and the float64
// reference's), on sizes whose tails the vector loops handle separately.
#include "loom/ops/vector_isa.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_test_util.h"
#include "loom/ops/reduce.h"
#include "loom/testing/cpuinfo.h"

namespace loom {
namespace {

using ::loom::testing::CpuinfoHasFlag;

using internal::ActiveVectorIsa;
using internal::CpuHasAvx2;
using internal::ScopedBaselineVectorIsa;
using internal::VectorIsa;

TEST(VectorIsaTest, Avx2CopiesRunExactlyWhenTheCpuHasAvx2) {
#if defined(__x86_64__) && defined(__linux__)
  EXPECT_EQ(CpuHasAvx2(), CpuinfoHasFlag("avx2"));
#else
  EXPECT_FALSE(CpuHasAvx2());
#endif
  EXPECT_EQ(ActiveVectorIsa(), CpuHasAvx2() ? VectorIsa::kAvx2 : VectorIsa::kBaseline);
  {
    ScopedBaselineVectorIsa outer;
    {
      ScopedBaselineVectorIsa inner;
      EXPECT_EQ(ActiveVectorIsa(), VectorIsa::kBaseline);
    }
    EXPECT_EQ(ActiveVectorIsa(), VectorIsa::kBaseline);
  }
  EXPECT_EQ(ActiveVectorIsa(), CpuHasAvx2() ? VectorIsa::kAvx2 : VectorIsa::kBaseline);
}

Tensor RandomFloats(const Shape& shape, uint64_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t(kFloat32, shape);
  for (float& v : t.flat<float>()) v = dist(rng);
  return t;
}

struct KernelCase {
  const char* name;
  std::vector<Tensor> inputs;
  std::function<Output(const Scope&, const std::vector<Output>&)> build;
  // The float64 reference of each output element, from the float32 inputs.
  std::function<std::vector<double>(const std::vector<Tensor>&)> reference;
};

std::vector<double> D(const Tensor& t) { return nn_test::Values(t); }

std::vector<KernelCase> Cases() {
  const Shape odd{37, 67};  // 67 channels: 8 + 8 ... + 3 left over, rows of odd length
  const Shape image{3, 9, 7, 13};
  std::vector<KernelCase> cases;
  cases.push_back({"Relu",
                   {RandomFloats(odd, 1)},
                   [](const Scope& s, const std::vector<Output>& x) { return Relu(s, x[0]); },
                   [](const std::vector<Tensor>& in) {
                     std::vector<double> r = D(in[0]);
                     for (double& v : r) v = v > 0 ? v : 0;
                     return r;
                   }});
  cases.push_back(
      {"BiasAdd",
       {RandomFloats(odd, 2), RandomFloats({67}, 3)},
       [](const Scope& s, const std::vector<Output>& x) { return BiasAdd(s, x[0], x[1]); },
       [](const std::vector<Tensor>& in) {
         std::vector<double> v = D(in[0]), b = D(in[1]);
         for (size_t i = 0; i < v.size(); ++i) v[i] += b[i % 67];
         return v;
       }});
  cases.push_back({"Mul broadcast",
                   {RandomFloats(odd, 4), RandomFloats({1, 67}, 5)},
                   [](const Scope& s, const std::vector<Output>& x) { return Mul(s, x[0], x[1]); },
                   [](const std::vector<Tensor>& in) {
                     std::vector<double> v = D(in[0]), b = D(in[1]);
                     for (size_t i = 0; i < v.size(); ++i) v[i] *= b[i % 67];
                     return v;
                   }});
  cases.push_back({"Sub same shape",
                   {RandomFloats(odd, 6), RandomFloats(odd, 7)},
                   [](const Scope& s, const std::vector<Output>& x) { return Sub(s, x[0], x[1]); },
                   [](const std::vector<Tensor>& in) {
                     std::vector<double> a = D(in[0]), b = D(in[1]);
                     for (size_t i = 0; i < a.size(); ++i) a[i] -= b[i];
                     return a;
                   }});
  cases.push_back({"MaxPool 2x2/2",
                   {RandomFloats(image, 8)},
                   [](const Scope& s, const std::vector<Output>& x) {
                     return MaxPool(s, x[0], {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME");
                   },
                   [](const std::vector<Tensor>& in) {
                     std::vector<double> x = D(in[0]), out;
                     for (int n = 0; n < 3; ++n)
                       for (int oh = 0; oh < 5; ++oh)
                         for (int ow = 0; ow < 4; ++ow)
                           for (int ch = 0; ch < 13; ++ch) {
                             double m = -INFINITY;
                             for (int h = 2 * oh; h < std::min(9, 2 * oh + 2); ++h)
                               for (int w = 2 * ow; w < std::min(7, 2 * ow + 2); ++w)
                                 m = std::max(m, x[((n * 9 + h) * 7 + w) * 13 + ch]);
                             out.push_back(m);
                           }
                     return out;
                   }});
  return cases;
}

std::vector<float> EvalOn(bool baseline, const KernelCase& c) {
  std::optional<ScopedBaselineVectorIsa> scope;
  if (baseline) scope.emplace();
  const Tensor t = nn_test::EvalWith(c.inputs, c.build, /*threads=*/2);
  return {t.data<float>(), t.data<float>() + t.NumElements()};
}

TEST(VectorIsaTest, DispatchedKernelsMatchTheBaselineCopyAndFloat64) {
  for (const KernelCase& c : Cases()) {
    const std::vector<float> base = EvalOn(true, c), active = EvalOn(false, c);
    ASSERT_EQ(base.size(), active.size()) << c.name;
    EXPECT_EQ(std::memcmp(base.data(), active.data(), base.size() * sizeof(float)), 0)
        << c.name << ": the " << internal::VectorIsaName(ActiveVectorIsa())
        << " copy differs from the baseline copy";
    const std::vector<double> expected = c.reference(c.inputs);
    ASSERT_EQ(expected.size(), base.size()) << c.name;
    for (size_t i = 0; i < base.size(); ++i) {
      ASSERT_NEAR(base[i], expected[i], 1e-6 * std::max(1.0, std::abs(expected[i])))
          << c.name << " element " << i;
    }
  }
}

// The gradient kernels (ReluGrad, BiasAddGrad, MaxPoolGrad, AvgPoolGrad and the broadcast
// reductions of Mul's gradient), through the gradients of a small network. AvgPoolGrad's
// dx += dy * (1 / count) over 3x3 windows (count 4, 6 or 9: an inexact scale) is the
// multiply-add a copy compiled with FMA would contract into one rounding, so the bitwise
// comparison also checks that the AVX2 copy is compiled without it (vector_isa.h).
TEST(VectorIsaTest, DispatchedGradientKernelsMatchTheBaselineCopy) {
  auto run = [](bool baseline) {
    std::optional<ScopedBaselineVectorIsa> scope;
    if (baseline) scope.emplace();
    Graph graph;
    Scope s(graph);
    Output x = Const(s, RandomFloats({3, 9, 7, 13}, 9));
    Output b = Const(s, RandomFloats({13}, 10));
    Output w = Const(s, RandomFloats({1, 1, 1, 13}, 11));
    Output h = Relu(s, BiasAdd(s, Mul(s, x, w), b));
    Output y = Add(s, MaxPool(s, h, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"),
                   AvgPool(s, h, {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"));
    Output loss = Sum(s, Mul(s, y, y), {0, 1, 2, 3});
    std::vector<Output> grads = Gradients(s, {loss}, {x, b, w});
    Session session(graph, {.intra_op_threads = 2});
    std::vector<Tensor> values = session.Run({}, grads);
    std::vector<float> flat;
    for (const Tensor& t : values)
      flat.insert(flat.end(), t.data<float>(), t.data<float>() + t.NumElements());
    return flat;
  };
  const std::vector<float> base = run(true), active = run(false);
  ASSERT_EQ(base.size(), active.size());
  EXPECT_EQ(std::memcmp(base.data(), active.data(), base.size() * sizeof(float)), 0);
  double norm = 0;
  for (float v : base) norm += std::abs(v);
  EXPECT_GT(norm, 0);  // the gradients are not all zero: the kernels ran on real values
}

}  // namespace
}  // namespace loom
