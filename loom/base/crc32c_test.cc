#include "loom/base/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

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

TEST(Crc32cTest, ReportsImplementation) {
  // Not an assertion about the machine; records which path the other tests exercised.
  std::cout << "crc32c hardware accelerated: " << IsHardwareAccelerated() << "\n";
  SUCCEED();
}

}  // namespace
}  // namespace loom::crc32c
