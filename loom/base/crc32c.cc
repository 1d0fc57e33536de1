#include "loom/base/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <nmmintrin.h>
#define LOOM_CRC32C_X86 1
#endif

namespace loom::crc32c {
namespace {

constexpr uint32_t kPolyReflected = 0x82F63B78u;

// kTables[k][b] is the CRC contribution of byte b followed by k zero bytes, which lets
// the portable loop consume 8 bytes per step (slicing-by-8).
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1) ? kPolyReflected : 0);
    t[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

inline uint64_t LoadLE64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// Zero-byte operators for the three-stream loop below. Appending n zero bytes to a message
// is a linear map on the 32-bit CRC register; ZerosTable<n> holds it as four byte-indexed
// tables, so Shift applies it in four lookups (Mark Adler's crc32c.c method).
using ZerosTable = std::array<std::array<uint32_t, 256>, 4>;

// The 32x32 GF(2) matrix `mat` (column i = image of bit i) applied to vec.
constexpr uint32_t MatrixTimes(const std::array<uint32_t, 32>& mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec != 0; ++i, vec >>= 1) {
    if (vec & 1) sum ^= mat[i];
  }
  return sum;
}

constexpr std::array<uint32_t, 32> MatrixSquare(const std::array<uint32_t, 32>& mat) {
  std::array<uint32_t, 32> sq{};
  for (int i = 0; i < 32; ++i) sq[i] = MatrixTimes(mat, mat[i]);
  return sq;
}

// REQUIRES: n is a power of two.
constexpr ZerosTable MakeZerosTable(size_t n) {
  // odd: the operator for one zero bit; squaring doubles the number of zero bits.
  std::array<uint32_t, 32> odd{};
  odd[0] = kPolyReflected;
  for (int i = 1; i < 32; ++i) odd[i] = 1u << (i - 1);
  std::array<uint32_t, 32> even = MatrixSquare(odd);  // 2 zero bits
  odd = MatrixSquare(even);                           // 4 zero bits
  // Each square below doubles again, from 1 zero byte, until n has been shifted out.
  std::array<uint32_t, 32> op{};
  while (true) {
    even = MatrixSquare(odd);
    n >>= 1;
    if (n == 0) {
      op = even;
      break;
    }
    odd = MatrixSquare(even);
    n >>= 1;
    if (n == 0) {
      op = odd;
      break;
    }
  }
  ZerosTable t{};
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 0; k < 4; ++k) t[k][b] = MatrixTimes(op, b << (8 * k));
  }
  return t;
}

#ifdef LOOM_CRC32C_X86
// Block sizes of the three-stream loop: a CRC instruction has a latency of 3 cycles and
// a throughput of 1, so three independent streams run about three times as fast as one;
// their registers are then merged by shifting over the blocks that follow them.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;
static_assert((kLongBlock & (kLongBlock - 1)) == 0 && (kShortBlock & (kShortBlock - 1)) == 0);
constexpr ZerosTable kLongZeros = MakeZerosTable(kLongBlock);
constexpr ZerosTable kShortZeros = MakeZerosTable(kShortBlock);

inline uint32_t Shift(const ZerosTable& t, uint32_t crc) {
  return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
}

__attribute__((target("sse4.2"))) inline uint64_t Crc3Way(uint64_t crc, const unsigned char*& p,
                                                          size_t& n, size_t block,
                                                          const ZerosTable& zeros) {
  while (n >= 3 * block) {
    uint64_t crc1 = 0, crc2 = 0;
    for (const unsigned char* end = p + block; p < end; p += 8) {
      uint64_t v0, v1, v2;
      std::memcpy(&v0, p, 8);
      std::memcpy(&v1, p + block, 8);
      std::memcpy(&v2, p + 2 * block, 8);
      crc = _mm_crc32_u64(crc, v0);
      crc1 = _mm_crc32_u64(crc1, v1);
      crc2 = _mm_crc32_u64(crc2, v2);
    }
    crc = Shift(zeros, static_cast<uint32_t>(crc)) ^ crc1;
    crc = Shift(zeros, static_cast<uint32_t>(crc)) ^ crc2;
    p += 2 * block;
    n -= 3 * block;
  }
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t init_crc, const char* data,
                                                       size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint64_t crc = ~init_crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    crc = _mm_crc32_u8(static_cast<uint32_t>(crc), *p++);
    --n;
  }
  crc = Crc3Way(crc, p, n, kLongBlock, kLongZeros);
  crc = Crc3Way(crc, p, n, kShortBlock, kShortZeros);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    crc = _mm_crc32_u64(crc, v);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    crc = _mm_crc32_u8(static_cast<uint32_t>(crc), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(crc);
}

bool CpuHasSse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t ExtendPortable(uint32_t init_crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint32_t crc = ~init_crc;
  while (n >= 8) {
    uint64_t v = LoadLE64(p) ^ crc;
    crc = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^ kTables[5][(v >> 16) & 0xff] ^
          kTables[4][(v >> 24) & 0xff] ^ kTables[3][(v >> 32) & 0xff] ^
          kTables[2][(v >> 40) & 0xff] ^ kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xff];
    --n;
  }
  return ~crc;
}

bool IsHardwareAccelerated() {
#ifdef LOOM_CRC32C_X86
  return CpuHasSse42();
#else
  return false;
#endif
}

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
#ifdef LOOM_CRC32C_X86
  if (CpuHasSse42()) return ExtendSse42(init_crc, data, n);
#endif
  return ExtendPortable(init_crc, data, n);
}

}  // namespace loom::crc32c
