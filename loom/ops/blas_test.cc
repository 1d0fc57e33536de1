#include "loom/ops/blas.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "loom/testing/cpuinfo.h"

namespace loom {
namespace {

using ::loom::testing::CpuinfoHasFlag;

TEST(GemmDispatchTest, PicksTheWidestVariantThisCpuHas) {
#if defined(__x86_64__) && defined(__linux__)
  GemmVariant want = GemmVariant::kBlas;
  if (CpuinfoHasFlag("avx512f") && CpuinfoHasFlag("avx512dq")) {
    want = GemmVariant::kAvx512;
  } else if (CpuinfoHasFlag("avx2") && CpuinfoHasFlag("fma")) {
    want = GemmVariant::kAvx2;
  }
  EXPECT_EQ(GemmVariantName(ActiveGemmVariant()), std::string(GemmVariantName(want)));
  EXPECT_EQ(CpuSupports(GemmVariant::kAvx2), want != GemmVariant::kBlas);
  EXPECT_EQ(CpuSupports(GemmVariant::kAvx512), want == GemmVariant::kAvx512);
#else
  EXPECT_EQ(ActiveGemmVariant(), GemmVariant::kBlas);
#endif
  EXPECT_TRUE(CpuSupports(GemmVariant::kBlas));
  std::printf("Gemm variant on this CPU: %s\n", GemmVariantName(ActiveGemmVariant()));
}

// Every variant this CPU runs (the BLAS-only one always) and each library on its own
// (OpenBLAS, oneDNN's dnnl_sgemm) against a float64 reference over
// every transpose, row remainders of each kernel's row blocks (8 for the AVX-512 row
// kernel, 4 for AVX2; 32 + 8 rows for the column-pair weight-gradient kernel, 4 for its
// forward one: m = 70 is 2 blocks of 32 and 6 rows, m = 48 one of 32 and two of 8), k's
// below and above the forward pair kernel's 16 with and without a k % 8 tail, column
// counts on both sides of the 8-lane AVX2 register (odd ones leave half a column pair),
// leading dimensions wider than the matrices, C contiguous (the pair kernel's full-width
// block stores) and not, and alpha / beta. With beta = 0, C is written without
// being read (a NaN there does not survive), as BLAS defines it.
TEST(GemmDispatchTest, EveryVariantAndLibraryMatchesTheFloat64Reference) {
  using GemmFn = std::function<void(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                                    int64_t, const float*, int64_t, float, float*, int64_t)>;
  std::vector<std::pair<std::string, GemmFn>> variants;
  for (GemmVariant v : {GemmVariant::kBlas, GemmVariant::kAvx2, GemmVariant::kAvx512}) {
    if (!CpuSupports(v)) continue;
    variants.emplace_back(GemmVariantName(v), [v](auto... args) { GemmWithVariant(v, args...); });
  }
  for (GemmLibrary l : {GemmLibrary::kOpenBlas, GemmLibrary::kOnednn}) {
    variants.emplace_back(GemmLibraryName(l), [l](auto... args) { GemmWithLibrary(l, args...); });
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : {1, 3, 4, 7, 8, 13, 33, 48, 70})
        for (int64_t n : {1, 5, 8, 9, 10, 16, 17})
          for (int64_t k : {0, 1, 6, 16, 21, 67})
            for (auto [alpha, beta] :
                 {std::pair{1.f, 0.f}, std::pair{0.5f, 1.f}, std::pair{2.f, -0.25f}}) {
              // Odd m: rows of C apart (padding); even m: C contiguous (ldc = n).
              const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2,
                            ldc = n + (m % 2 == 1 ? 5 : 0);
              std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c0(m * ldc);
              for (float& v : a) v = dist(rng);
              for (float& v : b) v = dist(rng);
              for (float& v : c0)
                v = beta == 0.f ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
              for (const auto& [name, gemm] : variants) {
                SCOPED_TRACE(::testing::Message()
                             << name << " ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n
                             << " k=" << k << " alpha=" << alpha << " beta=" << beta);
                std::vector<float> c = c0;
                gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
                for (int64_t i = 0; i < m; ++i)
                  for (int64_t j = 0; j < ldc; ++j) {
                    const float got = c[i * ldc + j], before = c0[i * ldc + j];
                    if (j >= n) {  // padding between rows is never touched
                      ASSERT_TRUE(got == before || (std::isnan(got) && std::isnan(before)));
                      continue;
                    }
                    double want = 0;
                    for (int64_t l = 0; l < k; ++l) {
                      const double av = ta ? a[l * lda + i] : a[i * lda + l];
                      const double bv = tb ? b[j * ldb + l] : b[l * ldb + j];
                      want += av * bv;
                    }
                    want = alpha * want + (beta == 0.f ? 0.0 : beta * double{before});
                    ASSERT_NEAR(got, want, 1e-5 * (1 + k)) << "at " << i << "," << j;
                  }
              }
            }
}

// The rule of blas.h, on this CPU's kind.
TEST(GemmDispatchTest, ChoosesTheLibraryByShapeAndCpu) {
  const bool avx512 = ActiveGemmVariant() == GemmVariant::kAvx512;
  auto choice = [](int64_t m, int64_t n, int64_t k) {
    return std::string(GemmLibraryName(ChooseGemmLibrary(false, false, m, n, k)));
  };
  EXPECT_EQ(choice(256, 512, 784), avx512 ? "onednn" : "openblas");  // the MLP's first layer
  EXPECT_EQ(choice(512, 512, 256), avx512 ? "onednn" : "openblas");  // its weight gradient
  EXPECT_EQ(choice(64, 1024, 3136), "onednn");  // the convnet's dense layer, batch 64
  EXPECT_EQ(choice(3136, 1024, 64), "onednn");  // its weight gradient
  EXPECT_EQ(choice(256, 512, 10), "onednn");    // the logits layer's input gradient
  EXPECT_EQ(choice(64, 64, 0), "openblas");     // k = 0: C = beta * C
  std::printf("GEMM library for 256x512x784 on this CPU: %s\n", choice(256, 512, 784).c_str());
}

// C = alpha * A B^T + beta * C through C^T = B A^T on each library against a float64
// reference: short and wide C (the rule's shapes) and small ones, leading dimensions wider
// than the matrices (C's padding never touched), alpha / beta, and beta = 0 writing C
// without reading it (a NaN there does not survive).
TEST(GemmDispatchTest, TheTransposedProductMatchesTheFloat64Reference) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  struct Case {
    int64_t m, n, k;
  };
  for (const Case& s : {Case{64, 1024, 256}, Case{3, 1030, 300}, Case{1, 5, 1}, Case{7, 17, 21},
                        Case{5, 9, 0}, Case{0, 4, 3}}) {
    for (const auto& [alpha, beta] : {std::pair{1.f, 0.f}, std::pair{2.f, -0.25f}}) {
      const int64_t lda = s.k + 3, ldb = s.k + 1, ldc = s.n + 5;
      std::vector<float> a(s.m * lda), b(s.n * ldb), c0(s.m * ldc);
      for (float& v : a) v = dist(rng);
      for (float& v : b) v = dist(rng);
      for (float& v : c0) v = beta == 0.f ? std::numeric_limits<float>::quiet_NaN() : dist(rng);
      for (GemmLibrary library : {GemmLibrary::kOpenBlas, GemmLibrary::kOnednn}) {
        SCOPED_TRACE(::testing::Message() << GemmLibraryName(library) << " m=" << s.m
                                          << " n=" << s.n << " k=" << s.k << " beta=" << beta);
        std::vector<float> c = c0;
        GemmByTransposedProduct(library, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta,
                                c.data(), ldc);
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < ldc; ++j) {
            const float got = c[i * ldc + j], before = c0[i * ldc + j];
            if (j >= s.n) {
              ASSERT_TRUE(got == before || (std::isnan(got) && std::isnan(before)));
              continue;
            }
            double want = 0;
            for (int64_t l = 0; l < s.k; ++l) want += double{a[i * lda + l]} * b[j * ldb + l];
            want = alpha * want + (beta == 0.f ? 0.0 : beta * double{before});
            ASSERT_NEAR(got, want, 1e-5 * (1 + s.k)) << "at " << i << "," << j;
          }
        }
      }
    }
  }
}

// The transposed product's rule: only B transposed, A short, C wide, k not small, and only
// on AMD CPUs with AVX-512F (where it was measured).
TEST(GemmDispatchTest, ChoosesTheTransposedProductOnlyWhereMeasured) {
#if defined(__x86_64__) && defined(__linux__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream text;
  text << cpuinfo.rdbuf();
  const bool amd = text.str().find("AuthenticAMD") != std::string::npos;
  const bool measured = amd && CpuinfoHasFlag("avx512f");
#else
  const bool measured = false;
#endif
  EXPECT_EQ(ChooseTransposedProduct(false, true, 64, 3136, 1024), measured);  // dense dX
  EXPECT_FALSE(ChooseTransposedProduct(false, false, 64, 3136, 1024));
  EXPECT_FALSE(ChooseTransposedProduct(true, true, 64, 3136, 1024));
  EXPECT_FALSE(ChooseTransposedProduct(false, true, 65, 3136, 1024));
  EXPECT_FALSE(ChooseTransposedProduct(false, true, 64, 1023, 1024));
  EXPECT_FALSE(ChooseTransposedProduct(false, true, 64, 3136, 255));
  EXPECT_FALSE(ChooseTransposedProduct(false, true, 256, 512, 512));  // the MLP's dX
  // Through Gemm, the rule's shape gives the transposed product's bits.
  const int64_t m = 64, n = 1024, k = 256;
  std::vector<float> a(m * k), b(n * k), c(m * n), want(m * n);
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  Gemm(false, true, m, n, k, 1.f, a.data(), k, b.data(), k, 0.f, c.data(), n);
  if (measured) {
    GemmByTransposedProduct(ChooseGemmLibrary(false, false, n, m, k), m, n, k, 1.f, a.data(), k,
                            b.data(), k, 0.f, want.data(), n);
  } else {
    GemmWithLibrary(ChooseGemmLibrary(false, true, m, n, k), false, true, m, n, k, 1.f, a.data(), k,
                    b.data(), k, 0.f, want.data(), n);
  }
  EXPECT_EQ(c, want);
}

TEST(GemmDispatchDeathTest, AVariantTheCpuLacksIsRefused) {
  for (GemmVariant v : {GemmVariant::kAvx2, GemmVariant::kAvx512}) {
    if (CpuSupports(v)) continue;
    float a = 1, b = 1, c = 0;
    EXPECT_DEATH(GemmWithVariant(v, false, false, 1, 1, 1, 1.f, &a, 1, &b, 1, 0.f, &c, 1),
                 "cannot run");
  }
}

}  // namespace
}  // namespace loom
