// The dense update kernels run either as compiled for baseline x86-64 or, when the CPU
// has AVX2 + FMA, as compiled for it (training_kernels.h: UpdateChunk / UpdateChunkAvx2).
// Both must be chosen as the CPU says and compute the same updates.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/testing/cpuinfo.h"
#include "loom/train/training_kernels.h"
#include "loom/train/training_updates.h"

namespace loom::train::internal {
namespace {

using ::loom::testing::CpuinfoHasFlag;

TEST(UpdateDispatchTest, Avx2ChunksRunExactlyWhenTheCpuHasAvx2AndFma) {
#if defined(__x86_64__) && defined(__linux__)
  EXPECT_EQ(CpuHasAvx2Fma(), CpuinfoHasFlag("avx2") && CpuinfoHasFlag("fma"));
#else
  EXPECT_FALSE(CpuHasAvx2Fma());
#endif
}

// Runs `update` over n elements of fresh refs and gradient through `chunk`; returns the refs.
template <typename T, typename Update, typename Chunk>
std::vector<std::vector<T>> RunChunk(const Update& update, int refs, const std::vector<T>& g,
                                     Chunk chunk, bool* non_finite) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> dist(0.01, 1.0);  // v > 0 for Adam's sqrt
  std::vector<std::vector<T>> r(refs, std::vector<T>(g.size()));
  for (auto& ref : r) {
    for (T& x : ref) x = static_cast<T>(dist(rng));
  }
  std::vector<T*> ptrs;
  ptrs.reserve(r.size());
  for (auto& ref : r) ptrs.push_back(ref.data());
  *non_finite = chunk(update, ptrs.data(), g.data(), static_cast<int64_t>(g.size()));
  return r;
}

template <typename T, typename Update>
void ExpectVariantsAgree(const Update& update, int refs) {
  std::mt19937 rng(9);
  std::normal_distribution<double> dist;
  std::vector<T> g(1037);  // not a multiple of any vector width
  for (T& x : g) x = static_cast<T>(dist(rng));
  bool bad_base = true, bad_avx2 = true;
  const auto base = RunChunk<T>(
      update, refs, g,
      [](const Update& u, T* const* r, const T* gr, int64_t n) { return UpdateChunk(u, r, gr, n); },
      &bad_base);
  EXPECT_FALSE(bad_base);
#if defined(__x86_64__)
  if (!CpuHasAvx2Fma()) GTEST_SKIP() << "no AVX2 + FMA here: only the baseline chunk runs";
  const auto avx2 = RunChunk<T>(
      update, refs, g,
      [](const Update& u, T* const* r, const T* gr, int64_t n) {
        return UpdateChunkAvx2(u, r, gr, n);
      },
      &bad_avx2);
  EXPECT_FALSE(bad_avx2);
  // The AVX2 + FMA copy has multiply-adds contracted into one rounding (g++ and clang both
  // contract a * b + c once FMA is in the target), the baseline one not: a difference of
  // rounding only.
  const double tol = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (int i = 0; i < refs; ++i) {
    for (size_t k = 0; k < g.size(); ++k) {
      ASSERT_NEAR(avx2[i][k], base[i][k], tol * (1 + std::abs(double{base[i][k]})))
          << "ref " << i << " element " << k;
    }
  }
  // A NaN in the gradient is reported by both.
  std::vector<T> with_nan = g;
  with_nan[1000] = std::numeric_limits<T>::quiet_NaN();
  RunChunk<T>(
      update, refs, with_nan,
      [](const Update& u, T* const* r, const T* gr, int64_t n) {
        return UpdateChunkAvx2(u, r, gr, n);
      },
      &bad_avx2);
  EXPECT_TRUE(bad_avx2);
#endif
}

TEST(UpdateDispatchTest, BaselineAndAvx2ChunksAgree) {
  ExpectVariantsAgree<float>(GradientDescentUpdate<float>{0.1f}, 1);
  ExpectVariantsAgree<double>(GradientDescentUpdate<double>{0.1}, 1);
  ExpectVariantsAgree<float>(MomentumUpdate<float>{0.1f, 0.9f, true}, 2);
  ExpectVariantsAgree<float>(AdamUpdate<float>{0.01f, 0.9f, 0.999f, 1e-7f}, 3);
  ExpectVariantsAgree<double>(AdamUpdate<double>{0.01, 0.9, 0.999, 1e-7}, 3);
}

// A fused update-and-check computes what the update alone does, and reports exactly the
// non-finite results AnyNonFinite would.
template <typename Update>
void ExpectFusedCheckMatches(const Update& update, int refs) {
  std::mt19937 rng(11);
  std::normal_distribution<double> dist;
  for (int case_ = 0; case_ < 3; ++case_) {
    std::vector<float> g(517);
    for (float& x : g) x = static_cast<float>(dist(rng));
    if (case_ == 1) g[300] = std::numeric_limits<float>::infinity();
    if (case_ == 2) g[516] = std::numeric_limits<float>::quiet_NaN();
    bool fused_bad = false, plain_bad = false;
    const auto fused = RunChunk<float>(
        update, refs, g,
        [](const Update& u, float* const* r, const float* gr, int64_t n) {
          return u.Checked(r, gr, n);
        },
        &fused_bad);
    const auto plain = RunChunk<float>(
        update, refs, g,
        [](const Update& u, float* const* r, const float* gr, int64_t n) {
          u(r, gr, n);
          return AnyNonFinite(r[0], gr, n);
        },
        &plain_bad);
    EXPECT_EQ(fused_bad, plain_bad) << "case " << case_;
    EXPECT_EQ(fused_bad, case_ != 0) << "case " << case_;
    for (int i = 0; i < refs; ++i) {
      for (size_t k = 0; k < g.size(); ++k) {
        if (std::isnan(plain[i][k])) {
          EXPECT_TRUE(std::isnan(fused[i][k]));
        } else {
          ASSERT_EQ(fused[i][k], plain[i][k]) << "ref " << i << " element " << k;
        }
      }
    }
  }
}

TEST(UpdateDispatchTest, FusedChecksMatchTheUpdateAndItsCheck) {
  ExpectFusedCheckMatches(GradientDescentUpdate<float>{0.1f}, 1);
  ExpectFusedCheckMatches(AdamUpdate<float>{0.01f, 0.9f, 0.999f, 1e-7f}, 3);
}

TEST(UpdateDispatchTest, TheWidestUpdateIsaTheCpuHasRuns) {
#if defined(__x86_64__) && defined(__linux__)
  EXPECT_EQ(CpuHasAvx512F(), CpuinfoHasFlag("avx512f"));
  const UpdateIsa want = CpuinfoHasFlag("avx512f")                         ? UpdateIsa::kAvx512
                         : CpuinfoHasFlag("avx2") && CpuinfoHasFlag("fma") ? UpdateIsa::kAvx2
                                                                           : UpdateIsa::kBaseline;
  EXPECT_EQ(ActiveUpdateIsa(), want);
#else
  EXPECT_EQ(ActiveUpdateIsa(), UpdateIsa::kBaseline);
#endif
}

// Adam's AVX-512 chunk gives bitwise the results of the AVX2 + FMA loop as g++ 12 contracts
// it (the same operations and fused multiply-adds), within a rounding of the baseline
// chunk's, on whole
// registers and on every length of masked tail, and flags a NaN or Inf wherever it is; all
// are within float32 rounding of a float64 Adam.
TEST(UpdateDispatchTest, AdamAvx512ChunkIsBitwiseTheContractedLoop) {
  if (!CpuHasAvx512F()) GTEST_SKIP() << "no AVX-512F here: the AVX-512 chunk never runs";
  const AdamUpdate<float> update{0.01f, 0.9f, 0.999f, 1e-7f};
  const AdamUpdate<double> update64{0.01, 0.9, 0.999, 1e-7};
  std::mt19937 rng(21);
  std::normal_distribution<double> dist;
  for (const int64_t n : {1, 15, 16, 17, 31, 1037}) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    std::vector<float> g(n);
    for (float& x : g) x = static_cast<float>(dist(rng));
    bool bad_base = true, bad_512 = true, bad_64 = true;
    const auto base = RunChunk<float>(
        update, 3, g,
        [](const auto& u, float* const* r, const float* gr, int64_t k) {
          return UpdateChunk(u, r, gr, k);
        },
        &bad_base);
    // The AVX2 + FMA loop as g++ 12 contracts it at -O3 (this test's own instantiation of
    // UpdateChunkAvx2 is compiled at -O0, which contracts nothing), written with std::fma.
    bool unused = false;
    const auto avx2 = RunChunk<float>(
        update, 3, g,
        [](const AdamUpdate<float>& u, float* const* r, const float* gr, int64_t k) {
          const float c1 = 1.f - u.beta1, c2 = 1.f - u.beta2;
          for (int64_t j = 0; j < k; ++j) {
            r[1][j] = std::fma(gr[j] - r[1][j], c1, r[1][j]);
            r[2][j] = std::fma(std::fma(gr[j], gr[j], -r[2][j]), c2, r[2][j]);
            r[0][j] -= (r[1][j] * u.alpha) / (std::sqrt(r[2][j]) + u.epsilon);
          }
          return false;
        },
        &unused);
    const auto wide = RunChunk<float>(
        update, 3, g,
        [](const auto& u, float* const* r, const float* gr, int64_t k) {
          return UpdateChunkOn(UpdateIsa::kAvx512, u, r, gr, k);
        },
        &bad_512);
    EXPECT_FALSE(bad_base);
    EXPECT_FALSE(bad_512);
    // RunChunk's refs start from the same values in float64 (rounded to float32 for the
    // float32 runs): a float64 Adam from the float32 starting point.
    std::vector<double> g64(g.begin(), g.end());
    auto exact = RunChunk<double>(
        update64, 3, g64,
        [](const auto& u, double* const* r, const double* gr, int64_t k) {
          return UpdateChunk(u, r, gr, k);
        },
        &bad_64);
    for (int i = 0; i < 3; ++i) {
      for (int64_t k = 0; k < n; ++k) {
        ASSERT_EQ(wide[i][k], avx2[i][k]) << "ref " << i << " element " << k;
        ASSERT_NEAR(wide[i][k], base[i][k], 1e-6 * (1 + std::abs(double{base[i][k]})))
            << "ref " << i << " element " << k;
        ASSERT_NEAR(wide[i][k], exact[i][k], 1e-5 * (1 + std::abs(exact[i][k])))
            << "ref " << i << " element " << k;
      }
    }
    // A NaN or Inf at any position, the tail's last lane included, is reported.
    for (const int64_t at : {int64_t{0}, n / 2, n - 1}) {
      for (const float bad :
           {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        std::vector<float> with_bad = g;
        with_bad[at] = bad;
        bool flagged = false;
        RunChunk<float>(
            update, 3, with_bad,
            [](const auto& u, float* const* r, const float* gr, int64_t k) {
              return UpdateChunkOn(UpdateIsa::kAvx512, u, r, gr, k);
            },
            &flagged);
        EXPECT_TRUE(flagged) << "bad gradient at " << at;
      }
    }
  }
  // An update that overflows var (a huge step into a huge var) is flagged too.
  std::vector<float> var(20, std::numeric_limits<float>::max()), m(20, 0.f), v(20, 0.f);
  std::vector<float> g(20, -1.f);
  const AdamUpdate<float> huge{std::numeric_limits<float>::max(), 0.9f, 0.999f, 1e-7f};
  float* r[3] = {var.data(), m.data(), v.data()};
  EXPECT_TRUE(UpdateChunkOn(UpdateIsa::kAvx512, huge, r, g.data(), 20));
}

}  // namespace
}  // namespace loom::train::internal
