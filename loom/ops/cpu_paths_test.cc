// The kernels that pick their code by CPU at run time, on the paths this CPU runs, against
// float64 (or scalar) references at the sizes their vector loops handle separately (n = 0,
// 1, 15, 16, 17, lane and chunk boundaries, odd strides) and with NaN, Inf, -0 and
// denormals among the values (session 16's campaign, docs/faults.md). The paths:
// - vector_isa.h's two copies (baseline x86-64, AVX2): the reductions, the fused
//   bias + ReLU epilogue and ReLU gradient with its bias sum, and the max-|x| scan that
//   decides whether oneDNN's ReLU post-op may run (vector_isa_test has the elementwise ops);
// - blas.h's GEMM variants (BLAS, AVX2 + FMA, AVX-512) and both libraries: IEEE specials;
// - bf16.h's conversions (AVX-512 BF16 or scalar) at short lengths, and the bf16 hardware
//   products (oneDNN's avx512_core_bf16 or AMX) at edge shapes and with specials;
// - onednn_matmul.h's WeightLayouts: at most 8 layouts per copy, later shapes read the bits;
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

using internal::ScopedBaselineVectorIsa;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kU32 = 1.0 / (1 << 24);

std::vector<float> RandomVector(int64_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

// Equal as results: both NaN, or the same bits (so -0 differs from +0).
bool SameResult(float a, float b) { return (std::isnan(a) && std::isnan(b)) || Bits(a) == Bits(b); }

// The paths Vectorized runs on this CPU: the baseline copy always, the active one too.
std::vector<bool> BaselineFlags() {
  return internal::CpuHasAvx2() ? std::vector<bool>{true, false} : std::vector<bool>{true};
}

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

// ---- GEMM: every variant and library with IEEE specials ----

using GemmFn = std::function<void(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                  int64_t, const float*, int64_t, float, float*, int64_t)>;

std::vector<std::pair<std::string, GemmFn>> GemmPaths() {
  std::vector<std::pair<std::string, GemmFn>> paths;
  for (GemmVariant v : {GemmVariant::kBlas, GemmVariant::kAvx2, GemmVariant::kAvx512}) {
    if (!CpuSupports(v)) continue;
    paths.emplace_back(GemmVariantName(v), [v](auto... args) { GemmWithVariant(v, args...); });
  }
  for (GemmLibrary l : {GemmLibrary::kOpenBlas, GemmLibrary::kOnednn}) {
    paths.emplace_back(GemmLibraryName(l), [l](auto... args) { GemmWithLibrary(l, args...); });
  }
  paths.emplace_back("Gemm", [](auto... args) { Gemm(args...); });
  return paths;
}

// A NaN, an Inf of each sign and exact zeros in A and B: every element of C is what
// IEEE arithmetic gives (NaN where a NaN or Inf * 0 or Inf - Inf reaches it, the signed
// Inf where only one kind of Inf does), on every path, with the narrow kernels' masks,
// pairs and row blocks all exercised (n <= 16 and beyond).
TEST(CpuPathsTest, EveryGemmPathPropagatesNaNAndInfAsIeee) {
  const auto paths = GemmPaths();
  std::mt19937 rng(41);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : {1, 5, 8, 17, 33}) {
        for (int64_t n : {1, 7, 16, 17, 40}) {
          for (int64_t k : {1, 3, 16, 17}) {
            const int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 1;
            std::vector<float> a = RandomVector((ta ? k : m) * lda, rng());
            std::vector<float> b = RandomVector((tb ? n : k) * ldb, rng());
            auto at = [&](int64_t i, int64_t p) -> float& {
              return ta ? a[p * lda + i] : a[i * lda + p];
            };
            auto bt = [&](int64_t p, int64_t j) -> float& {
              return tb ? b[j * ldb + p] : b[p * ldb + j];
            };
            // Row 0 of A: a NaN at p = 0; the last row: +Inf at the last p; column 0 of
            // B: -Inf at p = 0 (meets row 0's NaN and the other rows' finite values);
            // zeros in B's last row meet the last row's Inf (Inf * 0 = NaN).
            at(0, 0) = kNaN;
            at(m - 1, k - 1) = kInf;
            bt(0, 0) = -kInf;
            for (int64_t j = 0; j < n; j += 2) bt(k - 1, j) = 0.0f;
            for (float beta : {0.0f, 1.0f}) {
              const std::vector<float> c0 = RandomVector(m * ldc, rng());
              for (const auto& [name, gemm] : paths) {
                std::vector<float> c = c0;
                gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
                for (int64_t i = 0; i < m; ++i) {
                  for (int64_t j = 0; j < n; ++j) {
                    double want = beta == 0 ? 0.0 : double{c0[i * ldc + j]};
                    double mag = std::abs(want);
                    for (int64_t p = 0; p < k; ++p) {
                      want += double{at(i, p)} * bt(p, j);
                      mag += std::abs(double{at(i, p)} * bt(p, j));
                    }
                    const float got = c[i * ldc + j];
                    const std::string where =
                        StrCat(name, " ta=", ta, " tb=", tb, " m=", m, " n=", n, " k=", k,
                               " beta=", beta, " at ", i, ",", j, ": got ", got, " want ", want);
                    if (std::isnan(want)) {
                      ASSERT_TRUE(std::isnan(got)) << where;
                    } else if (std::isinf(want)) {
                      ASSERT_EQ(double{got}, want) << where;
                    } else {
                      ASSERT_LE(std::abs(got - want), (k + 2) * 2 * kU32 * mag + 1e-30) << where;
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// The float64 product (always OpenBLAS, whose kernel OpenBLAS picks for this CPU) against
// a long double reference: edge shapes, transposes, wide leading dimensions, beta 0 over a
// NaN C (not read), and NaN / Inf / Inf * 0 placed as in the float32 test.
TEST(CpuPathsTest, Float64GemmMatchesALongDoubleReference) {
  std::mt19937_64 rng(131);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : {1, 3, 8, 17}) {
        for (int64_t n : {1, 4, 7, 16, 33}) {
          for (int64_t k : {1, 2, 9, 31}) {
            for (int variant = 0; variant < 2; ++variant) {
              const bool specials = variant == 1;
              const int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
              std::vector<double> a((ta ? k : m) * lda), b((tb ? n : k) * ldb);
              for (double& v : a) v = dist(rng);
              for (double& v : b) v = dist(rng);
              auto at = [&](int64_t i, int64_t p) -> double& {
                return ta ? a[p * lda + i] : a[i * lda + p];
              };
              auto bt = [&](int64_t p, int64_t j) -> double& {
                return tb ? b[j * ldb + p] : b[p * ldb + j];
              };
              if (specials) {
                at(0, 0) = NAN;
                at(m - 1, k - 1) = INFINITY;
                bt(k - 1, n - 1) = 0.0;
              }
              for (double beta : {0.0, 0.5}) {
                std::vector<double> c(m * ldc);
                for (double& v : c) v = beta == 0 ? NAN : dist(rng);
                const std::vector<double> c0 = c;
                Gemm(ta, tb, m, n, k, 1.0, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
                for (int64_t i = 0; i < m; ++i) {
                  for (int64_t j = 0; j < ldc; ++j) {
                    const double got = c[i * ldc + j];
                    if (j >= n) {
                      const double before = c0[i * ldc + j];
                      ASSERT_TRUE((std::isnan(got) && std::isnan(before)) || got == before)
                          << "padding written";
                      continue;
                    }
                    long double want =
                        beta == 0 ? 0.0L : beta * static_cast<long double>(c0[i * ldc + j]);
                    long double mag = std::abs(want);
                    for (int64_t p = 0; p < k; ++p) {
                      const long double t = static_cast<long double>(at(i, p)) * bt(p, j);
                      want += t;
                      mag += std::abs(t);
                    }
                    const bool ok = std::isnan(want) ? std::isnan(got)
                                    : std::isinf(want)
                                        ? got == want
                                        : std::abs(got - want) <= (k + 2) * 0x1p-52 * mag;
                    ASSERT_TRUE(ok)
                        << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n << " k=" << k
                        << " variant=" << variant << " beta=" << beta << " at " << i << "," << j
                        << ": got " << got << " want " << static_cast<double>(want);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

// Empty products: m or n = 0 touch nothing; k = 0 gives C = beta * C (0 when beta = 0,
// whatever C held: BLAS does not read C then).
TEST(CpuPathsTest, EveryGemmPathHandlesEmptyProducts) {
  for (const auto& [name, gemm] : GemmPaths()) {
    float a = 1, b = 1;
    std::vector<float> c = {kNaN, 3, 4};
    gemm(false, false, 0, 3, 2, 1.0f, &a, 2, &b, 3, 0.0f, c.data(), 3);
    gemm(false, false, 1, 0, 2, 1.0f, &a, 2, &b, 1, 0.0f, c.data(), 1);
    EXPECT_TRUE(std::isnan(c[0]) && c[1] == 3 && c[2] == 4) << name << ": an empty C was written";
    gemm(false, false, 1, 3, 0, 1.0f, &a, 1, &b, 3, 0.5f, c.data(), 3);
    EXPECT_TRUE(std::isnan(c[0]) && c[1] == 1.5f && c[2] == 2.0f) << name << ": k = 0, beta 0.5";
    gemm(false, false, 1, 3, 0, 1.0f, &a, 1, &b, 3, 0.0f, c.data(), 3);
    EXPECT_TRUE(c[0] == 0 && c[1] == 0 && c[2] == 0) << name << ": k = 0, beta 0";
  }
}

// ---- bf16 conversions and hardware products ----

// The array conversions at lengths below, at and around the 16- and 32-float vector steps,
// with a denormal (which the vector instructions flush) and a NaN in every position.
TEST(CpuPathsTest, Bf16ConversionsAtShortLengthsMatchTheScalarRounding) {
  ThreadPool pool(2);
  for (int64_t n = 0; n <= 70; ++n) {
    for (int64_t special = -1; special < n; ++special) {
      for (float value : {1.5e-39f, -kNaN}) {
        std::vector<float> in = RandomVector(n, 50 + n);
        if (special >= 0) in[special] = value;
        std::vector<uint16_t> bits(n + 1, 0xabcd);
        std::vector<float> rounded(n + 1, 7.0f);
        bf16::FloatToBf16(in.data(), bits.data(), n);
        bf16::RoundToBf16(in.data(), rounded.data(), n, pool);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(bits[i], bf16::FloatToBf16Bits(in[i])) << "n=" << n << " at " << i;
          ASSERT_EQ(Bits(rounded[i]), Bits(bf16::RoundToBf16(in[i]))) << "n=" << n << " at " << i;
        }
        ASSERT_EQ(bits[n], 0xabcd) << "n=" << n << ": wrote past the end";
        ASSERT_EQ(rounded[n], 7.0f) << "n=" << n << ": wrote past the end";
      }
    }
  }
}

// The hardware bf16 product (oneDNN's kernels for this CPU's bf16 instructions) at edge
// shapes, against float64 of the bf16-rounded operands; NaN and Inf propagate as IEEE.
// Loom passes dense operands (leading dimension = stored columns): oneDNN runs its brgemm
// kernels on them. Strided operands (checked with finite values only) run its gemm:jit
// kernel, which on an AMD EPYC (Zen 4, AVX-512 BF16) turned an -Inf of the last row into
// NaN at m >= 16 (docs/faults.md, session 16); no Loom product passes strides.
TEST(CpuPathsTest, HardwareBf16ProductsAtEdgeShapesAndWithSpecials) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has no bf16 hardware";
  }
  ThreadPool pool(2);
  std::mt19937 rng(61);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int64_t m : {1, 16, 17}) {
        for (int64_t n : {1, 15, 16, 17, 33}) {
          for (int64_t k : {1, 16, 17, 33}) {
            for (int variant = 0; variant < 3; ++variant) {
              const bool specials = variant == 1, padded = variant == 2;
              const int64_t lda = (ta ? m : k) + (padded ? 1 : 0);
              const int64_t ldb = (tb ? k : n) + (padded ? 3 : 0);
              std::vector<float> a = RandomVector((ta ? k : m) * lda, rng());
              std::vector<float> b = RandomVector((tb ? n : k) * ldb, rng());
              auto at = [&](int64_t i, int64_t p) -> float& {
                return ta ? a[p * lda + i] : a[i * lda + p];
              };
              auto bt = [&](int64_t p, int64_t j) -> float& {
                return tb ? b[j * ldb + p] : b[p * ldb + j];
              };
              if (specials) {
                at(0, 0) = kNaN;
                at(m - 1, k - 1) = kInf;
                bt(k - 1, n - 1) = 0.0f;  // Inf * 0 at (m - 1, n - 1)
                if (n > 1) bt(k - 1, 0) = -2.0f;
                // Next to the previous row's end in memory (a kernel pairing k's odd tail
                // with the next element would spread it into row m - 3).
                if (m > 3) at(m - 2, 0) = -kInf;
              }
              std::vector<float> c(m * n, 99.0f);
              ASSERT_TRUE(bf16::OnednnMatMulBf16(ta, tb, m, n, k, a.data(), lda, b.data(), ldb,
                                                 c.data(), pool));
              for (int64_t i = 0; i < m; ++i) {
                for (int64_t j = 0; j < n; ++j) {
                  double want = 0, mag = 0;
                  for (int64_t p = 0; p < k; ++p) {
                    const double t =
                        double{bf16::RoundToBf16(at(i, p))} * bf16::RoundToBf16(bt(p, j));
                    want += t;
                    mag += std::abs(t);
                  }
                  const float got = c[i * n + j];
                  const bool ok = std::isnan(want)   ? std::isnan(got)
                                  : std::isinf(want) ? double{got} == want
                                                     : std::abs(got - want) <= k * kU32 * mag;
                  ASSERT_TRUE(ok) << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n
                                  << " k=" << k << " variant=" << variant << " at " << i << "," << j
                                  << ": got " << got << " want " << want << " ("
                                  << bf16::CpuModelName() << ", oneDNN's "
                                  << bf16::OnednnMatMulBf16Impl(ta, tb, m, n, k, lda, ldb, 2)
                                  << ")";
                }
              }
            }
          }
        }
      }
    }
  }
}

// The hardware bf16 convolution and both its gradients with odd and even channel counts
// (bf16 kernels pair channels) and one NaN or ±Inf input pixel, filter tap or output
// gradient, with odd and even output channel counts: NaN and Inf appear exactly where the
// emulated path (software rounding, float32 products) has them, the other values agree.
// On a Zen 4 EPYC oneDNN 2.6's bf16 forward kernel with blocked activations spread an
// input's Inf or NaN over an odd channel count as NaN into outputs whose windows exclude
// it, and its input-gradient kernel with NHWC activations turned an Inf of dy into NaN over
// an odd output-channel count: those passes run emulated (nn_conv.cc).
TEST(CpuPathsTest, HardwareBf16ConvolutionsKeepSpecialsInTheirWindows) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has no bf16 hardware";
  }
  for (int64_t channels : {3, 4, 5, 8, 9, 16}) {
    for (int poison = 0; poison < 12; ++poison) {
      const int64_t out = poison < 6 ? 7 : 8;  // odd and even output channel counts
      std::vector<float> x = RandomVector(2 * 6 * 7 * channels, 101 + channels);
      std::vector<float> w = RandomVector(3 * 3 * channels * out, 102 + channels);
      std::vector<float> dy = RandomVector(2 * 6 * 7 * out, 103 + channels);
      const float special = poison % 2 == 0 ? kInf : kNaN;
      const int kind = poison % 6;
      if (kind < 2) {
        x[((1 * 6 + 2) * 7 + 3) * channels + channels - 1] = special;  // the last channel
      } else if (kind < 4) {
        w[((1 * 3 + 1) * channels + channels - 1) * out + 2] = -special;
      } else {
        dy[((0 * 6 + 3) * 7 + 2) * out + out - 1] = special;
      }
      auto run = [&](Precision precision) {
        Graph graph;
        Scope s(graph);
        Output xo = Const(s, Tensor::FromVector<float>(x, {2, 6, 7, channels}));
        Output wo = Const(s, Tensor::FromVector<float>(w, {3, 3, channels, out}));
        Output dyo = Const(s, Tensor::FromVector<float>(dy, {2, 6, 7, out}));
        Output y = Conv2D(s, xo, wo, {1, 1}, "SAME", precision);
        auto grads = Gradients(s, {y}, {xo, wo}, {dyo});
        Session session(graph, {.intra_op_threads = 2});
        return session.Run({}, {y, grads[0], grads[1]});
      };
      const auto hw = run(Precision::kBf16Strict), em = run(Precision::kBf16Emulated);
      for (size_t o = 0; o < hw.size(); ++o) {
        int64_t specials = 0;
        for (int64_t i = 0; i < em[o].NumElements(); ++i) {
          const float h = hw[o].data<float>()[i], e = em[o].data<float>()[i];
          specials += !std::isfinite(e);
          const bool ok = std::isnan(e) ? std::isnan(h)
                          : std::isinf(e)
                              ? h == e
                              : std::isfinite(h) && std::abs(h - e) <= 1e-4f * (1 + std::abs(e));
          ASSERT_TRUE(ok) << "channels " << channels << " poison " << poison << " output " << o
                          << " element " << i << ": hardware " << h << ", emulated " << e;
        }
        if (o == (poison % 6 < 4 ? 0 : 1)) {
          EXPECT_GT(specials, 0) << "channels " << channels << " poison " << poison;
        }
      }
    }
  }
}

// The float32 convolution (oneDNN's kernels where it takes the shape) and both gradients,
// with the same specials, against the float64 graph (im2col and OpenBLAS): NaN and Inf in
// the same places, the other values within float32 rounding.
TEST(CpuPathsTest, Float32ConvolutionsKeepSpecialsInTheirWindows) {
  for (int64_t channels : {1, 3, 8}) {
    for (int poison = 0; poison < 6; ++poison) {
      const int64_t out = 7;
      std::vector<float> x = RandomVector(2 * 6 * 7 * channels, 111 + channels);
      std::vector<float> w = RandomVector(3 * 3 * channels * out, 112 + channels);
      std::vector<float> dy = RandomVector(2 * 6 * 7 * out, 113 + channels);
      const float special = poison % 2 == 0 ? kInf : kNaN;
      if (poison < 2) {
        x[((1 * 6 + 2) * 7 + 3) * channels + channels - 1] = special;
      } else if (poison < 4) {
        w[((1 * 3 + 1) * channels + channels - 1) * out + 2] = -special;
      } else {
        dy[((0 * 6 + 3) * 7 + 2) * out + out - 1] = special;
      }
      auto run = [&](DType dtype) {
        auto as = [dtype](const std::vector<float>& v, const Shape& shape) {
          Tensor t = Tensor::FromVector<float>(v, shape);
          if (dtype == kFloat32) return t;
          Tensor d(kFloat64, shape);
          for (int64_t i = 0; i < t.NumElements(); ++i) d.data<double>()[i] = t.data<float>()[i];
          return d;
        };
        Graph graph;
        Scope s(graph);
        Output xo = Const(s, as(x, {2, 6, 7, channels}));
        Output wo = Const(s, as(w, {3, 3, channels, out}));
        Output dyo = Const(s, as(dy, {2, 6, 7, out}));
        Output y = Conv2D(s, xo, wo, {1, 1}, "SAME");
        auto grads = Gradients(s, {y}, {xo, wo}, {dyo});
        Session session(graph, {.intra_op_threads = 2});
        return session.Run({}, {y, grads[0], grads[1]});
      };
      const auto f32 = run(kFloat32), f64 = run(kFloat64);
      for (size_t o = 0; o < f32.size(); ++o) {
        for (int64_t i = 0; i < f64[o].NumElements(); ++i) {
          const double h = f32[o].data<float>()[i], e = f64[o].data<double>()[i];
          const bool ok = std::isnan(e) ? std::isnan(h)
                          : std::isinf(e)
                              ? h == e
                              : std::isfinite(h) && std::abs(h - e) <= 1e-4 * (1 + std::abs(e));
          ASSERT_TRUE(ok) << "channels " << channels << " poison " << poison << " output " << o
                          << " element " << i << ": float32 " << h << ", float64 " << e;
        }
      }
    }
  }
}

// A copy's oneDNN layouts (WeightLayouts) are made from its bits on a shape's first product
// and reused for that shape; at most 8 shapes get one, and products of further shapes read
// the bits as they are. Shown by changing the bits behind the layouts' back (which no
// caller does: a copy's bits never change): the 8 shapes with a layout still compute with
// the old bits, the 9th and 10th with the new ones. Every product is exact for the bits
// it used.
TEST(CpuPathsTest, WeightLayoutsKeepEightShapesAndLaterShapesReadTheBits) {
  if (bf16::DetectHardware() == bf16::Hardware::kNone) {
    GTEST_SKIP() << "this CPU (" << bf16::CpuModelName() << ") has no bf16 hardware";
  }
  ThreadPool pool(2);
  const int64_t k = 96, n = 40;
  const std::vector<float> b_old = RandomVector(k * n, 71), b_new = RandomVector(k * n, 72);
  std::vector<uint16_t> bits(k * n), bits_new(k * n);
  bf16::FloatToBf16(b_old.data(), bits.data(), k * n);
  bf16::FloatToBf16(b_new.data(), bits_new.data(), k * n);
  bf16::WeightLayouts layouts;
  auto product = [&](int64_t m, const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<float> c(m * n);
    EXPECT_TRUE(bf16::OnednnMatMulBf16(false, false, m, n, k, a.data(), k, b.data(), n, c.data(),
                                       pool, nullptr, bits.data(), &layouts));
    return c;
  };
  auto check = [&](int64_t m, const std::vector<float>& a, const std::vector<float>& b,
                   const std::vector<float>& c, const std::string& what) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double t =
              double{bf16::RoundToBf16(a[i * k + p])} * bf16::RoundToBf16(b[p * n + j]);
          want += t;
          mag += std::abs(t);
        }
        ASSERT_LE(std::abs(c[i * n + j] - want), k * kU32 * mag + 1e-30)
            << what << " m=" << m << " at " << i << "," << j;
      }
    }
  };
  std::vector<std::vector<float>> as;
  for (int64_t m = 1; m <= 10; ++m) {
    as.push_back(RandomVector(m * k, 80 + m));
    check(m, as.back(), b_old, product(m, as.back(), b_old), "first product");
  }
  std::memcpy(bits.data(), bits_new.data(), bits.size() * sizeof(uint16_t));
  for (int64_t m = 1; m <= 10; ++m) {
    const std::vector<float> c = product(m, as[m - 1], b_new);
    check(m, as[m - 1], m <= 8 ? b_old : b_new, c,
          m <= 8 ? "a shape with a kept layout (the old bits)" : "a shape past the 8 (the bits)");
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
