// exp and log over float arrays (vector_math.h): within 2 ulp of float64's result over the
// whole float range, IEEE special values, and the same bits whichever copy (baseline or
// AVX2) runs, whatever the array's length or offset, and whatever the kernels' thread count.
#include "loom/ops/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "loom/ops/nn_test_util.h"
#include "loom/ops/vector_isa.h"

namespace loom {
namespace {

using internal::ExpFloats;
using internal::LogFloats;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Every `stride`-th float bit pattern from `lo` to `hi` (as unsigned bits, so both signs),
// plus the float range's edges.
std::vector<float> Sweep(uint32_t lo, uint32_t hi, uint32_t stride) {
  std::vector<float> v;
  for (uint64_t b = lo; b <= hi; b += stride) v.push_back(std::bit_cast<float>(uint32_t(b)));
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()})
    v.push_back(x);
  return v;
}

// The error of `got` in units of the last place of the correctly rounded float nearest
// `exact`; subnormal results count in units of the smallest subnormal.
double UlpError(float got, double exact) {
  const float rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : 1e9;
  const double ulp = std::abs(rounded) < std::numeric_limits<float>::min()
                         ? std::numeric_limits<float>::denorm_min()
                         : std::abs(std::nextafter(rounded, kInf) - static_cast<double>(rounded));
  return std::abs(static_cast<double>(got) - exact) / ulp;
}

std::vector<float> Apply(void (*fn)(const float*, float*, int64_t), const std::vector<float>& x) {
  std::vector<float> y(x.size());
  fn(x.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

TEST(VectorMathTest, ExpIsWithinTwoUlpOverTheFloatRange) {
  // All finite floats of both signs, every 4099th bit pattern (~2 million).
  std::vector<float> x = Sweep(0, 0xff7fffff, 4099);
  const std::vector<float> neg = Sweep(0x80000000u, 0xff7fffffu, 4099);
  x.insert(x.end(), neg.begin(), neg.end());
  const std::vector<float> y = Apply(ExpFloats, x);
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = UlpError(y[i], std::exp(static_cast<double>(x[i])));
    if (e > worst) worst = e, worst_x = x[i];
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
}

TEST(VectorMathTest, ExpSpecialValues) {
  const std::vector<float> x = {-kInf, kInf,   kNan,    0.0f,    -0.0f,   88.72f,  88.73f, 89.0f,
                                1e30f, -87.0f, -100.0f, -103.9f, -104.0f, -110.0f, -1e30f, 1e-30f};
  const std::vector<float> y = Apply(ExpFloats, x);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], kInf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], 1.0f);
  EXPECT_TRUE(std::isfinite(y[5]));
  EXPECT_LE(UlpError(y[5], std::exp(static_cast<double>(x[5]))), 2.0);
  for (int i : {6, 7, 8}) EXPECT_EQ(y[i], kInf) << x[i];
  EXPECT_GT(y[9], 0.0f);
  EXPECT_LT(y[10], std::numeric_limits<float>::min());  // subnormal
  EXPECT_GT(y[10], 0.0f);
  EXPECT_LE(UlpError(y[10], std::exp(-100.0)), 1.0);
  EXPECT_GT(y[11], 0.0f);  // exp(-103.9) is about 1.4e-45: the smallest subnormal
  for (int i : {12, 13, 14}) EXPECT_EQ(y[i], 0.0f) << x[i];
  EXPECT_EQ(y[15], 1.0f);
}

TEST(VectorMathTest, LogIsWithinTwoUlpOverThePositiveFloats) {
  // Every 257th positive float, subnormals included (~8 million values).
  const std::vector<float> x = Sweep(1, 0x7f7fffff, 257);
  const std::vector<float> y = Apply(LogFloats, x);
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0)) continue;
    const double e = UlpError(y[i], std::log(static_cast<double>(x[i])));
    if (e > worst) worst = e, worst_x = x[i];
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
}

TEST(VectorMathTest, LogSpecialValues) {
  const std::vector<float> x = {0.0f,  -0.0f,   -1.0f,
                                -kInf, kInf,    kNan,
                                1.0f,  -1e-40f, std::numeric_limits<float>::denorm_min()};
  const std::vector<float> y = Apply(LogFloats, x);
  EXPECT_EQ(y[0], -kInf);
  EXPECT_EQ(y[1], -kInf);
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_TRUE(std::isnan(y[3]));
  EXPECT_EQ(y[4], kInf);
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[6], 0.0f);
  EXPECT_TRUE(std::isnan(y[7]));
  EXPECT_NEAR(y[8], std::log(static_cast<double>(x[8])), 1e-5);  // -103.28
}

// The same bits from the baseline and the AVX2 copies, from any length and offset (the
// vector loops' tails), and in place.
TEST(VectorMathTest, ResultsDoNotDependOnTheCopyTheLengthOrTheOffset) {
  std::vector<float> x;
  for (int i = 0; i < 1000; ++i) x.push_back(-90.0f + 0.18f * i + 1e-3f * (i % 7));
  x[17] = kNan;
  x[18] = -kInf;
  for (auto fn : {ExpFloats, LogFloats}) {
    const std::vector<float> active = Apply(fn, x);
    std::vector<float> base;
    {
      internal::ScopedBaselineVectorIsa baseline;
      base = Apply(fn, x);
    }
    EXPECT_EQ(std::memcmp(active.data(), base.data(), x.size() * sizeof(float)), 0);
    for (int offset : {0, 1, 3, 5}) {
      for (int n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33}) {
        std::vector<float> part(x.begin() + offset, x.begin() + offset + n);
        fn(part.data(), part.data(), n);  // in place
        EXPECT_EQ(std::memcmp(part.data(), active.data() + offset, n * sizeof(float)), 0)
            << "offset " << offset << " length " << n;
      }
    }
  }
}

// The losses and softmaxes that use them give the same bits on 1 and 2 threads, whatever
// the chunks of rows each thread gets.
TEST(VectorMathTest, SoftmaxAndCrossEntropyDoNotDependOnTheThreadCount) {
  const int rows = 300, classes = 10;
  Tensor logits(kFloat32, Shape{rows, classes});
  std::vector<int64_t> ids;
  for (int i = 0; i < rows * classes; ++i) logits.data<float>()[i] = std::sin(0.37f * i) * 9;
  for (int r = 0; r < rows; ++r) ids.push_back((r * 7) % classes);
  const Tensor labels = Tensor::FromVector(ids);
  const std::vector<std::function<Output(const Scope&, const std::vector<Output>&)>> builds = {
      [](const Scope& s, const std::vector<Output>& in) {
        return SparseSoftmaxCrossEntropyWithLogits(s, in[1], in[0]);
      },
      [](const Scope& s, const std::vector<Output>& in) { return Softmax(s, in[0]); },
      [](const Scope& s, const std::vector<Output>& in) { return LogSoftmax(s, in[0]); },
  };
  for (const auto& build : builds) {
    const Tensor one = nn_test::EvalWith({logits, labels}, build, 1);
    const Tensor two = nn_test::EvalWith({logits, labels}, build, 2);
    EXPECT_TRUE(one.Equals(two));
  }
}

}  // namespace
}  // namespace loom
