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
  // g++ compiles both without contraction (ISO C++ mode); clang may fuse a multiply-add
  // in the AVX2 one, a difference of rounding only.
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

}  // namespace
}  // namespace loom::train::internal
