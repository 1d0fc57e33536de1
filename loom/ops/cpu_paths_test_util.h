#ifndef LOOM_OPS_CPU_PATHS_TEST_UTIL_H_
#define LOOM_OPS_CPU_PATHS_TEST_UTIL_H_

// What cpu_paths_test.cc and cpu_paths_products_test.cc share: special values, random
// vectors, bitwise result comparison, and the vector_isa copies this CPU runs.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "loom/ops/vector_isa.h"

namespace loom::cpu_paths_test {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kU32 = 1.0 / (1 << 24);

inline std::vector<float> RandomVector(int64_t n, uint32_t seed, float lo = -2, float hi = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline uint32_t Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

// Equal as results: both NaN, or the same bits (so -0 differs from +0).
inline bool SameResult(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || Bits(a) == Bits(b);
}

// The paths Vectorized runs on this CPU: the baseline copy always, the active one too.
inline std::vector<bool> BaselineFlags() {
  return internal::CpuHasAvx2() ? std::vector<bool>{true, false} : std::vector<bool>{true};
}

}  // namespace loom::cpu_paths_test

#endif  // LOOM_OPS_CPU_PATHS_TEST_UTIL_H_
