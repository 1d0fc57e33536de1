#include "loom/ops/matmul.h"

#include <gtest/gtest.h>

#include <random>

#include "loom/ops/blas.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

using Xs = std::vector<Output>;

// Reference product of row-major matrices, with optional transposes.
std::vector<double> NaiveMatMul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  auto A = [&](int64_t i, int64_t l) {
    return ta ? a.data<double>()[l * m + i] : a.data<double>()[i * k + l];
  };
  auto B = [&](int64_t l, int64_t j) {
    return tb ? b.data<double>()[j * k + l] : b.data<double>()[l * n + j];
  };
  std::vector<double> out(m * n, 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t l = 0; l < k; ++l) out[i * n + j] += A(i, l) * B(l, j);
  return out;
}

TEST(MatMulTest, AllTransposeCombinationsMatchReference) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomDoubles(ta ? Shape{5, 3} : Shape{3, 5}, 1);
      Tensor b = RandomDoubles(tb ? Shape{4, 5} : Shape{5, 4}, 2);
      Graph graph;
      Scope s(graph);
      auto y = MatMul(s, Const(s, a), Const(s, b), {.transpose_a = ta, .transpose_b = tb});
      EXPECT_EQ(y.shape(), Shape({3, 4}));
      Session session(graph);
      Tensor out = session.Eval(y);
      auto ref = NaiveMatMul(a, b, ta, tb);
      for (size_t i = 0; i < ref.size(); ++i) EXPECT_NEAR(out.data<double>()[i], ref[i], 1e-12);
    }
  }
}

TEST(MatMulTest, Float32AndEmptyInner) {
  Graph graph;
  Scope s(graph);
  auto a = Const(s, Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  auto y = MatMul(s, a, a);
  auto z = MatMul(s, Const(s, Tensor::Zeros(kFloat32, {2, 0})),
                  Const(s, Tensor::Zeros(kFloat32, {0, 3})));
  Session session(graph);
  Tensor out = session.Eval(y);
  EXPECT_EQ(std::vector<float>(out.flat<float>().begin(), out.flat<float>().end()),
            (std::vector<float>{7, 10, 15, 22}));
  Tensor zero = session.Eval(z);
  EXPECT_EQ(zero.shape(), Shape({2, 3}));
  for (float v : zero.flat<float>()) EXPECT_EQ(v, 0);
}

TEST(MatMulTest, ShapeErrorNamesNodeAndBothShapes) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {32, 784});
  auto w = Placeholder(s, kFloat32, {512, 10});
  Scope dense = s.NewSubScope("dense_1");
  std::string message = ErrorOf([&] { MatMul(dense.WithOpName("MatMul"), x, w); });
  EXPECT_NE(message.find("dense_1/MatMul"), std::string::npos) << message;
  EXPECT_NE(message.find("[32,784]"), std::string::npos) << message;
  EXPECT_NE(message.find("[512,10]"), std::string::npos) << message;
  EXPECT_NE(message.find("inner dimensions 784 and 512 differ"), std::string::npos) << message;
  auto v = Placeholder(s, kFloat32, {3});
  message = ErrorOf([&] { MatMul(s.WithOpName("vec"), v, w); });
  EXPECT_NE(message.find("vec"), std::string::npos) << message;
  auto i = Placeholder(s, kInt32, {2, 2});
  message = ErrorOf([&] { MatMul(s.WithOpName("int_mm"), i, i); });
  EXPECT_NE(message.find("int_mm"), std::string::npos) << message;
  // Unknown batch size: known dims still checked, output keeps what is known.
  auto xb = Placeholder(s, kFloat32, {-1, 784});
  auto w2 = Placeholder(s, kFloat32, {784, 10});
  EXPECT_EQ(MatMul(s, xb, w2).shape(), Shape({-1, 10}));
}

TEST(MatMulTest, BatchMatMulWithBroadcastBatchDims) {
  Tensor a = RandomDoubles({2, 1, 3, 4}, 1), b = RandomDoubles({3, 4, 5}, 2);
  Graph graph;
  Scope s(graph);
  auto y = BatchMatMul(s, Const(s, a), Const(s, b));
  EXPECT_EQ(y.shape(), Shape({2, 3, 3, 5}));
  Session session(graph);
  Tensor out = session.Eval(y);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      auto ref = NaiveMatMul(a.SubTensor(i).SubTensor(0), b.SubTensor(j), false, false);
      const double* got = out.data<double>() + (i * 3 + j) * 15;
      for (int e = 0; e < 15; ++e) EXPECT_NEAR(got[e], ref[e], 1e-12);
    }
  }
  std::string message = ErrorOf([&] {
    BatchMatMul(s.WithOpName("bmm"), Placeholder(s, kFloat32, {2, 3, 4}),
                Placeholder(s, kFloat32, {3, 5, 6}));
  });
  EXPECT_NE(message.find("bmm"), std::string::npos) << message;
  EXPECT_NE(message.find("inner dimensions 4 and 5 differ"), std::string::npos) << message;
}

TEST(MatMulGradTest, AllTransposeCombinations) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomDoubles(ta ? Shape{4, 3} : Shape{3, 4}, 1);
      Tensor b = RandomDoubles(tb ? Shape{5, 4} : Shape{4, 5}, 2);
      MatMulOptions o{.transpose_a = ta, .transpose_b = tb};
      EXPECT_LT(MaxGradientError(
                    [o](const Scope& s, const Xs& x) { return MatMul(s, x[0], x[1], o); }, {a, b}),
                1e-6)
          << ta << tb;
      Tensor ba = RandomDoubles(ta ? Shape{2, 4, 3} : Shape{2, 3, 4}, 3);
      Tensor bb = RandomDoubles(tb ? Shape{2, 5, 4} : Shape{2, 4, 5}, 4);
      EXPECT_LT(
          MaxGradientError(
              [o](const Scope& s, const Xs& x) { return BatchMatMul(s, x[0], x[1], o); }, {ba, bb}),
          1e-6)
          << "batch " << ta << tb;
    }
  }
}

TEST(MatMulGradTest, BatchMatMulBroadcastBatchDims) {
  EXPECT_LT(MaxGradientError([](const Scope& s, const Xs& x) { return BatchMatMul(s, x[0], x[1]); },
                             {RandomDoubles({2, 1, 3, 4}, 1), RandomDoubles({3, 4, 2}, 2)}),
            1e-6);
  EXPECT_LT(MaxGradientError(
                [](const Scope& s, const Xs& x) {
                  return BatchMatMul(s, x[0], x[1], {.transpose_b = true});
                },
                {RandomDoubles({3, 4}, 1), RandomDoubles({2, 5, 4}, 2)}),
            1e-6);
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// The float32 Gemm has its own AVX-512 path for narrow products (n <= 16); check it (and
// the BLAS path it hands the rest to) against a float64 reference over every transpose,
// row remainders, leading dimensions wider than the matrices, and alpha / beta.
TEST(GemmTest, Float32NarrowAndWideProductsMatchFloat64Reference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t m : {1, 3, 8, 13, 37})
        for (int64_t n : {1, 7, 10, 16, 17})
          for (int64_t k : {0, 1, 5, 64}) {
            for (auto [alpha, beta] :
                 {std::pair{1.f, 0.f}, std::pair{0.5f, 1.f}, std::pair{2.f, -0.25f}}) {
              SCOPED_TRACE(::testing::Message()
                           << "ta=" << ta << " tb=" << tb << " m=" << m << " n=" << n << " k=" << k
                           << " alpha=" << alpha << " beta=" << beta);
              const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
              std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c(m * ldc);
              for (float& v : a) v = dist(rng);
              for (float& v : b) v = dist(rng);
              for (float& v : c) v = dist(rng);
              std::vector<float> before = c;
              Gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < ldc; ++j) {
                  if (j >= n) {  // padding between rows is never touched
                    ASSERT_EQ(c[i * ldc + j], before[i * ldc + j]);
                    continue;
                  }
                  double want = 0;
                  for (int64_t l = 0; l < k; ++l) {
                    const double av = ta ? a[l * lda + i] : a[i * lda + l];
                    const double bv = tb ? b[j * ldb + l] : b[l * ldb + j];
                    want += av * bv;
                  }
                  want = alpha * want + beta * before[i * ldc + j];
                  ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + k)) << "at " << i << "," << j;
                }
            }
          }
}

}  // namespace
}  // namespace loom
