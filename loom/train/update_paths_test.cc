// Every dense update rule on every chunk copy this CPU runs (training_kernels.h: baseline
// x86-64 and AVX2 + FMA), against the same rule in float64, at the lengths the vector
// loops handle separately (0, 1, 7, 8, 15, 16, 17, ...); and the finite check that stops
// training sees a NaN or Inf in any position, the vector tails included, in the gradient
// or in an updated value (session 16's campaign; update_dispatch_test compares the two
// copies at one length).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "loom/base/strcat.h"
#include "loom/train/training_kernels.h"
#include "loom/train/training_updates.h"

namespace loom::train::internal {
namespace {

const std::vector<int64_t>& Lengths() {
  static const std::vector<int64_t> lengths = {0,  1,  2,  3,  4,  7,  8,   9,
                                               15, 16, 17, 31, 32, 33, 1037};
  return lengths;
}

// The copies this CPU runs, as callables over float chunks.
template <typename Update>
using ChunkFn = std::function<bool(const Update&, float* const*, const float*, int64_t)>;

template <typename Update>
std::vector<std::pair<std::string, ChunkFn<Update>>> Copies() {
  std::vector<std::pair<std::string, ChunkFn<Update>>> copies;
  copies.emplace_back("baseline", [](const Update& u, float* const* r, const float* g, int64_t n) {
    return UpdateChunk(u, r, g, n);
  });
#if defined(__x86_64__)
  if (CpuHasAvx2Fma()) {
    copies.emplace_back("avx2+fma", [](const Update& u, float* const* r, const float* g,
                                       int64_t n) { return UpdateChunkAvx2(u, r, g, n); });
  }
#endif
  return copies;
}

// One rule in float32 and float64, with the refs' starting values (each ref's range).
template <template <typename> class Rule>
struct RuleCase {
  std::string name;
  Rule<float> f32;
  Rule<double> f64;
  std::vector<std::pair<double, double>> ranges;  // per ref
};

template <template <typename> class Rule>
void CheckRule(const RuleCase<Rule>& rc) {
  constexpr int kRefs = Rule<float>::kNumRefs;
  ASSERT_EQ(rc.ranges.size(), static_cast<size_t>(kRefs)) << rc.name;
  for (int64_t n : Lengths()) {
    std::mt19937 rng(static_cast<uint32_t>(n) + 3);
    std::vector<std::vector<float>> start(kRefs, std::vector<float>(n));
    for (int i = 0; i < kRefs; ++i) {
      std::uniform_real_distribution<double> dist(rc.ranges[i].first, rc.ranges[i].second);
      for (float& x : start[i]) x = static_cast<float>(dist(rng));
    }
    std::normal_distribution<double> normal;
    std::vector<float> g(n);
    for (float& x : g) x = static_cast<float>(normal(rng));
    // The float64 reference from the same float32 values.
    std::vector<std::vector<double>> ref(kRefs);
    std::vector<double*> ref_ptrs;
    for (int i = 0; i < kRefs; ++i) {
      ref[i].assign(start[i].begin(), start[i].end());
      ref_ptrs.push_back(ref[i].data());
    }
    const std::vector<double> g64(g.begin(), g.end());
    rc.f64(ref_ptrs.data(), g64.data(), n);
    for (const auto& [copy, chunk] : Copies<Rule<float>>()) {
      std::vector<std::vector<float>> r = start;
      std::vector<float*> ptrs;
      ptrs.reserve(r.size());
      for (auto& v : r) ptrs.push_back(v.data());
      const bool bad = chunk(rc.f32, ptrs.data(), g.data(), n);
      EXPECT_FALSE(bad) << rc.name << " " << copy << " n=" << n << ": finite values reported";
      for (int i = 0; i < kRefs; ++i) {
        for (int64_t k = 0; k < n; ++k) {
          ASSERT_NEAR(r[i][k], ref[i][k], 2e-6 * (1 + std::abs(ref[i][k])))
              << rc.name << " " << copy << " n=" << n << " ref " << i << " element " << k;
        }
      }
    }
  }
}

TEST(UpdatePathsTest, EveryRuleOnEveryCopyMatchesFloat64AtEveryLength) {
  const std::pair<double, double> var{-1, 1}, pos{0.5, 1}, small{-0.1, 0.1};
  CheckRule<GradientDescentUpdate>({"GradientDescent", {0.1f}, {0.1}, {var}});
  CheckRule<MomentumUpdate>({"Momentum", {0.1f, 0.9f, false}, {0.1, 0.9, false}, {var, small}});
  CheckRule<MomentumUpdate>(
      {"Momentum (Nesterov)", {0.1f, 0.9f, true}, {0.1, 0.9, true}, {var, small}});
  CheckRule<AdamUpdate>({"Adam",
                         {0.01f, 0.9f, 0.999f, 1e-7f},
                         {double{0.01f}, double{0.9f}, double{0.999f}, double{1e-7f}},
                         {var, small, pos}});
  CheckRule<AdagradUpdate>({"Adagrad", {0.1f}, {double{0.1f}}, {var, pos}});
  CheckRule<RMSPropUpdate>({"RMSProp",
                            {0.01f, 0.9f, 0.5f, 1e-6f},
                            {double{0.01f}, double{0.9f}, 0.5, double{1e-6f}},
                            {var, pos, small}});
  CheckRule<CenteredRMSPropUpdate>({"CenteredRMSProp",
                                    {0.01f, 0.9f, 0.5f, 1e-6f},
                                    {double{0.01f}, double{0.9f}, 0.5, double{1e-6f}},
                                    {var, small, pos, small}});
  CheckRule<FtrlUpdate>({"Ftrl",
                         {0.1f, 0.01f, 0.02f, -0.5f},
                         {double{0.1f}, double{0.01f}, double{0.02f}, -0.5},
                         {var, pos, var}});
  CheckRule<FtrlUpdate>({"Ftrl (lr_power -0.7)",
                         {0.1f, 0.01f, 0.02f, -0.7f},
                         {double{0.1f}, double{0.01f}, double{0.02f}, double{-0.7f}},
                         {var, pos, var}});
}

// A NaN or Inf in the gradient, or a finite gradient whose update overflows the variable,
// in any position (the head, the vector body, the tail), is reported by every copy; so the
// driver stops training (FailNonFiniteUpdate) instead of writing it silently.
template <template <typename> class Rule>
void CheckNonFiniteSeen(const std::string& name, const Rule<float>& rule,
                        const std::vector<float>& starts) {
  constexpr int kRefs = Rule<float>::kNumRefs;
  for (int64_t n : Lengths()) {
    for (int64_t at : {int64_t{0}, int64_t{7}, int64_t{8}, int64_t{16}, n / 2, n - 1}) {
      if (at < 0 || at >= n) continue;
      for (int kind = 0; kind < 4; ++kind) {
        for (const auto& [copy, chunk] : Copies<Rule<float>>()) {
          std::vector<std::vector<float>> r(kRefs);
          for (int i = 0; i < kRefs; ++i) r[i].assign(n, starts[i]);
          std::vector<float> g(n, 0.25f);
          const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                    std::numeric_limits<float>::infinity(),
                                    -std::numeric_limits<float>::infinity()};
          if (kind < 3) {
            g[at] = specials[kind];
          } else {  // finite, but var - lr * g overflows (lr 0.5 in every rule below)
            r[0][at] = 3e38f;
            g[at] = -3e38f;
          }
          std::vector<float*> ptrs;
          ptrs.reserve(r.size());
          for (auto& v : r) ptrs.push_back(v.data());
          const bool bad = chunk(rule, ptrs.data(), g.data(), n);
          if (kind == 3 && !std::isinf(r[0][at]) && !std::isnan(r[0][at])) continue;
          EXPECT_TRUE(bad) << name << " " << copy << " n=" << n << " kind " << kind << " at " << at
                           << ": not reported (var there is " << r[0][at] << ")";
        }
      }
    }
  }
}

TEST(UpdatePathsTest, EveryCopyReportsNonFiniteValuesInAnyPosition) {
  CheckNonFiniteSeen<GradientDescentUpdate>("GradientDescent", {0.5f}, {1});
  CheckNonFiniteSeen<MomentumUpdate>("Momentum", {0.5f, 0.9f, false}, {1, 0});
  CheckNonFiniteSeen<AdamUpdate>("Adam", {0.5f, 0.9f, 0.999f, 1e-7f}, {1, 0, 1});
  CheckNonFiniteSeen<AdagradUpdate>("Adagrad", {0.5f}, {1, 1});
  CheckNonFiniteSeen<RMSPropUpdate>("RMSProp", {0.5f, 0.9f, 0.0f, 1e-6f}, {1, 1, 0});
  CheckNonFiniteSeen<FtrlUpdate>("Ftrl", {0.5f, 0.0f, 0.0f, -0.5f}, {1, 1, 0});
}

}  // namespace
}  // namespace loom::train::internal
