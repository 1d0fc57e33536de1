// Dropout: the mask's values, its stream (bit-identical to RandomUniform's for the same
// seeds, which the 8-lane kernel must keep), the gradient and the rate checks.
#include "loom/ops/dropout.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "loom/autodiff/gradients.h"
#include "loom/ops/array.h"
#include "loom/ops/random.h"
#include "loom/ops/state.h"
#include "loom/ops/vector_isa.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

TEST(DropoutTest, ScalesSurvivorsAndGradientUsesTheSameMask) {
  Graph graph({.seed = 5});
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {100, 100});
  auto y = Dropout(s, x, 0.25);
  auto dx = Gradients(s, {y}, {x})[0];
  Tensor xv(kFloat64, {100, 100});
  for (int64_t i = 0; i < xv.NumElements(); ++i) xv.data<double>()[i] = 1.0 + i % 7;
  Session session(graph, {.intra_op_threads = 2});
  auto out = session.Run({{x, xv}}, {y, dx});
  int64_t dropped = 0;
  for (int64_t i = 0; i < xv.NumElements(); ++i) {
    const double yi = out[0].data<double>()[i], gi = out[1].data<double>()[i];
    if (yi == 0) {
      ++dropped;
      EXPECT_EQ(gi, 0.0);
    } else {
      EXPECT_DOUBLE_EQ(yi, xv.data<double>()[i] / 0.75);
      EXPECT_DOUBLE_EQ(gi, 1.0 / 0.75);
    }
  }
  EXPECT_NEAR(dropped / 10000.0, 0.25, 0.02);
  // Rate 0 is the identity; rate 1 is an error.
  EXPECT_EQ(Dropout(s, x, 0.0), x);
  EXPECT_THROW(Dropout(s, x, 1.0), Error);
}

TEST(DropoutTest, RegistersItsOps) {
  OpRegistry registry;
  RegisterDropoutOps(registry);
  for (const char* name : {"Dropout", "DropoutWithRate", "DropoutGrad"}) {
    EXPECT_NE(registry.Find(name), nullptr) << name;
  }
}

// The mask keeps element i exactly when element i of RandomUniform's stream for the same
// seeds and run is >= rate: the 32-blocks-at-a-time AVX2 kernel draws the same Philox bits as
// the one-block path. Sizes cover a single partial block, a partial group of 32 blocks, and
// several thread-pool chunks (2048 blocks each) with a ragged tail; runs 0 and 1 differ;
// both the AVX2 kernel (where the CPU has AVX2) and the baseline one.
TEST(DropoutTest, MaskIsRandomUniformsStreamBitForBit) {
  for (const int64_t n : {int64_t{1}, int64_t{3}, int64_t{31}, int64_t{33}, int64_t{257},
                          int64_t{4 * 2048 * 3 + 37}}) {
    for (const DType dtype : {kFloat32, kFloat64}) {
      Graph graph({.seed = 11});
      Scope s(graph);
      const double rate = 0.3;
      Tensor ones_value(dtype, {n});
      for (int64_t i = 0; i < n; ++i) {
        if (dtype == kFloat32)
          ones_value.data<float>()[i] = 1;
        else
          ones_value.data<double>()[i] = 1;
      }
      Output ones = Const(s, ones_value);
      Output y = Dropout(s, ones, rate, /*seed=*/7);
      Output u = RandomUniform(s, Shape{n}, kFloat32, 0.0, 1.0, /*seed=*/7);
      for (const int threads : {1, 2, -1}) {  // -1: 2 threads, the baseline (non-AVX2) copy
        std::optional<internal::ScopedBaselineVectorIsa> baseline;
        if (threads < 0) baseline.emplace();
        Session session(graph, {.intra_op_threads = std::abs(threads)});
        for (int run = 0; run < 2; ++run) {
          auto out = session.Run({}, {y, u});
          const float* uniform = out[1].data<float>();
          int64_t mismatches = 0;
          for (int64_t i = 0; i < n; ++i) {
            const double expected = uniform[i] >= static_cast<float>(rate) ? 1.0 / (1.0 - rate) : 0;
            const double got =
                dtype == kFloat32 ? out[0].data<float>()[i] : out[0].data<double>()[i];
            const double want = dtype == kFloat32 ? static_cast<float>(expected) : expected;
            if (got != want) ++mismatches;
          }
          EXPECT_EQ(mismatches, 0)
              << "n " << n << " " << DTypeName(dtype) << " threads " << threads << " run " << run;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom
