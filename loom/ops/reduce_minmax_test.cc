// The Max / Min / ArgMax / ArgMin kernels (reduce_minmax.h) on every isa this CPU runs,
// against a scalar reference, at lengths 0..67 (the 64-lane blocks of float and the 32 of
// double, their tails) and beyond: NaN at each position (first, last lane of a block, the
// tail, last), only NaNs, +-Inf, ties of -0 and +0 (every isa gives the same bits).
#include "loom/ops/reduce_minmax.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/base/strcat.h"

namespace loom::reduce_internal {
namespace {

template <typename T>
std::vector<T> Random(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> dist(-3, 3);
  std::vector<T> v(n);
  for (T& x : v) x = dist(rng);
  return v;
}

// Zeros of both signs, a few ones: the sign of a zero result depends on the fold order.
template <typename T>
std::vector<T> SignedZeros(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) {
    const uint32_t r = rng() % 8;
    x = r == 0 ? T(-1) : (r < 4 ? T(-0.0) : T(0.0));
  }
  return v;
}

template <typename T>
bool SameBits(T a, T b) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  return std::bit_cast<Bits>(a) == std::bit_cast<Bits>(b);
}

// numpy's answer: the first NaN, else the extreme (any zero for a zero extreme); its index.
template <bool kMax, typename T>
std::pair<T, int64_t> Reference(const std::vector<T>& v) {
  T best = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  int64_t at = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return {v[i], static_cast<int64_t>(i)};
    if (kMax ? v[i] > best : v[i] < best) {
      best = v[i];
      at = static_cast<int64_t>(i);
    }
  }
  return {best, at};
}

template <bool kMax, typename T>
void CheckAllIsas(const std::vector<T>& v, const std::string& what) {
  const auto [want, want_at] = Reference<kMax>(v);
  const auto n = static_cast<int64_t>(v.size());
  const std::string name =
      StrCat(kMax ? "max" : "min", sizeof(T) == 4 ? " f32 " : " f64 ", what, " n=", n);
  T first{};
  for (MinMaxIsa isa : AvailableMinMaxIsas()) {
    const T got = MinMaxOf<kMax>(isa, v.data(), n);
    const std::string where = StrCat(name, " on ", MinMaxIsaName(isa));
    if (std::isnan(want)) {
      ASSERT_TRUE(SameBits(got, want)) << where << ": " << got << ", not the first NaN";
    } else {
      ASSERT_EQ(got, want) << where;
    }
    if (isa == MinMaxIsa::kScalar) {
      first = got;
    } else {
      ASSERT_TRUE(SameBits(got, first)) << where << ": " << got << " differs from scalar " << first;
    }
    if (n > 0) {
      ASSERT_EQ(ArgMinMaxOf<kMax>(isa, v.data(), n), want_at) << where << " (arg)";
    }
  }
}

template <typename T>
void CheckVector(const std::vector<T>& v, const std::string& what) {
  CheckAllIsas<true>(v, what);
  CheckAllIsas<false>(v, what);
}

template <typename T>
void CheckContiguous() {
  constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
  constexpr T kInf = std::numeric_limits<T>::infinity();
  std::vector<int64_t> sizes;
  for (int64_t n = 0; n <= 67; ++n) sizes.push_back(n);
  for (int64_t n : {95, 96, 127, 128, 129, 191, 192, 255, 256, 257, 1000}) sizes.push_back(n);
  for (int64_t n : sizes) {
    const auto seed = static_cast<uint32_t>(n);
    CheckVector(Random<T>(n, seed), "random");
    CheckVector(SignedZeros<T>(n, seed), "signed zeros");
    CheckVector(std::vector<T>(n, kNaN), "only NaNs");
    CheckVector(std::vector<T>(n, -kInf), "only -Inf");
    for (int64_t at = 0; at < n; ++at) {
      if (n > 67 && at > 2 && at < n - 70 && at % 31 != 0) continue;
      std::vector<T> v = Random<T>(n, seed + 1);
      v[at] = kNaN;
      CheckVector(v, StrCat("NaN at ", at));
      v[at] = -kNaN;  // the sign bit set: the NaN returned is this one, bit for bit
      if (at + 1 < n) v[n - 1] = kNaN;
      CheckVector(v, StrCat("-NaN at ", at, " and NaN last"));
      v = Random<T>(n, seed + 2);
      v[at] = at % 2 == 0 ? kInf : -kInf;
      CheckVector(v, StrCat("Inf at ", at));
    }
  }
}

TEST(ReduceMinMaxTest, ContiguousFloatOnEveryIsa) { CheckContiguous<float>(); }
TEST(ReduceMinMaxTest, ContiguousDoubleOnEveryIsa) { CheckContiguous<double>(); }

// Columns of an [n, inner] block over a range [c0, c1): tiles of 4 registers, of 1, the
// masked or scalar last columns, over several 32-row passes; NaN in one column at a row.
template <bool kMax, typename T>
void CheckColumns() {
  constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
  for (int64_t n : {1, 2, 3, 7, 33, 70}) {  // past the kernels' 32-row passes too
    for (int64_t inner = 1; inner <= 67; ++inner) {
      for (int64_t c0 : {int64_t{0}, int64_t{1}, inner / 2}) {
        if (c0 > inner) continue;
        const auto seed = static_cast<uint32_t>(n * 100 + inner);
        std::vector<T> x =
            (inner % 3 == 0) ? SignedZeros<T>(n * inner, seed) : Random<T>(n * inner, seed);
        const int64_t nan_col = (inner - 1) - (inner % 5), nan_row = (inner * 7) % n;
        if (inner % 2 == 0 && nan_col >= 0) x[nan_row * inner + nan_col] = kNaN;
        std::vector<T> first;
        for (MinMaxIsa isa : AvailableMinMaxIsas()) {
          std::vector<T> out(inner, T(12345));
          MinMaxColumns<kMax>(isa, x.data(), n, inner, c0, inner, out.data());
          const std::string where = StrCat(kMax ? "max" : "min", " n=", n, " inner=", inner,
                                           " c0=", c0, " on ", MinMaxIsaName(isa));
          for (int64_t c = 0; c < inner; ++c) {
            if (c < c0) {
              ASSERT_EQ(out[c], T(12345)) << where << ": column " << c << " outside the range";
              continue;
            }
            std::vector<T> column(n);
            for (int64_t r = 0; r < n; ++r) column[r] = x[r * inner + c];
            const T want = Reference<kMax>(column).first;
            if (std::isnan(want)) {
              ASSERT_TRUE(std::isnan(out[c])) << where << ": column " << c << " lost its NaN";
            } else {
              ASSERT_EQ(out[c], want) << where << ": column " << c;
            }
          }
          if (first.empty()) {
            first = out;
          } else {
            for (int64_t c = 0; c < inner; ++c) {
              ASSERT_TRUE(SameBits(out[c], first[c])) << where << ": column " << c;
            }
          }
        }
      }
    }
  }
}

TEST(ReduceMinMaxTest, ColumnsOnEveryIsa) {
  CheckColumns<true, float>();
  CheckColumns<false, float>();
  CheckColumns<true, double>();
  CheckColumns<false, double>();
}

}  // namespace
}  // namespace loom::reduce_internal
