#ifndef LOOM_BASE_CRC32C_H_
#define LOOM_BASE_CRC32C_H_

// CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), the checksum of
// TFRecord frames, LevelDB blocks and iSCSI. Uses the SSE4.2 crc32 instruction when the
// CPU has it (checked once at run time) and a slicing-by-8 table otherwise; both give
// the same result. Pure functions, thread-safe.
//
//   uint32_t crc = crc32c::Value("123456789");  // 0xE3069283
//   uint32_t stored = crc32c::Mask(crc);         // what TFRecord writes
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace loom::crc32c {

// The CRC of data[0, n) appended to a buffer whose CRC is init_crc:
// Extend(Value(a), b) == Value(a + b).
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view data) { return Extend(0, data.data(), data.size()); }

// The table implementation, exposed so tests can check it against the hardware one.
uint32_t ExtendPortable(uint32_t init_crc, const char* data, size_t n);
// True when Extend uses the SSE4.2 instruction on this machine.
bool IsHardwareAccelerated();

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// A CRC stored next to the data it covers is masked, because the CRC of a string that
// itself contains CRCs is weak (LevelDB / TFRecord rule): rotate right by 15, add a delta.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace loom::crc32c

#endif  // LOOM_BASE_CRC32C_H_
