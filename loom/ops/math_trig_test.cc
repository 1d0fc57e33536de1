#include "loom/ops/math_trig.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>

#include "loom/autodiff/gradients.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;
using Builder = Output (*)(const Scope&, Input);

struct Case {
  const char* name;
  Builder op;
  std::function<double(double)> reference;
};

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"Sin", Sin, [](double v) { return std::sin(v); }},
      {"Cos", Cos, [](double v) { return std::cos(v); }},
      {"Tan", Tan, [](double v) { return std::tan(v); }},
      {"Asin", Asin, [](double v) { return std::asin(v); }},
      {"Acos", Acos, [](double v) { return std::acos(v); }},
      {"Atan", Atan, [](double v) { return std::atan(v); }},
      {"Sinh", Sinh, [](double v) { return std::sinh(v); }},
      {"Cosh", Cosh, [](double v) { return std::cosh(v); }},
      {"Expm1", Expm1, [](double v) { return std::expm1(v); }},
      {"Erf", Erf, [](double v) { return std::erf(v); }},
      {"Ceil", Ceil, [](double v) { return std::ceil(v); }},
  };
  return *cases;
}

// Each function against the float64 reference, in float64 and in float32 (to float32's
// precision), on points inside every domain (|x| < 1).
TEST(MathTrigTest, ValuesMatchTheReference) {
  const std::vector<double> points = {-0.9, -0.5, -1e-6, 0.0, 0.3, 0.75, 0.99};
  for (const Case& c : Cases()) {
    Graph graph;
    Scope s(graph);
    std::vector<float> points32(points.begin(), points.end());
    Output y64 = c.op(s, Const(s, Tensor::FromVector<double>(points)));
    Output y32 = c.op(s, Const(s, Tensor::FromVector<float>(points32)));
    EXPECT_EQ(y64.node->op(), c.name);
    Session session(graph);
    auto out = session.Run({}, {y64, y32});
    for (size_t i = 0; i < points.size(); ++i) {
      const double want = c.reference(points[i]);
      // Vectorized math libraries may round a few ulps differently from std::.
      EXPECT_NEAR(out[0].flat<double>()[i], want, 1e-14 * std::max(1.0, std::abs(want)))
          << c.name << "(" << points[i] << ")";
      EXPECT_NEAR(out[1].flat<float>()[i], want, 1e-6 * std::max(1.0, std::abs(want)))
          << c.name << "(" << points[i] << ")";
    }
  }
}

TEST(MathTrigTest, ExpmOneIsAccurateNearZeroAndAsinOutsideIsNan) {
  Graph graph;
  Scope s(graph);
  Session session(graph);
  // exp(1e-10) - 1 in float64 keeps ~6 digits; expm1 keeps all.
  EXPECT_NEAR(session.Eval(Expm1(s, Const(s, Tensor::Scalar<double>(1e-10)))).scalar<double>(),
              std::expm1(1e-10), 1e-24);
  EXPECT_TRUE(
      std::isnan(session.Eval(Asin(s, Const(s, Tensor::Scalar<double>(2.0)))).scalar<double>()));
  std::string m =
      ErrorOf([&] { Sin(s, Const(s, Tensor::Scalar<int32_t>(1))); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.find("int32"), std::string::npos) << m;
}

// Every differentiable one passes the numeric gradient checker in float64; Ceil says why
// it has no gradient.
TEST(MathTrigGradTest, NumericGradients) {
  for (const Case& c : Cases()) {
    if (std::string(c.name) == "Ceil") continue;
    Builder op = c.op;
    // Inside (-0.8, 0.8): every function's domain, away from tan's poles.
    Tensor x = RandomDoubles({3, 4}, 5, -0.8, 0.8);
    EXPECT_LT(MaxGradientError(
                  [op](const Scope& s, const std::vector<Output>& v) { return op(s, v[0]); }, {x}),
              1e-7)
        << c.name;
  }
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {3});
  std::string m = ErrorOf([&] { Gradients(s, {Ceil(s, x)}, {x}); });
  EXPECT_NE(m.find("piecewise constant"), std::string::npos) << m;
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// atan2 in each quadrant and on the axes, against std::atan2, with a [2, 1] y broadcast
// against a [4] x; float32 to its precision.
TEST(MathTrigTest, Atan2MatchesTheReferenceWithBroadcasting) {
  const std::vector<double> ys = {1.0, -0.5}, xs = {2.0, -1.0, 0.0, -3.0};
  Graph graph;
  Scope s(graph);
  Output z64 = Atan2(s, Const(s, Tensor::FromVector<double>(ys, {2, 1})),
                     Const(s, Tensor::FromVector<double>(xs)));
  Output z32 = Atan2(s, Const(s, Tensor::FromVector<float>({1.f, -0.5f}, {2, 1})),
                     Const(s, Tensor::FromVector<float>({2.f, -1.f, 0.f, -3.f})));
  Output origin = Atan2(s, Const(s, Tensor::Scalar<double>(0.0)), 0.0);
  EXPECT_EQ(z64.shape(), Shape({2, 4}));
  Session session(graph);
  auto out = session.Run({}, {z64, z32, origin});
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      const double want = std::atan2(ys[i], xs[j]);
      EXPECT_NEAR(out[0].flat<double>()[i * 4 + j], want, 1e-15) << i << "," << j;
      EXPECT_NEAR(out[1].flat<float>()[i * 4 + j], want, 1e-6) << i << "," << j;
    }
  }
  EXPECT_EQ(out[0].flat<double>()[2], std::numbers::pi / 2);  // atan2(1, 0)
  EXPECT_EQ(out[2].scalar<double>(), 0.0);
}

TEST(MathTrigGradTest, Atan2NumericGradientsWithBroadcasting) {
  // Away from the origin, where atan2 is smooth.
  Tensor y = RandomDoubles({3, 1}, 31, 0.5, 1.5);
  Tensor x = RandomDoubles({4}, 32, -1.5, 1.5);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& v) { return Atan2(s, v[0], v[1]); },
                {y, x}),
            1e-8);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const std::vector<Output>& v) { return Atan2(s, v[0], v[1]); },
                {RandomDoubles({2, 3}, 33, -1.5, -0.5), RandomDoubles({2, 3}, 34, -1.5, 1.5)}),
            1e-8);
}

}  // namespace
}  // namespace loom
