#include "loom/ops/vector_math.h"

#include <bit>
#include <cstdint>

#include "loom/ops/vector_isa.h"

namespace loom::internal {
namespace {

// Element functions, written branch-free (selects, not jumps) so the loops vectorize.
// No std:: math calls: a libm call would not vectorize and would differ between copies.

inline float AsFloat(uint32_t bits) { return std::bit_cast<float>(bits); }
inline uint32_t AsBits(float x) { return std::bit_cast<uint32_t>(x); }

// 2^k as a float, for an integer k in [-126, 127] held in the low bits of a float's
// mantissa (see ExpElement).
inline float PowerOfTwo(int32_t k) { return AsFloat(static_cast<uint32_t>(k + 127) << 23); }

// exp(x) = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (Cephes expf).
inline float ExpElement(float x) {
  // Clamped so that n stays in [-150, 129] (a NaN passes both compares unchanged): below
  // -104 the result rounds to 0 and above 88.8 it overflows to inf anyway.
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 88.8f ? 88.8f : xc;
  // round(x log2 e) by the 1.5 * 2^23 trick: the sum's low mantissa bits hold n.
  const float kShift = 12582912.0f;
  const float shifted = xc * 1.44269504088896341f + kShift;
  const float n = shifted - kShift;
  const int32_t ni = static_cast<int32_t>(AsBits(shifted) & 0x7fffff) - 0x400000;
  // ln 2 in two parts: n * 0.693359375 is exact for |n| < 2^14.
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * z + r + 1.0f;
  // 2^n in two factors, each a normal float, so n = 128 and subnormal results work: only
  // the last multiply rounds.
  const int32_t half = ni >> 1;
  return er * PowerOfTwo(half) * PowerOfTwo(ni - half);
}

// log(x) = e ln 2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)) (Cephes logf).
inline float LogElement(float x) {
  // Subnormal inputs scaled into the normal range first.
  const bool tiny = x < 1.17549435e-38f;
  const float xs = tiny ? x * 8388608.0f : x;  // * 2^23
  const uint32_t bits = AsBits(xs);
  int32_t e = static_cast<int32_t>(bits >> 23) - 126 - (tiny ? 23 : 0);
  float m = AsFloat((bits & 0x007fffff) | 0x3f000000);  // in [0.5, 1)
  const bool low = m < 0.707106781186547524f;
  e -= low ? 1 : 0;
  m = (low ? m + m : m) - 1.0f;
  const float z = m * m;
  float p = 7.0376836292e-2f;
  p = p * m - 1.1514610310e-1f;
  p = p * m + 1.1676998740e-1f;
  p = p * m - 1.2420140846e-1f;
  p = p * m + 1.4249322787e-1f;
  p = p * m - 1.6668057665e-1f;
  p = p * m + 2.0000714765e-1f;
  p = p * m - 2.4999993993e-1f;
  p = p * m + 3.3333331174e-1f;
  const float ef = static_cast<float>(e);
  float y = p * m * z;
  y += ef * -2.12194440e-4f;
  y -= 0.5f * z;
  float result = (m + y) + ef * 0.693359375f;
  // IEEE special cases (x is +-0, negative, +inf or NaN).
  const float kInf = __builtin_inff();
  result = x == 0.0f ? -kInf : result;
  result = x < 0.0f ? __builtin_nanf("") : result;
  result = x == kInf ? kInf : result;
  result = x != x ? x : result;
  return result;
}

}  // namespace

void ExpFloats(const float* in, float* out, int64_t n) {
  Vectorized([&] {
    for (int64_t i = 0; i < n; ++i) out[i] = ExpElement(in[i]);
  });
}

void LogFloats(const float* in, float* out, int64_t n) {
  Vectorized([&] {
    for (int64_t i = 0; i < n; ++i) out[i] = LogElement(in[i]);
  });
}

}  // namespace loom::internal
