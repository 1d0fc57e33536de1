#ifndef LOOM_OPS_PHILOX_H_
#define LOOM_OPS_PHILOX_H_

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
// the counter-based generator TF uses: a keyed bijection of a 128-bit counter, so block
// i of a stream is computed directly, without generating blocks 0..i-1. Header-only so
// kernels inline it. Known-answer tested in random_test.cc.
#include <array>
#include <cstdint>

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

// [0, 1) from the top bits.
inline float ToFloat(uint32_t x) { return static_cast<float>(x >> 8) * 0x1.0p-24f; }
inline double ToDouble(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

}  // namespace loom::philox

#endif  // LOOM_OPS_PHILOX_H_
