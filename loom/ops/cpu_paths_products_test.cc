// The products that pick their code by CPU at run time, on the paths this CPU runs, against
// float64 (or long double) references at edge shapes and with NaN, Inf, -0 and denormals
// among the values (session 16's campaign, docs/faults.md; cpu_paths_test.cc has the
// element-wise paths):
// - blas.h's GEMM variants (BLAS, AVX2 + FMA, AVX-512) and both libraries: IEEE specials;
// - bf16.h's conversions (AVX-512 BF16 or scalar) at short lengths, and the bf16 hardware
//   products and convolutions (oneDNN's avx512_core_bf16 or AMX) at edge shapes and with
//   specials; float32 convolutions with specials;
// - onednn_matmul.h's WeightLayouts: at most 8 layouts per copy, later shapes read the bits.
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

}  // namespace
}  // namespace loom
