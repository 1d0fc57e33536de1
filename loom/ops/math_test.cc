#include "loom/ops/math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/autodiff/gradients.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"
#include "loom/testing/values.h"

namespace loom {
namespace {

using testing::ErrorOf;

using Xs = std::vector<Output>;

using testing::Values;

std::vector<bool> Bools(const Tensor& t) {
  std::vector<bool> out;
  for (bool b : t.flat<bool>()) out.push_back(b);
  return out;
}

// Positive values in [lo, hi), away from 0 (for log, sqrt, division).
Tensor Positive(const Shape& shape, uint64_t seed = 3, double lo = 0.5, double hi = 2.0) {
  return RandomDoubles(shape, seed, lo, hi);
}

TEST(MathTest, BinaryBroadcastShapesAndValues) {
  Graph graph;
  Scope s(graph);
  auto a = Const(s, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  auto row = Const(s, Tensor::FromVector<float>({10, 20, 30}, {3}));
  auto col = Const(s, Tensor::FromVector<float>({1, 2}, {2, 1}));
  auto r13 = Const(s, Tensor::FromVector<float>({100, 200, 300}, {1, 3}));
  Session session(graph);

  auto sum = Add(s, a, row);
  EXPECT_EQ(sum.shape(), Shape({2, 3}));
  EXPECT_EQ(Values<float>(session.Eval(sum)), (std::vector<float>{11, 22, 33, 14, 25, 36}));

  auto outer = Add(s, col, r13);  // [2,1] + [1,3] -> [2,3]
  EXPECT_EQ(outer.shape(), Shape({2, 3}));
  EXPECT_EQ(Values<float>(session.Eval(outer)), (std::vector<float>{101, 201, 301, 102, 202, 302}));

  EXPECT_EQ(Values<float>(session.Eval(Mul(s, a, 2.0))), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(Values<float>(session.Eval(Sub(s, 10.0f, a))), (std::vector<float>{9, 8, 7, 6, 5, 4}));
  EXPECT_EQ(Values<float>(session.Eval(Div(s, a, col))), (std::vector<float>{1, 2, 3, 2, 2.5, 3}));
  EXPECT_EQ(Values<float>(session.Eval(Maximum(s, a, 3.5))),
            (std::vector<float>{3.5, 3.5, 3.5, 4, 5, 6}));
  EXPECT_EQ(Values<float>(session.Eval(Minimum(s, row, a))),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Values<float>(session.Eval(Pow(s, a, 2.0))), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  // [3] + [2,3]: the broadcast operand first.
  EXPECT_EQ(Values<float>(session.Eval(Sub(s, row, a))),
            (std::vector<float>{9, 18, 27, 6, 15, 24}));
}

TEST(MathTest, LargeBroadcastMatchesReferenceOnManyThreads) {
  // Big enough to be split over the pool; checks every fast path against a plain loop.
  const int64_t n = 300, k = 257;
  Graph graph;
  Scope s(graph);
  Tensor av = RandomDoubles({n, k}, 1), rv = RandomDoubles({k}, 2), cv = RandomDoubles({n, 1}, 3);
  auto a = Const(s, av), r = Const(s, rv), c = Const(s, cv);
  auto same = Mul(s, a, a), row = Add(s, a, r), col = Sub(s, a, c), scalar = Mul(s, a, 3.0);
  auto mixed = Add(s, c, r);  // [n,1] + [k]
  Session session(graph, {.intra_op_threads = 4});
  auto out = session.Run({}, {same, row, col, scalar, mixed});
  const double *A = av.data<double>(), *R = rv.data<double>(), *C = cv.data<double>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = i * k + j;
      ASSERT_EQ(out[0].data<double>()[e], A[e] * A[e]);
      ASSERT_EQ(out[1].data<double>()[e], A[e] + R[j]);
      ASSERT_EQ(out[2].data<double>()[e], A[e] - C[i]);
      ASSERT_EQ(out[3].data<double>()[e], A[e] * 3.0);
      ASSERT_EQ(out[4].data<double>()[e], C[i] + R[j]);
    }
  }
}

TEST(MathTest, ThreeDimBroadcast) {
  Graph graph;
  Scope s(graph);
  Tensor av = RandomDoubles({2, 1, 4}, 1), bv = RandomDoubles({3, 1}, 2);
  auto y = Mul(s, Const(s, av), Const(s, bv));
  EXPECT_EQ(y.shape(), Shape({2, 3, 4}));
  Session session(graph);
  Tensor out = session.Eval(y);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l)
        EXPECT_EQ(out.data<double>()[(i * 3 + j) * 4 + l],
                  av.data<double>()[i * 4 + l] * bv.data<double>()[j]);
}

TEST(MathTest, UnaryValues) {
  Graph graph;
  Scope s(graph);
  auto x = Const(s, Tensor::FromVector<double>({-2.5, -1, 0.25, 4}));
  auto p = Const(s, Tensor::FromVector<double>({0.5, 1, 2, 4}));
  Session session(graph);
  auto check = [&](Output y, std::function<double(double)> ref, Tensor in) {
    auto got = Values<double>(session.Eval(y));
    auto xs = Values<double>(in);
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_DOUBLE_EQ(got[i], ref(xs[i])) << y.name();
  };
  Tensor xv = Tensor::FromVector<double>({-2.5, -1, 0.25, 4});
  Tensor pv = Tensor::FromVector<double>({0.5, 1, 2, 4});
  check(
      Neg(s, x), [](double v) { return -v; }, xv);
  check(
      Abs(s, x), [](double v) { return std::fabs(v); }, xv);
  check(
      Square(s, x), [](double v) { return v * v; }, xv);
  check(
      Sign(s, x), [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }, xv);
  check(
      Floor(s, x), [](double v) { return std::floor(v); }, xv);
  check(
      Round(s, x), [](double v) { return std::nearbyint(v); }, xv);
  check(
      Exp(s, x), [](double v) { return std::exp(v); }, xv);
  check(
      Log(s, p), [](double v) { return std::log(v); }, pv);
  check(
      Log1p(s, p), [](double v) { return std::log1p(v); }, pv);
  check(
      Sqrt(s, p), [](double v) { return std::sqrt(v); }, pv);
  check(
      Rsqrt(s, p), [](double v) { return 1 / std::sqrt(v); }, pv);
  check(
      Reciprocal(s, p), [](double v) { return 1 / v; }, pv);
}

TEST(MathTest, IntegerArithmeticAndDivisionByZero) {
  Graph graph;
  Scope s(graph);
  auto a = Const(s, Tensor::FromVector<int32_t>({7, -7, 9}));
  auto b = Const(s, Tensor::FromVector<int32_t>({2, 2, 0}));
  Session session(graph);
  EXPECT_EQ(Values<int32_t>(session.Eval(Add(s, a, 1))), (std::vector<int32_t>{8, -6, 10}));
  EXPECT_EQ(Values<int32_t>(session.Eval(Abs(s, a))), (std::vector<int32_t>{7, 7, 9}));
  EXPECT_EQ(Values<int32_t>(session.Eval(Div(s, a, 2))), (std::vector<int32_t>{3, -3, 4}));
  std::string message = ErrorOf([&] { session.Eval(Div(s.WithOpName("bad_div"), a, b)); });
  EXPECT_NE(message.find("division by zero"), std::string::npos) << message;
  EXPECT_NE(message.find("bad_div"), std::string::npos) << message;
}

TEST(MathTest, FloorDivAndFloorModRoundTowardMinusInfinityAsPython) {
  Graph graph;
  Scope s(graph);
  // Every sign pair, exact multiples, and the one overflowing quotient (INT_MIN / -1).
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  const std::vector<int32_t> xs = {7, -7, 7, -7, 6, -6, 0, kMin, kMin, 5};
  const std::vector<int32_t> ys = {2, 2, -2, -2, 3, 3, 4, -1, 3, 1};
  auto a = Const(s, Tensor::FromVector<int32_t>(xs));
  auto b = Const(s, Tensor::FromVector<int32_t>(ys));
  Session session(graph);
  std::vector<int32_t> want_div, want_mod, want_trunc;
  for (size_t i = 0; i < xs.size(); ++i) {
    // Python's // and % from float64 floor, and C's truncation, as references.
    const int64_t x = xs[i], y = ys[i];
    const auto q =
        static_cast<int64_t>(std::floor(static_cast<double>(x) / static_cast<double>(y)));
    want_div.push_back(static_cast<int32_t>(static_cast<uint32_t>(q)));  // INT_MIN / -1 wraps
    want_mod.push_back(static_cast<int32_t>(x - q * y));
    want_trunc.push_back(static_cast<int32_t>(static_cast<uint32_t>(x / y)));
  }
  EXPECT_EQ(Values<int32_t>(session.Eval(FloorDiv(s, a, b))), want_div);
  EXPECT_EQ(Values<int32_t>(session.Eval(FloorMod(s, a, b))), want_mod);
  EXPECT_EQ(Values<int32_t>(session.Eval(Div(s, a, b))), want_trunc);
  EXPECT_EQ(want_div[1], -4);  // the cases that differ from truncation, spelled out
  EXPECT_EQ(want_mod[1], 1);
  EXPECT_EQ(want_mod[2], -1);

  // int64 and uint8 with a broadcast scalar divisor.
  auto l = Const(s, Tensor::FromVector<int64_t>({-9, -1, 0, 1, 9}));
  EXPECT_EQ(Values<int64_t>(session.Eval(FloorDiv(s, l, int64_t{4}))),
            (std::vector<int64_t>{-3, -1, 0, 0, 2}));
  EXPECT_EQ(Values<int64_t>(session.Eval(FloorMod(s, l, int64_t{4}))),
            (std::vector<int64_t>{3, 3, 0, 1, 1}));
  auto u = Const(s, Tensor::FromVector<uint8_t>({250, 7}));
  EXPECT_EQ(
      Values<uint8_t>(session.Eval(FloorMod(s, u, Const(s, Tensor::FromVector<uint8_t>({7}))))),
      (std::vector<uint8_t>{5, 0}));

  // Floats: floor(x / y), and the remainder with y's sign (fmod-based: exact).
  auto f = Const(s, Tensor::FromVector<double>({7.5, -7.5, 7.5, -7.5, 1e17 + 8}));
  auto g = Const(s, Tensor::FromVector<double>({2, 2, -2, -2, 3}));
  EXPECT_EQ(Values<double>(session.Eval(FloorDiv(s, f, g))),
            (std::vector<double>{3, -4, -4, 3, std::floor((1e17 + 8) / 3)}));
  EXPECT_EQ(Values<double>(session.Eval(FloorMod(s, f, g))),
            (std::vector<double>{1.5, 0.5, -0.5, -1.5, std::fmod(1e17 + 8, 3)}));

  // A zero integer divisor fails naming the node, for each of the three.
  auto zero = Const(s, Tensor::FromVector<int32_t>({1, 0, 1, 1, 1, 1, 1, 1, 1, 1}));
  for (const auto& entry :
       std::vector<std::pair<const char*, Output (*)(const Scope&, Input, Input)>>{
           {"bad_floordiv", [](const Scope&sc, Input x, Input y) { return FloorDiv(sc, x, y); }},
           {"bad_floormod", [](const Scope&sc, Input x, Input y) { return FloorMod(sc, x, y); }},
           {"bad_div", [](const Scope&sc, Input x, Input y) { return Div(sc, x, y); }}}) {
    const char* name = entry.first;  // named, not bound: clang 14 cannot capture bindings
    const auto fn = entry.second;
    std::string message = ErrorOf([&] { session.Eval(fn(s.WithOpName(name), a, zero)); });
    EXPECT_NE(message.find("division by zero"), std::string::npos) << message;
    EXPECT_NE(message.find(name), std::string::npos) << message;
  }
}

TEST(MathTest, ComparisonsLogicSelectCast) {
  Graph graph;
  Scope s(graph);
  auto a = Const(s, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  auto t = Const(s, Tensor::FromVector<float>({2, 5, 3}, {3}));
  Session session(graph);
  EXPECT_EQ(Bools(session.Eval(Less(s, a, t))),
            (std::vector<bool>{true, true, false, false, false, false}));
  EXPECT_EQ(Bools(session.Eval(LessEqual(s, a, t))),
            (std::vector<bool>{true, true, true, false, true, false}));
  EXPECT_EQ(Bools(session.Eval(Greater(s, a, 3.0))),
            (std::vector<bool>{false, false, false, true, true, true}));
  EXPECT_EQ(Bools(session.Eval(GreaterEqual(s, a, 3.0))),
            (std::vector<bool>{false, false, true, true, true, true}));
  EXPECT_EQ(Bools(session.Eval(Equal(s, a, t))),
            (std::vector<bool>{false, false, true, false, true, false}));
  EXPECT_EQ(Bools(session.Eval(NotEqual(s, a, t))),
            (std::vector<bool>{true, true, false, true, false, true}));
  auto big = Greater(s, a, 2.0), odd = Equal(s, a, t);
  EXPECT_EQ(Bools(session.Eval(LogicalAnd(s, big, odd))),
            (std::vector<bool>{false, false, true, false, true, false}));
  EXPECT_EQ(Bools(session.Eval(LogicalOr(s, big, odd))),
            (std::vector<bool>{false, false, true, true, true, true}));
  EXPECT_EQ(Bools(session.Eval(LogicalNot(s, big))),
            (std::vector<bool>{true, true, false, false, false, false}));
  EXPECT_EQ(Less(s, a, t).dtype(), kBool);

  // Select broadcasting: [2,3] condition, [3] and scalar branches.
  EXPECT_EQ(Values<float>(session.Eval(Select(s, big, t, -1.0f))),
            (std::vector<float>{-1, -1, 3, 2, 5, 3}));
  EXPECT_EQ(Values<float>(session.Eval(Where(s, big, a, 0.0f))),
            (std::vector<float>{0, 0, 3, 4, 5, 6}));
  EXPECT_EQ(Values<float>(session.Eval(ClipByValue(s, a, 2.0, 4.5))),
            (std::vector<float>{2, 2, 3, 4, 4.5, 4.5}));

  auto half = Const(s, Tensor::FromVector<double>({-1.5, 0, 2.7}));
  EXPECT_EQ(Values<int32_t>(session.Eval(Cast(s, half, kInt32))), (std::vector<int32_t>{-1, 0, 2}));
  EXPECT_EQ(Bools(session.Eval(Cast(s, half, kBool))), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(Values<float>(session.Eval(Cast(s, big, kFloat32))),
            (std::vector<float>{0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(Values<uint8_t>(session.Eval(Cast(s, Cast(s, a, kInt64), kUInt8))),
            (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Cast(s, a, kFloat32), a);  // no-op cast adds no node
}

// Maximum and Minimum propagate NaN from either side, as numpy's maximum/minimum do, on
// the same-shape path, on both broadcast paths (scalar on either side) and in float64.
TEST(MathTest, MaximumAndMinimumPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Graph graph;
  Scope s(graph);
  auto a = Const(s, Tensor::FromVector<float>({nan, 1, 5, nan, -2}));
  auto b = Const(s, Tensor::FromVector<float>({0, nan, 3, nan, -1}));
  Session session(graph);
  auto expect = [](const Tensor& t, std::vector<float> expected, const char* what) {
    std::vector<float> v = Values<float>(t);
    ASSERT_EQ(v.size(), expected.size()) << what;
    for (size_t i = 0; i < v.size(); ++i) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(v[i])) << what << " element " << i << " = " << v[i];
      } else {
        EXPECT_EQ(v[i], expected[i]) << what << " element " << i;
      }
    }
  };
  expect(session.Eval(Maximum(s, a, b)), {nan, nan, 5, nan, -1}, "Maximum");
  expect(session.Eval(Minimum(s, a, b)), {nan, nan, 3, nan, -2}, "Minimum");
  expect(session.Eval(Maximum(s, a, 2.0f)), {nan, 2, 5, nan, 2}, "Maximum(a, scalar)");
  expect(session.Eval(Minimum(s, 2.0f, b)), {0, nan, 2, nan, -1}, "Minimum(scalar, b)");
  expect(session.Eval(Maximum(s, a, nan)), {nan, nan, nan, nan, nan}, "Maximum(a, NaN)");
  auto d = Const(s, Tensor::FromVector<double>({1, std::nan("")}));
  std::vector<double> dv = Values<double>(session.Eval(Maximum(s, d, 0.0)));
  EXPECT_EQ(dv[0], 1);
  EXPECT_TRUE(std::isnan(dv[1]));
  auto i = Const(s, Tensor::FromVector<int32_t>({3, -4}));
  EXPECT_EQ(Values<int32_t>(session.Eval(Maximum(s, i, 0))), (std::vector<int32_t>{3, 0}));
}

TEST(MathTest, ShapeErrorsNameTheNodeAndBothShapes) {
  Graph graph;
  Scope s(graph);
  auto a = Placeholder(s, kFloat32, {2, 3});
  auto b = Placeholder(s, kFloat32, {4});
  std::string message = ErrorOf([&] { Add(s.WithOpName("bad_add"), a, b); });
  EXPECT_NE(message.find("bad_add"), std::string::npos) << message;
  EXPECT_NE(message.find("[2,3]"), std::string::npos) << message;
  EXPECT_NE(message.find("[4]"), std::string::npos) << message;
  auto d = Placeholder(s, kFloat64, {2, 3});
  message = ErrorOf([&] { Mul(s.WithOpName("mixed"), a, d); });
  EXPECT_NE(message.find("mixed"), std::string::npos) << message;
  EXPECT_NE(message.find("Cast"), std::string::npos) << message;
  auto i = Placeholder(s, kInt32, {2});
  message = ErrorOf([&] { Exp(s.WithOpName("int_exp"), i); });
  EXPECT_NE(message.find("int_exp"), std::string::npos) << message;
  // Unknown dims broadcast at construction; the runtime check names the node.
  auto u = Placeholder(s, kFloat32, {-1});
  auto y = Add(s.WithOpName("late"), a, u);
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  Session session(graph);
  message = ErrorOf([&] {
    session.Run({{a, Tensor::Zeros(kFloat32, {2, 3})}, {u, Tensor::Zeros(kFloat32, {5})}}, {y});
  });
  EXPECT_NE(message.find("late"), std::string::npos) << message;
  EXPECT_NE(message.find("[5]"), std::string::npos) << message;
}

TEST(MathTest, UnaryAndBinaryRunInPlaceOnIntermediates) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {-1});
  auto e = Exp(s, x);        // fresh buffer
  auto n = Neg(s, e);        // may reuse e's buffer
  auto m = Add(s, n, 1.0f);  // may reuse n's buffer
  Session session(graph);
  Tensor in = Tensor::FromVector<float>({0, 1});
  Tensor out = session.Run({{x, in}}, {m})[0];
  EXPECT_FLOAT_EQ(out.data<float>()[0], 0.0f);
  EXPECT_FLOAT_EQ(out.data<float>()[1], 1.0f - std::exp(1.0f));
  EXPECT_EQ(in.data<float>()[1], 1.0f);  // a fed value is never overwritten
}

TEST(MathTest, SumToShapeOfReducesBroadcastDims) {
  Graph graph;
  Scope s(graph);
  auto g = Const(s, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  auto row = Placeholder(s, kFloat32, {3});
  auto col = Placeholder(s, kFloat32, {2, 1});
  auto scalar = Placeholder(s, kFloat32, {});
  auto same = Placeholder(s, kFloat32, {2, 3});
  Session session(graph);
  FeedList feeds = {{row, Tensor::Zeros(kFloat32, {3})},
                    {col, Tensor::Zeros(kFloat32, {2, 1})},
                    {scalar, Tensor::Zeros(kFloat32, {})},
                    {same, Tensor::Zeros(kFloat32, {2, 3})}};
  auto out = session.Run(feeds, {SumToShapeOf(s, g, row), SumToShapeOf(s, g, col),
                                 SumToShapeOf(s, g, scalar), SumToShapeOf(s, g, same)});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(out[1].shape(), Shape({2, 1}));
  EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{6, 15}));
  EXPECT_EQ(out[2].scalar<float>(), 21);
  EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

// ---------------------------------------------------------------------------------------
// Gradients, float64, through the numeric checker.

constexpr double kTol = 1e-6;

TEST(MathGradTest, BinaryArithmeticWithBroadcasting) {
  using Fn = Output (*)(const Scope&, Input, Input);
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"Add", [](const Scope& s, Input a, Input b) { return Add(s, a, b); }},
      {"Sub", [](const Scope& s, Input a, Input b) { return Sub(s, a, b); }},
      {"Mul", [](const Scope& s, Input a, Input b) { return Mul(s, a, b); }},
      {"Div", [](const Scope& s, Input a, Input b) { return Div(s, a, b); }},
      {"Pow", [](const Scope& s, Input a, Input b) { return Pow(s, a, b); }},
  };
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}},      {{2, 1}, {1, 3}},
      {{2, 3}, {}},     {{}, {2, 3}},  {{2, 1, 4}, {3, 1}}};
  for (const auto& [name, fn] : ops) {
    const Fn op = fn;  // a variable, not a binding: clang 14 cannot capture those
    for (const auto& [sa, sb] : shapes) {
      double err = MaxGradientError([op](const Scope& s, const Xs& x) { return op(s, x[0], x[1]); },
                                    {Positive(sa, 1), Positive(sb, 2)});
      EXPECT_LT(err, kTol) << name << " " << sa << " " << sb;
    }
  }
}

TEST(MathGradTest, FloorModAwayFromItsJumpsAndFloorDivRefusesGradients) {
  // x in (0.2, 0.8) + 3k, y in (2.0, 2.1): x / y stays clear of integers, where FloorMod jumps.
  Tensor x = RandomDoubles({2, 3}, 3, 0.2, 0.8);
  Tensor y = RandomDoubles({3}, 4, 2.0, 2.1);
  for (int i = 0; i < 6; ++i) x.data<double>()[i] += 3.0 * (i % 3) - 3.0;
  EXPECT_LT(
      MaxGradientError([](const Scope& s, const Xs& v) { return FloorMod(s, v[0], v[1]); }, {x, y}),
      kTol);
  Graph graph;
  Scope s(graph);
  auto p = Placeholder(s, kFloat64, Shape({3}));
  std::string message =
      ErrorOf([&] { Gradients(s, {Sum(s, FloorDiv(s.WithOpName("fd"), p, 2.0))}, {p}); });
  EXPECT_NE(message.find("FloorDiv"), std::string::npos) << message;
  EXPECT_NE(message.find("StopGradient"), std::string::npos) << message;
}

TEST(MathGradTest, MaximumMinimumAwayFromTies) {
  // x in [0.5, 1), y in [1.5, 2) for half the elements via an offset: no ties.
  Tensor x = RandomDoubles({2, 3}, 1, -1, 1);
  Tensor y = RandomDoubles({3}, 2, -1, 1);
  for (int i = 0; i < 6; ++i) x.data<double>()[i] += (i % 2 ? 3 : -3);
  for (auto [name, fn] : std::vector<std::pair<const char*, GradientCheckFn>>{
           {"Maximum", [](const Scope&s, const Xs&v) { return Maximum(s, v[0], v[1]); }},
           {"Minimum", [](const Scope&s, const Xs&v) { return Minimum(s, v[0], v[1]); }}}) {
    EXPECT_LT(MaxGradientError(fn, {x, y}), kTol) << name;
  }
}

TEST(MathGradTest, UnaryOps) {
  const std::vector<std::pair<const char*, GradientCheckFn>> ops = {
      {"Neg", [](const Scope& s, const Xs& x) { return Neg(s, x[0]); }},
      {"Abs", [](const Scope& s, const Xs& x) { return Abs(s, Sub(s, x[0], 1.25)); }},
      {"Square", [](const Scope& s, const Xs& x) { return Square(s, x[0]); }},
      {"Exp", [](const Scope& s, const Xs& x) { return Exp(s, x[0]); }},
      {"Log", [](const Scope& s, const Xs& x) { return Log(s, x[0]); }},
      {"Log1p", [](const Scope& s, const Xs& x) { return Log1p(s, x[0]); }},
      {"Sqrt", [](const Scope& s, const Xs& x) { return Sqrt(s, x[0]); }},
      {"Rsqrt", [](const Scope& s, const Xs& x) { return Rsqrt(s, x[0]); }},
      {"Reciprocal", [](const Scope& s, const Xs& x) { return Reciprocal(s, x[0]); }},
  };
  for (const auto& [name, fn] : ops) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}}) {
      double err = MaxGradientError(fn, {Positive(shape, 4)});
      EXPECT_LT(err, kTol) << name << " " << shape;
    }
  }
}

TEST(MathGradTest, CastBetweenFloatTypes) {
  // Through float32 and back: a large step keeps float32 rounding out of the difference.
  double err = MaxGradientError(
      [](const Scope& s, const Xs& x) {
        return Cast(s, Mul(s, Cast(s, x[0], kFloat32), 3.0f), kFloat64);
      },
      {Positive({2, 3}, 4)}, {.delta = 1e-2});
  EXPECT_LT(err, 1e-4);
}

TEST(MathGradTest, SelectClipAndMasks) {
  Tensor x = RandomDoubles({2, 3}, 5, -1, 1);
  // Keep x away from the clip bounds +-0.5.
  for (double& v : x.flat<double>()) v = std::fabs(std::fabs(v) - 0.5) < 0.05 ? v * 0.5 : v;
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const Xs& v) {
                  return Select(s, Greater(s, v[0], 0.0), Mul(s, v[0], v[1]), Square(s, v[1]));
                },
                {x, RandomDoubles({3}, 6)}),
            kTol);
  EXPECT_LT(
      MaxGradientError([](const Scope& s, const Xs& v) { return ClipByValue(s, v[0], v[1], v[2]); },
                       {x, Tensor::FromVector<double>({-0.5}, {1}), Tensor::Scalar<double>(0.5)}),
      kTol);
  // A relu-style mask through a bool -> float Cast passes gradient around the mask.
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const Xs& v) {
                  return Mul(s, v[0], Cast(s, Greater(s, v[0], 0.0), kFloat64));
                },
                {x}),
            kTol);
}

TEST(MathGradTest, SumToShapeOfIsDifferentiable) {
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const Xs& v) {
                  return Mul(s, SumToShapeOf(s, Square(s, v[0]), v[1]), v[1]);
                },
                {RandomDoubles({4, 3}, 1), RandomDoubles({3}, 2)}),
            kTol);
}

// tf.round's halves go to the even neighbour (TF 1.15's documented example: [0.9, 2.5, 2.3,
// 1.5, -4.5] -> [1, 2, 2, 2, -4]), in float32 and float64.
TEST(MathTest, RoundTakesHalvesToEven) {
  Graph graph;
  Scope s(graph);
  Session session(graph);
  const std::vector<double> in = {0.9, 2.5, 2.3, 1.5, -4.5, 0.5, -0.5, -1.5, 3.5, -2.7};
  const std::vector<double> want = {1, 2, 2, 2, -4, 0, -0.0, -2, 4, -3};
  Tensor r64 = session.Eval(Round(s, Const(s, Tensor::FromVector<double>(in))));
  std::vector<float> in32(in.begin(), in.end());
  Tensor r32 = session.Eval(Round(s, Const(s, Tensor::FromVector<float>(in32))));
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(r64.flat<double>()[i], want[i]) << in[i];
    EXPECT_EQ(r32.flat<float>()[i], static_cast<float>(want[i])) << in[i];
  }
  EXPECT_TRUE(std::signbit(r64.flat<double>()[6]));  // -0.5 -> -0, as std::nearbyint and numpy
}

TEST(MathGradTest, NonDifferentiableOpsSaySo) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {3});
  for (Output y : {Sign(s, x), Floor(s, x), Round(s, x)}) {
    std::string message = ErrorOf([&] { Gradients(s, {y}, {x}); });
    EXPECT_NE(message.find(y.node->op()), std::string::npos) << message;
    EXPECT_NE(message.find("piecewise constant"), std::string::npos) << message;
  }
  auto cmp = Cast(s, Less(s, x, 0.0), kFloat64);
  EXPECT_FALSE(Gradients(s, {cmp}, {x})[0].valid());  // the cast stops it, like TF
  OpRegistry registry;
  RegisterMathOps(registry);
  for (const char* op :
       {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
        "LogicalOr", "LogicalNot", "Sign", "Floor", "Round", "ArgMax", "ArgMin"}) {
    const OpDef& def = registry.Get(op);
    EXPECT_FALSE(static_cast<bool>(def.grad)) << op;
    EXPECT_FALSE(def.no_gradient.empty()) << op;
  }
  EXPECT_TRUE(static_cast<bool>(registry.Get("MatMul").grad));
  EXPECT_TRUE(static_cast<bool>(registry.Get("Sum").grad));
}

}  // namespace
}  // namespace loom
