#include "loom/base/crc32c.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <random>
#include <string>

#include "loom/testing/cpuinfo.h"

namespace loom::crc32c {
namespace {

// Vectors from RFC 3720 appendix B.4 and the common "123456789" check value.
TEST(Crc32cTest, StandardVectors) {
  EXPECT_EQ(Value(""), 0u);
  EXPECT_EQ(Value("123456789"), 0xE3069283u);
  std::string buf(32, '\0');
  EXPECT_EQ(Value(buf), 0x8A9136AAu);
  buf.assign(32, '\xff');
  EXPECT_EQ(Value(buf), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(i);
  EXPECT_EQ(Value(buf), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<char>(31 - i);
  EXPECT_EQ(Value(buf), 0x113FDB5Cu);
}

TEST(Crc32cTest, PortableMatchesDispatchedOnEveryLengthAndAlignment) {
  std::mt19937 rng(42);
  std::string data(300, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; n + start <= data.size(); n += 7) {
      ASSERT_EQ(Extend(0, data.data() + start, n), ExtendPortable(0, data.data() + start, n))
          << "start=" << start << " n=" << n;
    }
  }
}

// Lengths past 3 x 256 and 3 x 8192 bytes take the three-stream hardware loop, whose
// partial CRCs are merged by the zero-byte operators; the portable loop is the reference.
TEST(Crc32cTest, PortableMatchesDispatchedOnLongBuffers) {
  std::mt19937 rng(7);
  std::string data(60000, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  for (size_t start : {size_t{0}, size_t{3}}) {
    for (size_t n = 700; n + start <= data.size(); n += 1 + n / 5) {
      const uint32_t init = static_cast<uint32_t>(rng());
      ASSERT_EQ(Extend(init, data.data() + start, n), ExtendPortable(init, data.data() + start, n))
          << "start=" << start << " n=" << n;
    }
  }
  for (size_t n : {size_t{768}, size_t{769}, size_t{3 * 8192}, size_t{3 * 8192 + 768 + 5}}) {
    ASSERT_EQ(Value(data.data(), n), ExtendPortable(0, data.data(), n)) << "n=" << n;
  }
}

TEST(Crc32cTest, ExtendEqualsValueOfConcatenation) {
  std::string a = "hello ", b = "world, this is longer than eight bytes";
  EXPECT_EQ(Extend(Value(a), b.data(), b.size()), Value(a + b));
  EXPECT_EQ(ExtendPortable(ExtendPortable(0, a.data(), a.size()), b.data(), b.size()),
            Value(a + b));
}

TEST(Crc32cTest, MaskRoundTripsAndChangesValue) {
  uint32_t crc = Value("foo");
  EXPECT_NE(crc, Mask(crc));
  EXPECT_NE(crc, Mask(Mask(crc)));
  EXPECT_EQ(crc, Unmask(Mask(crc)));
  EXPECT_EQ(crc, Unmask(Unmask(Mask(Mask(crc)))));
  // Mask by hand: rotate right 15, add the delta.
  EXPECT_EQ(Mask(0xE3069283u), ((0xE3069283u >> 15) | (0xE3069283u << 17)) + 0xa282ead8u);
}

// The build has no -march (it must run on any x86-64 machine), so the SSE4.2 path is
// chosen at run time: it must be taken exactly when the CPU has the instruction, as the
// kernel reports it in /proc/cpuinfo (independent of __builtin_cpu_supports).
TEST(Crc32cTest, DispatchFollowsTheCpu) {
#if defined(__x86_64__) && defined(__linux__)
  EXPECT_EQ(IsHardwareAccelerated(), ::loom::testing::CpuinfoHasFlag("sse4_2"));
#endif
  std::cout << "crc32c hardware accelerated: " << IsHardwareAccelerated() << "\n";
}

}  // namespace
}  // namespace loom::crc32c
