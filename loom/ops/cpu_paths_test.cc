// The kernels that pick their code by CPU at run time, on the paths this CPU runs, against
// float64 (or scalar) references at the sizes their vector loops handle separately (n = 0,
// 1, 15, 16, 17, lane and chunk boundaries, odd strides) and with NaN, Inf, -0 and
// denormals among the values (session 16's campaign, docs/faults.md). The paths:
// - vector_isa.h's two copies (baseline x86-64, AVX2): the reductions, the fused
//   bias + ReLU epilogue and ReLU gradient with its bias sum, and the max-|x| scan that
//   decides whether oneDNN's ReLU post-op may run (vector_isa_test has the elementwise ops);
// - the products (GEMM, bf16, convolutions, WeightLayouts): cpu_paths_products_test.cc;
// - the fused Conv2D + BiasAdd + Relu: the ReLU post-op is replaced by a pass whenever a NaN
//   could arise (NaN or Inf operands, or a sum that may overflow), float32 and bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/base/strcat.h"
#include "loom/base/thread_pool.h"
#include "loom/ops/array.h"
#include "loom/ops/bf16.h"
#include "loom/ops/blas.h"
#include "loom/ops/cpu_paths_test_util.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/onednn_matmul.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/ops/vector_isa.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

using cpu_paths_test::BaselineFlags;
using cpu_paths_test::Bits;
using cpu_paths_test::kInf;
using cpu_paths_test::kNaN;
using cpu_paths_test::kU32;
using cpu_paths_test::RandomVector;
using cpu_paths_test::SameResult;
using internal::ScopedBaselineVectorIsa;

// ---- reductions (reduce.cc: 16 lanes per 1024-element chunk, chunks folded in double) ----

enum class Red { kSum, kMean, kMax, kMin, kProd };
const char* RedName(Red r) {
  switch (r) {
    case Red::kSum:
      return "Sum";
    case Red::kMean:
      return "Mean";
    case Red::kMax:
      return "Max";
    case Red::kMin:
      return "Min";
    case Red::kProd:
      return "Prod";
  }
  return "?";
}

Output Reduction(const Scope& s, Red r, Output x, const std::vector<int64_t>& axes) {
  switch (r) {
    case Red::kSum:
      return Sum(s, x, axes);
    case Red::kMean:
      return Mean(s, x, axes);
    case Red::kMax:
      return Max(s, x, axes);
    case Red::kMin:
      return Min(s, x, axes);
    case Red::kProd:
      return Prod(s, x, axes);
  }
  return x;
}

Tensor RunReduction(Red r, const Tensor& x, const std::vector<int64_t>& axes, bool baseline) {
  std::optional<ScopedBaselineVectorIsa> scope;
  if (baseline) scope.emplace();
  Graph graph;
  Scope s(graph);
  Output y = Reduction(s, r, Const(s, x), axes);
  Session session(graph, {.intra_op_threads = 2});
  return session.Eval(y);
}

// [outer, n, inner] reduced over n in float64, with numpy's rules for NaN (a NaN anywhere
// makes Max and Min NaN, as Maximum, Minimum and MaxPool do) and Inf. `bound` gets the
// float32 summation error bound per output element.
std::vector<double> ReduceReference(Red r, const std::vector<float>& x, int64_t outer, int64_t n,
                                    int64_t inner, std::vector<double>* bound) {
  std::vector<double> out(outer * inner);
  bound->assign(outer * inner, 0);
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t c = 0; c < inner; ++c) {
      double acc = r == Red::kProd ? 1 : r == Red::kMax ? -INFINITY : r == Red::kMin ? INFINITY : 0;
      double mag = r == Red::kProd ? 1 : 0;
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[(a * n + i) * inner + c];
        nan |= std::isnan(v);
        if (r == Red::kSum || r == Red::kMean) {
          acc += v;
          mag += std::abs(v);
        } else if (r == Red::kProd) {
          acc *= v;
          mag *= std::abs(v);
        } else if (r == Red::kMax) {
          acc = std::max(acc, v);
        } else {
          acc = std::min(acc, v);
        }
      }
      if (r == Red::kMean) {
        acc /= static_cast<double>(n);
        mag /= static_cast<double>(n);
      }
      if (nan) acc = NAN;
      out[a * inner + c] = acc;
      // Float32 summation depth: along a row, 16 lanes of at most 64 additions per
      // 1024-element chunk, folded with the tail (chunks then in double); down columns
      // (inner > 1), n additions in order. Mean adds a division, Prod n multiplications.
      const double depth = r == Red::kProd || inner > 1
                               ? static_cast<double>(n) + 2
                               : static_cast<double>(std::min<int64_t>(n, 1024)) / 16 + 36;
      (*bound)[a * inner + c] = depth * kU32 * mag + 1e-30;
    }
  }
  return out;
}

void CheckReduction(Red r, const std::vector<float>& values, int64_t outer, int64_t n,
                    int64_t inner, const std::string& what) {
  Shape shape;
  std::vector<int64_t> axes;
  // Shapes that reach each of the kernel's three loops: one long reduction, rows
  // (inner == 1), and columns (vectorized over inner).
  if (outer == 1 && inner == 1) {
    shape = Shape{n};
    axes = {0};
  } else {
    shape = Shape{outer, n, inner};
    axes = {1};
  }
  const Tensor x = Tensor::FromVector<float>(values, shape);
  std::vector<double> bound;
  const std::vector<double> want = ReduceReference(r, values, outer, n, inner, &bound);
  std::vector<float> first;
  for (bool baseline : BaselineFlags()) {
    const Tensor got = RunReduction(r, x, axes, baseline);
    const std::string where = StrCat(RedName(r), " ", what, " outer=", outer, " n=", n,
                                     " inner=", inner, baseline ? " (baseline copy)" : " (active)");
    ASSERT_EQ(got.NumElements(), static_cast<int64_t>(want.size())) << where;
    const float* g = got.data<float>();
    for (size_t i = 0; i < want.size(); ++i) {
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(g[i])) << where << " element " << i << ": " << g[i]
                                      << ", not NaN: a NaN among the reduced values was lost";
      } else if (std::isinf(want[i]) || n == 0 || r == Red::kMax || r == Red::kMin) {
        ASSERT_EQ(double{g[i]}, want[i]) << where << " element " << i;
      } else {
        ASSERT_LE(std::abs(g[i] - want[i]), bound[i]) << where << " element " << i;
      }
    }
    // The copies give the same bits (vector_isa.h: no contraction, no reassociation).
    if (first.empty()) {
      first.assign(g, g + got.NumElements());
    } else {
      for (size_t i = 0; i < first.size(); ++i) {
        ASSERT_TRUE(SameResult(first[i], g[i])) << where << " element " << i << " differs";
      }
    }
  }
}

// Sizes around the 16 lanes, the 1024-element chunk and the 16384-element parallel block.
const std::vector<int64_t>& ReductionSizes() {
  static const std::vector<int64_t> sizes = {0,  1,    2,    15,   16,    17,   31,
                                             33, 1023, 1024, 1025, 16385, 40000};
  return sizes;
}

TEST(CpuPathsTest, ReductionsMatchFloat64OnEveryCopyAndEdgeSize) {
  for (Red r : {Red::kSum, Red::kMean, Red::kMax, Red::kMin, Red::kProd}) {
    for (int64_t n : ReductionSizes()) {
      if (r == Red::kMean && n == 0) continue;  // 0 / 0: checked in the NaN test below
      const float lo = r == Red::kProd ? 0.999f : -2.f, hi = r == Red::kProd ? 1.001f : 2.f;
      CheckReduction(r, RandomVector(n, 1 + n, lo, hi), 1, n, 1, "random");
      if (n <= 1025) {
        CheckReduction(r, RandomVector(3 * n, 2 + n, lo, hi), 3, n, 1, "rows");
        CheckReduction(r, RandomVector(2 * n * 17, 3 + n, lo, hi), 2, n, 17, "columns");
      }
    }
  }
}

// A NaN anywhere in what a Max or Min reduces makes the result NaN (numpy's max; Loom's
// Maximum, Minimum and MaxPool propagate NaN too); Inf follows IEEE in every reduction.
// The NaN sits at the first element, at a lane boundary, in a chunk's tail and last.
TEST(CpuPathsTest, ReductionsPropagateNaNAndInfWhereverTheyAre) {
  for (Red r : {Red::kSum, Red::kMean, Red::kMax, Red::kMin, Red::kProd}) {
    for (int64_t n : {1, 2, 15, 16, 17, 33, 1025, 16385}) {
      for (int64_t at : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, n / 2, n - 1}) {
        if (at >= n) continue;
        const float lo = r == Red::kProd ? 0.999f : -2.f, hi = r == Red::kProd ? 1.001f : 2.f;
        for (float special : {kNaN, -kNaN, kInf, -kInf}) {
          std::vector<float> v = RandomVector(n, 7 + n, lo, hi);
          v[at] = special;
          const std::string what = StrCat(special, " at ", at);
          CheckReduction(r, v, 1, n, 1, what);
          if (n <= 1025) {
            std::vector<float> rows = RandomVector(3 * n, 8 + n, lo, hi);
            rows[n + at] = special;  // row 1
            CheckReduction(r, rows, 3, n, 1, what);
            std::vector<float> cols = RandomVector(n * 5, 9 + n, lo, hi);
            cols[at * 5 + 3] = special;  // column 3
            CheckReduction(r, cols, 1, n, 5, what);
          }
        }
      }
    }
  }
  // +Inf and -Inf in one sum: NaN.
  std::vector<float> v = RandomVector(40, 3);
  v[3] = kInf;
  v[37] = -kInf;
  CheckReduction(Red::kSum, v, 1, 40, 1, "inf - inf");
}

// ---- the fused epilogues (nn_fused.cc) in both copies ----

// y + bias then ReLU as BiasAdd and Relu compute them: NaN kept, -0 and negatives to +0.
TEST(CpuPathsTest, BiasReluEpilogueMatchesTheScalarRuleOnEveryCopy) {
  ThreadPool pool(2);
  for (int64_t channels : {1, 7, 8, 15, 16, 17, 67}) {
    for (int64_t rows : {0, 1, 3, 40}) {
      std::vector<float> y = RandomVector(rows * channels, 11 + channels);
      std::vector<float> bias = RandomVector(channels, 12 + channels);
      if (!y.empty()) {
        const float specials[] = {kNaN, -kNaN, kInf, -kInf, -0.0f, 0.0f, 1e-40f, -1e-40f};
        for (size_t i = 0; i < y.size(); i += 5) y[i] = specials[(i / 5) % 8];
        bias[0] = channels > 2 ? -0.0f : bias[0];
        if (channels > 5) bias[5] = kNaN;
      }
      for (bool relu : {false, true}) {
        for (bool with_bias : {false, true}) {
          for (bool baseline : BaselineFlags()) {
            std::optional<ScopedBaselineVectorIsa> scope;
            if (baseline) scope.emplace();
            Tensor t = Tensor::FromVector<float>(y, {rows, channels});
            Tensor b = Tensor::FromVector<float>(bias, {channels});
            nn_internal::ApplyBiasRelu(pool, t, with_bias ? &b : nullptr, relu);
            for (int64_t i = 0; i < rows * channels; ++i) {
              float want = y[i];
              if (with_bias) want = want + bias[i % channels];
              if (relu) want = want <= 0 ? 0.0f : want;  // Relu: NaN stays
              ASSERT_TRUE(SameResult(t.data<float>()[i], want))
                  << "channels=" << channels << " rows=" << rows << " relu=" << relu
                  << " bias=" << with_bias << " baseline=" << baseline << " element " << i << ": "
                  << t.data<float>()[i] << " want " << want;
            }
          }
        }
      }
    }
  }
}

// ReluGrad (NaN features give NaN, as the unfused ReluGrad) and the bias gradient's column
// sums, in one pass, against float64.
TEST(CpuPathsTest, ReluGradAndBiasSumMatchTheReferenceOnEveryCopy) {
  ThreadPool pool(2);
  for (int64_t channels : {1, 15, 16, 17, 67}) {
    for (int64_t rows : {1, 3, 17, 600}) {
      std::vector<float> dy = RandomVector(rows * channels, 21 + rows);
      std::vector<float> x = RandomVector(rows * channels, 22 + rows);
      if (rows * channels > 20) {
        x[3] = kNaN;
        x[7] = 0.0f;
        x[8] = -0.0f;
        dy[11] = kInf;
        x[11] = 1;
      }
      for (bool baseline : BaselineFlags()) {
        std::optional<ScopedBaselineVectorIsa> scope;
        if (baseline) scope.emplace();
        const Tensor dyt = Tensor::FromVector<float>(dy, {rows, channels});
        const Tensor xt = Tensor::FromVector<float>(x, {rows, channels});
        Tensor out(kFloat32, Shape{rows, channels}), bias_grad(kFloat32, Shape{channels});
        nn_internal::ReluGradAndBiasSum(pool, dyt, xt, out, &bias_grad);
        std::vector<double> sum(channels, 0), mag(channels, 0);
        for (int64_t i = 0; i < rows * channels; ++i) {
          const float want = x[i] > 0 ? dy[i] : (std::isnan(x[i]) ? x[i] : 0.0f);
          ASSERT_TRUE(SameResult(out.data<float>()[i], want)) << "element " << i;
          sum[i % channels] += want;
          mag[i % channels] += std::abs(double{want});
        }
        for (int64_t j = 0; j < channels; ++j) {
          const float got = bias_grad.data<float>()[j];
          const std::string where =
              StrCat("channels=", channels, " rows=", rows, " baseline=", baseline, " bias ", j);
          if (std::isnan(sum[j])) {
            ASSERT_TRUE(std::isnan(got)) << where;
          } else if (std::isinf(sum[j])) {
            ASSERT_EQ(double{got}, sum[j]) << where;
          } else {
            ASSERT_LE(std::abs(got - sum[j]), (rows + 2) * kU32 * mag[j] + 1e-30) << where;
          }
        }
      }
    }
  }
}

// MaxPool and AvgPool (nn_pool.cc's vectorized row kernels) with NaN, ±Inf and -0 among the
// values, on both copies: a window holding a NaN gives NaN (MaxPool as numpy's max, AvgPool
// by IEEE), +Inf and -Inf as IEEE, else the window's max / mean (SAME windows count only
// the real elements), bitwise equal across copies.
TEST(CpuPathsTest, PoolsPropagateSpecialsOnEveryCopy) {
  const int64_t n = 2, h = 7, w = 9, c = 13;
  std::vector<float> x = RandomVector(n * h * w * c, 121);
  const float specials[] = {kNaN, -kNaN, kInf, -kInf, -0.0f};
  for (size_t i = 0; i < x.size(); i += 37) x[i] = specials[(i / 37) % 5];
  for (bool avg : {false, true}) {
    for (int64_t k : {2, 3}) {
      const int64_t oh = (h + 1) / 2, ow = (w + 1) / 2;  // SAME, stride 2
      const int64_t pad_h = std::max<int64_t>((oh - 1) * 2 + k - h, 0) / 2;
      const int64_t pad_w = std::max<int64_t>((ow - 1) * 2 + k - w, 0) / 2;
      std::vector<float> first;
      for (bool baseline : BaselineFlags()) {
        std::optional<ScopedBaselineVectorIsa> scope;
        if (baseline) scope.emplace();
        Graph graph;
        Scope s(graph);
        Output xo = Const(s, Tensor::FromVector<float>(x, {n, h, w, c}));
        Output y = avg ? AvgPool(s, xo, {1, k, k, 1}, {1, 2, 2, 1}, "SAME")
                       : MaxPool(s, xo, {1, k, k, 1}, {1, 2, 2, 1}, "SAME");
        Session session(graph, {.intra_op_threads = 2});
        const Tensor got = session.Eval(y);
        ASSERT_EQ(got.NumElements(), n * oh * ow * c);
        for (int64_t b = 0; b < n; ++b) {
          for (int64_t i = 0; i < oh; ++i) {
            for (int64_t j = 0; j < ow; ++j) {
              for (int64_t ch = 0; ch < c; ++ch) {
                double acc = avg ? 0 : -INFINITY;
                int64_t count = 0;
                bool nan = false;
                for (int64_t di = 0; di < k; ++di) {
                  for (int64_t dj = 0; dj < k; ++dj) {
                    const int64_t r = i * 2 - pad_h + di, q = j * 2 - pad_w + dj;
                    if (r < 0 || r >= h || q < 0 || q >= w) continue;
                    const double v = x[((b * h + r) * w + q) * c + ch];
                    nan |= std::isnan(v);
                    acc = avg ? acc + v : std::max(acc, v);
                    ++count;
                  }
                }
                if (avg) acc /= static_cast<double>(count);
                if (nan) acc = NAN;
                const float g = got.data<float>()[((b * oh + i) * ow + j) * c + ch];
                const bool ok = std::isnan(acc)   ? std::isnan(g)
                                : std::isinf(acc) ? double{g} == acc
                                                  : std::abs(g - acc) <= 1e-6 * (1 + std::abs(acc));
                ASSERT_TRUE(ok) << (avg ? "AvgPool " : "MaxPool ") << k << "x" << k
                                << " baseline=" << baseline << " at " << b << "," << i << "," << j
                                << "," << ch << ": got " << g << " want " << acc;
              }
            }
          }
        }
        if (first.empty()) {
          first.assign(got.data<float>(), got.data<float>() + got.NumElements());
        } else {
          for (size_t i = 0; i < first.size(); ++i) {
            ASSERT_TRUE(SameResult(first[i], got.data<float>()[i])) << "copies differ at " << i;
          }
        }
      }
    }
  }
}

// Whether oneDNN's ReLU post-op (max(y, 0), which turns NaN into 0) may replace Relu: never
// with a NaN or Inf operand (of either sign, in any position, the 65536-element scan chunks
// included), and only while k max|x| max|w| + max|b| stays below 2^120.
TEST(CpuPathsTest, ReluPostOpCheckSeesEveryNonFiniteOperandOnEveryCopy) {
  ThreadPool pool(2);
  const int64_t k = 75;
  for (bool baseline : BaselineFlags()) {
    std::optional<ScopedBaselineVectorIsa> scope;
    if (baseline) scope.emplace();
    for (int64_t n : {1, 15, 16, 17, 65536, 65537, 3 * 65536 + 5}) {
      const Tensor finite[3] = {Tensor::FromVector<float>(RandomVector(n, 31)),
                                Tensor::FromVector<float>(RandomVector(n, 32)),
                                Tensor::FromVector<float>(RandomVector(n, 33))};
      for (int64_t at : {int64_t{0}, int64_t{16}, n / 2, n - 1}) {
        if (at >= n) continue;
        for (float special : {kNaN, -kNaN, kInf, -kInf}) {
          for (int which = 0; which < 3; ++which) {
            Tensor poisoned = finite[which].Clone();
            poisoned.data<float>()[at] = special;
            const Tensor& x = which == 0 ? poisoned : finite[0];
            const Tensor& w = which == 1 ? poisoned : finite[1];
            const Tensor& b = which == 2 ? poisoned : finite[2];
            EXPECT_FALSE(nn_internal::ReluPostOpIsExact(x, w, &b, k, pool))
                << special << " in operand " << which << " at " << at << " of " << n
                << " baseline=" << baseline;
          }
        }
      }
      const Tensor x = Tensor::FromVector<float>(RandomVector(n, 34)),
                   w = Tensor::FromVector<float>(RandomVector(n, 35));
      EXPECT_TRUE(nn_internal::ReluPostOpIsExact(x, w, nullptr, k, pool)) << n;
      // A finite operand whose products may overflow: k * 2^60 * 2^60 >= 2^120.
      std::vector<float> big = RandomVector(n, 36);
      big[n - 1] = 0x1p60f;
      const Tensor xb = Tensor::FromVector<float>(big);
      EXPECT_FALSE(nn_internal::ReluPostOpIsExact(xb, xb, nullptr, k, pool)) << n;
      // Denormals and -0 are finite and tiny.
      std::vector<float> tiny(n, -0.0f);
      tiny[n - 1] = -1e-40f;
      const Tensor xt = Tensor::FromVector<float>(tiny);
      EXPECT_TRUE(nn_internal::ReluPostOpIsExact(xt, x, nullptr, k, pool)) << n;
    }
  }
}

// ---- the fused Conv2D + BiasAdd + Relu: the post-op gives way to a pass ----

struct ConvInputs {
  std::vector<float> x, w, b;
};

// conv -> bias -> relu over fed operands under `precision`, fused or not; returns the
// relu's output.
Tensor RunConvChain(const ConvInputs& in, bool fuse, Precision precision) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape::Unknown());
  Output w = Placeholder(s.WithOpName("w"), kFloat32, Shape::Unknown());
  Output b = Placeholder(s.WithOpName("b"), kFloat32, Shape::Unknown());
  Output y = Relu(s, BiasAdd(s, Conv2D(s, x, w, {1, 1}, "SAME", precision), b));
  Session session(graph, {.intra_op_threads = 2, .fuse_ops = fuse});
  RunOptions options{.trace = true};
  RunMetadata metadata;
  const FeedList feeds = {{x, Tensor::FromVector<float>(in.x, {2, 9, 9, 8})},
                          {w, Tensor::FromVector<float>(in.w, {3, 3, 8, 16})},
                          {b, Tensor::FromVector<float>(in.b, {16})}};
  auto out = session.Run(feeds, {y}, {}, &options, &metadata);
  bool fused = false;
  for (const auto& st : metadata.step_stats) fused |= st.op == "Conv2D+BiasAdd+Relu";
  EXPECT_EQ(fused, fuse) << "the chain did not fuse as asked";
  return out[0];
}

// Every case where oneDNN's ReLU post-op would turn a NaN into 0 keeps the NaN, as the
// unfused graph does: a NaN in the filter or the bias, an Inf (of either sign) in the
// input or filter meeting a zero or the other sign, and finite operands whose sums
// overflow into Inf - Inf; in float32 and in bf16 (the hardware path where the CPU has
// it, else the emulated one), with every other element equal to the unfused graph's.
TEST(CpuPathsTest, FusedConvReluKeepsEveryNaNTheUnfusedGraphHas) {
  std::vector<Precision> precisions = {Precision::kFloat32, Precision::kBf16Emulated};
  if (bf16::DetectHardware() != bf16::Hardware::kNone) precisions.push_back(Precision::kBf16Strict);
  struct Case {
    const char* name;
    std::function<void(ConvInputs&)> poison;
  };
  const std::vector<Case> cases = {
      {"NaN in the filter", [](ConvInputs& c) { c.w[5 * 8 * 16 + 3 * 16 + 2] = kNaN; }},
      {"NaN in the bias", [](ConvInputs& c) { c.b[7] = -kNaN; }},
      {"+Inf and -Inf in the input",
       [](ConvInputs& c) {
         c.x[(0 * 81 + 4 * 9 + 4) * 8 + 1] = kInf;
         c.x[(0 * 81 + 4 * 9 + 5) * 8 + 1] = -kInf;
         c.x[(1 * 81 + 0 * 9 + 0) * 8 + 0] = kInf;
       }},
      {"Inf in the filter meeting zeros",
       [](ConvInputs& c) {
         c.w[4 * 8 * 16 + 0 * 16 + 9] = kInf;
         for (int64_t i = 0; i < 2 * 81; i += 3) c.x[i * 8 + 0] = 0.0f;
       }},
  };
  for (Precision precision : precisions) {
    for (const Case& cs : cases) {
      ConvInputs in{RandomVector(2 * 81 * 8, 91), RandomVector(9 * 8 * 16, 92),
                    RandomVector(16, 93)};
      cs.poison(in);
      const Tensor fused = RunConvChain(in, true, precision);
      const Tensor plain = RunConvChain(in, false, precision);
      int64_t nans = 0;
      for (int64_t i = 0; i < plain.NumElements(); ++i) {
        const float f = fused.data<float>()[i], p = plain.data<float>()[i];
        nans += std::isnan(p);
        ASSERT_EQ(std::isnan(f), std::isnan(p))
            << cs.name << " (" << PrecisionName(precision) << ") element " << i << ": fused " << f
            << ", unfused " << p;
        if (std::isinf(p)) {
          ASSERT_EQ(f, p) << cs.name << " (" << PrecisionName(precision) << ") element " << i;
        } else if (!std::isnan(p)) {
          ASSERT_NEAR(f, p, 1e-5 * std::max(1.0f, std::abs(p)))
              << cs.name << " (" << PrecisionName(precision) << ") element " << i;
        }
      }
      EXPECT_GT(nans, 0) << cs.name << " (" << PrecisionName(precision)
                         << "): the unfused graph has no NaN: the case tests nothing";
    }
    // Finite operands with room to spare: the post-op runs, and agrees with the pass.
    ConvInputs in{RandomVector(2 * 81 * 8, 94), RandomVector(9 * 8 * 16, 95), RandomVector(16, 96)};
    const Tensor fused = RunConvChain(in, true, precision);
    const Tensor plain = RunConvChain(in, false, precision);
    for (int64_t i = 0; i < plain.NumElements(); ++i) {
      const float f = fused.data<float>()[i], p = plain.data<float>()[i];
      ASSERT_FALSE(std::isnan(f));
      ASSERT_NEAR(f, p, 1e-5 * std::max(1.0f, std::abs(p))) << PrecisionName(precision) << " " << i;
    }
    // Finite operands whose sums overflow (k max|x| max|w| past 2^120, so the ReLU is a
    // pass): +Inf stays, -Inf becomes 0, as unfused. (With fused multiply-adds a sum that
    // overflows saturates at one Inf, so no NaN arises here.)
    ConvInputs big{RandomVector(2 * 81 * 8, 97, 1e37f, 3e37f), RandomVector(9 * 8 * 16, 98, -8, 8),
                   RandomVector(16, 99)};
    const Tensor fused_big = RunConvChain(big, true, precision);
    const Tensor plain_big = RunConvChain(big, false, precision);
    int64_t infs = 0;
    for (int64_t i = 0; i < plain_big.NumElements(); ++i) {
      const float f = fused_big.data<float>()[i], p = plain_big.data<float>()[i];
      infs += std::isinf(p);
      ASSERT_TRUE(SameResult(f, p) || std::abs(f - p) <= 1e-5f * std::abs(p))
          << "overflow (" << PrecisionName(precision) << ") element " << i << ": fused " << f
          << ", unfused " << p;
    }
    EXPECT_GT(infs, 0) << PrecisionName(precision) << ": no sum overflowed: the case tests nothing";
  }
}

// ArgMax and ArgMin return the first NaN's index, as numpy does and as Max and Min (which
// propagate NaN) imply; otherwise the first extreme.
TEST(CpuPathsTest, ArgMaxAndArgMinPointAtTheFirstNaN) {
  Graph graph;
  Scope s(graph);
  auto x =
      Const(s, Tensor::FromVector<float>({1, kNaN, 5, -kNaN, 2, 0, 3, -1, 7, 7, -4, -4}, {3, 4}));
  Session session(graph);
  const Tensor max_rows = session.Eval(ArgMax(s, x, 1)), min_rows = session.Eval(ArgMin(s, x, 1));
  const Tensor max_cols = session.Eval(ArgMax(s, x, 0)), min_cols = session.Eval(ArgMin(s, x, 0));
  auto values = [](const Tensor& t) {
    return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.NumElements());
  };
  EXPECT_EQ(values(max_rows), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(values(min_rows), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(values(max_cols), (std::vector<int64_t>{2, 0, 0, 0}));
  EXPECT_EQ(values(min_cols), (std::vector<int64_t>{0, 0, 2, 0}));
}

}  // namespace
}  // namespace loom
