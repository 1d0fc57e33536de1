#ifndef LOOM_OPS_PHILOX_H_
#define LOOM_OPS_PHILOX_H_

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
// the counter-based generator TF uses: a keyed bijection of a 128-bit counter, so block
// i of a stream is computed directly, without generating blocks 0..i-1. Header-only so
// kernels inline it. Known-answer tested in random_test.cc.
#include <array>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::philox {

using Block = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline constexpr uint32_t kMul0 = 0xD2511F53;
inline constexpr uint32_t kMul1 = 0xCD9E8D57;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9;
inline constexpr uint32_t kWeyl1 = 0xBB67AE85;

inline Block Philox4x32(Block ctr, Key key) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return ctr;
}

#if defined(__x86_64__)
// Philox4x32 of 8 * kGroups counters with AVX2: lane l of group g has the counter
// (x[g][0][l], x[g][1][l], x[g][2][l], x[g][3][l]), all under one key, and its block goes to
// blocks[4 (8 g + l), + 4): the same bits as Philox4x32 of that counter. The 32 x 32 ->
// 64-bit products go through vpmuludq on the even and the odd lanes (a compiler does not
// vectorize the scalar code's widening multiply), and the groups' independent chains hide
// the multiplies' latency (one group alone measured no faster than scalar code).
// REQUIRES: the CPU has AVX2 (loom::internal::CpuHasAvx2()); blocks has 32 * kGroups words.
template <int kGroups>
__attribute__((target("avx2"))) inline void Philox4x32x8Avx2(const uint32_t (*x)[4][8], Key key,
                                                             uint32_t* blocks) {
  __m256i c[kGroups][4];
  for (int g = 0; g < kGroups; ++g) {
    for (int w = 0; w < 4; ++w) {
      c[g][w] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[g][w]));
    }
  }
  const __m256i mul0 = _mm256_set1_epi32(static_cast<int>(kMul0));
  const __m256i mul1 = _mm256_set1_epi32(static_cast<int>(kMul1));
  for (int round = 0; round < 10; ++round) {
    const __m256i k0 = _mm256_set1_epi32(static_cast<int>(key[0]));
    const __m256i k1 = _mm256_set1_epi32(static_cast<int>(key[1]));
    for (int g = 0; g < kGroups; ++g) {
      // 64-bit products of the even lanes, and of the odd lanes (shifted down).
      const __m256i even0 = _mm256_mul_epu32(c[g][0], mul0);
      const __m256i odd0 = _mm256_mul_epu32(_mm256_srli_epi64(c[g][0], 32), mul0);
      const __m256i even1 = _mm256_mul_epu32(c[g][2], mul1);
      const __m256i odd1 = _mm256_mul_epu32(_mm256_srli_epi64(c[g][2], 32), mul1);
      const __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(even0, 32), odd0, 0xAA);
      const __m256i lo0 = _mm256_blend_epi32(even0, _mm256_slli_epi64(odd0, 32), 0xAA);
      const __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(even1, 32), odd1, 0xAA);
      const __m256i lo1 = _mm256_blend_epi32(even1, _mm256_slli_epi64(odd1, 32), 0xAA);
      c[g][0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c[g][1]), k0);
      c[g][2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[g][3]), k1);
      c[g][1] = lo1;
      c[g][3] = lo0;
    }
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  // Transpose each group's 4 x 8 words to block order: blocks[4 (8 g + l) + w] is word w
  // of lane l's block.
  for (int g = 0; g < kGroups; ++g) {
    const __m256i t0 = _mm256_unpacklo_epi32(c[g][0], c[g][1]);  // l0 l1 | l4 l5, words 0 1
    const __m256i t1 = _mm256_unpackhi_epi32(c[g][0], c[g][1]);  // l2 l3 | l6 l7
    const __m256i t2 = _mm256_unpacklo_epi32(c[g][2], c[g][3]);  // words 2 3
    const __m256i t3 = _mm256_unpackhi_epi32(c[g][2], c[g][3]);
    const __m256i b04 = _mm256_unpacklo_epi64(t0, t2);  // blocks 0 | 4
    const __m256i b15 = _mm256_unpackhi_epi64(t0, t2);  // blocks 1 | 5
    const __m256i b26 = _mm256_unpacklo_epi64(t1, t3);  // blocks 2 | 6
    const __m256i b37 = _mm256_unpackhi_epi64(t1, t3);  // blocks 3 | 7
    __m256i* out = reinterpret_cast<__m256i*>(blocks + 32 * g);
    _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(b04, b15, 0x20));  // blocks 0 1
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(b26, b37, 0x20));  // blocks 2 3
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(b04, b15, 0x31));  // blocks 4 5
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(b26, b37, 0x31));  // blocks 6 7
  }
}
#endif

// [0, 1) from the top bits.
inline float ToFloat(uint32_t x) { return static_cast<float>(x >> 8) * 0x1.0p-24f; }
inline double ToDouble(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace loom::philox

#endif  // LOOM_OPS_PHILOX_H_
