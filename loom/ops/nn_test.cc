// Activations, BiasAdd, softmax family, losses and clipping: forward values against
// float64 references, gradients through the numeric checker, and error messages.
#include "loom/ops/nn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/autodiff/gradients.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/nn_test_util.h"
#include "loom/ops/reduce.h"

namespace loom {
namespace {

using nn_test::AwayFromZero;
using nn_test::EvalWith;
using nn_test::ExpectNear;
using nn_test::InvalidArgumentMessage;
using nn_test::ToFloat;
using nn_test::Values;

using UnaryBuilder = Output (*)(const Scope&, Input);

struct ActivationCase {
  const char* name;
  std::function<Output(const Scope&, Output)> build;
  std::function<double(double)> reference;
};

std::vector<ActivationCase> Activations() {
  return {
      {"Relu", [](const Scope& s, Output x) { return Relu(s, x); },
       [](double x) { return x > 0 ? x : 0; }},
      {"Relu6", [](const Scope& s, Output x) { return Relu6(s, x); },
       [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"Elu", [](const Scope& s, Output x) { return Elu(s, x); },
       [](double x) { return x > 0 ? x : std::exp(x) - 1; }},
      {"LeakyRelu", [](const Scope& s, Output x) { return LeakyRelu(s, x, 0.1); },
       [](double x) { return x > 0 ? x : 0.1 * x; }},
      {"Sigmoid", [](const Scope& s, Output x) { return Sigmoid(s, x); },
       [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", [](const Scope& s, Output x) { return Tanh(s, x); },
       [](double x) { return std::tanh(x); }},
      {"Softplus", [](const Scope& s, Output x) { return Softplus(s, x); },
       [](double x) { return std::log(1 + std::exp(x)); }},
  };
}

TEST(NnActivationsTest, ForwardMatchesReferenceInBothDtypes) {
  // Values in (-8, 8), away from the kinks at 0 and 6.
  Tensor x = AwayFromZero(RandomDoubles({4, 5}, 3, -8, 8), 0.05);
  for (double& v : x.flat<double>())
    if (std::abs(v - 6) < 0.05) v = 6.5;
  for (const auto& c : Activations()) {
    std::vector<double> expected;
    for (double v : x.flat<double>()) expected.push_back(c.reference(v));
    auto fn = [&](const Scope& s, const std::vector<Output>& in) { return c.build(s, in[0]); };
    ExpectNear(EvalWith({x}, fn), expected, 1e-12, c.name);
    Tensor y32 = EvalWith({ToFloat(x)}, fn);
    EXPECT_EQ(y32.dtype(), kFloat32);
    ExpectNear(y32, expected, 1e-5, c.name);
  }
}

TEST(NnActivationsTest, LargeInputsDoNotOverflow) {
  Tensor x = Tensor::FromVector<float>({-1000, -100, 100, 1000});
  auto softplus = EvalWith(
      {x}, [](const Scope& s, const std::vector<Output>& in) { return Softplus(s, in[0]); });
  ExpectNear(softplus, {0, std::exp(-100.0), 100, 1000}, 1e-6);
  auto sigmoid = EvalWith(
      {x}, [](const Scope& s, const std::vector<Output>& in) { return Sigmoid(s, in[0]); });
  ExpectNear(sigmoid, {0, 0, 1, 1}, 1e-6);
}

TEST(NnActivationsTest, LargeTensorsRunInParallelAndInPlace) {
  // Big enough for several ParallelFor chunks; Relu(Tanh(x)) may reuse Tanh's buffer.
  Tensor x = RandomDoubles({300, 257}, 5, -3, 3);
  Tensor y = EvalWith(
      {x}, [](const Scope& s, const std::vector<Output>& in) { return Relu(s, Tanh(s, in[0])); });
  std::vector<double> expected;
  for (double v : x.flat<double>()) expected.push_back(std::max(std::tanh(v), 0.0));
  ExpectNear(y, expected, 1e-12);
}

TEST(NnActivationsTest, GradientsPassTheChecker) {
  Tensor x = AwayFromZero(RandomDoubles({3, 4}, 11, -3, 3), 0.1);
  for (const auto& c : Activations()) {
    double err = MaxGradientError(
        [&](const Scope& s, const std::vector<Output>& in) { return c.build(s, in[0]); }, {x});
    EXPECT_LT(err, 1e-7) << c.name;
  }
  // Relu6's upper kink: values around 6 on both sides.
  Tensor near6 = Tensor::FromVector<double>({5.5, 6.5, 7, 0.5, -0.5, 3}, {2, 3});
  EXPECT_LT(
      MaxGradientError(
          [](const Scope& s, const std::vector<Output>& in) { return Relu6(s, in[0]); }, {near6}),
      1e-7);
}

// numpy's maximum propagates NaN; so do Relu and Relu6, forward and backward (a NaN
// feature must never become a finite activation, issue 9 item 3). The tensors are large
// enough for several parallel, vectorized chunks, and NaN sits at chunk-interior offsets.
TEST(NnActivationsTest, ReluAndRelu6PropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x(kFloat32, Shape{40000});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = (i % 7) - 3.0f;
  for (int64_t i : {0, 17, 20001, 39999}) x.data<float>()[i] = nan;
  x.data<float>()[5] = -inf;
  x.data<float>()[6] = inf;
  for (UnaryBuilder build : {static_cast<UnaryBuilder>(Relu), static_cast<UnaryBuilder>(Relu6)}) {
    const bool six = build == static_cast<UnaryBuilder>(Relu6);
    Tensor y = EvalWith(
        {x}, [&](const Scope& s, const std::vector<Output>& in) { return build(s, in[0]); });
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      const float v = x.data<float>()[i];
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(y.data<float>()[i])) << (six ? "Relu6" : "Relu") << " at " << i;
      } else {
        const float expected = six ? std::min(std::max(v, 0.0f), 6.0f) : std::max(v, 0.0f);
        ASSERT_EQ(y.data<float>()[i], expected) << (six ? "Relu6" : "Relu") << " at " << i;
      }
    }
  }
  // Gradients: dy flows where 0 < x (< 6), is 0 elsewhere, and is NaN where x is NaN.
  Tensor xs = Tensor::FromVector<double>({-1, std::nan(""), 2, 7});
  for (UnaryBuilder build : {static_cast<UnaryBuilder>(Relu), static_cast<UnaryBuilder>(Relu6)}) {
    Graph graph;
    Scope s(graph);
    Output in = Const(s, xs);
    Output dx = Gradients(s, {Sum(s, build(s, in))}, {in})[0];
    std::vector<double> g = Values(Session(graph).Eval(dx));
    EXPECT_EQ(g[0], 0);
    EXPECT_TRUE(std::isnan(g[1]));
    EXPECT_EQ(g[2], 1);
    EXPECT_EQ(g[3], build == static_cast<UnaryBuilder>(Relu6) ? 0 : 1);
  }
}

TEST(NnBiasAddTest, ForwardAndGradient) {
  Tensor x = RandomDoubles({2, 3, 4}, 1);
  Tensor b = RandomDoubles({4}, 2);
  std::vector<double> expected;
  for (int64_t i = 0; i < x.NumElements(); ++i)
    expected.push_back(x.flat<double>()[i] + b.flat<double>()[i % 4]);
  auto fn = [](const Scope& s, const std::vector<Output>& in) { return BiasAdd(s, in[0], in[1]); };
  ExpectNear(EvalWith({x, b}, fn), expected, 1e-15);
  ExpectNear(EvalWith({ToFloat(x), ToFloat(b)}, fn), expected, 1e-6);
  EXPECT_LT(MaxGradientError(fn, {x, b}), 1e-8);
  // Many rows: BiasAddGrad's blocked reduction.
  EXPECT_LT(MaxGradientError(fn, {RandomDoubles({40, 3}, 3), RandomDoubles({3}, 4)}), 1e-8);
}

TEST(NnBiasAddTest, MismatchNamesNodeAndShapes) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {-1, 10});
  auto b = Placeholder(s, kFloat32, {5});
  std::string msg = InvalidArgumentMessage([&] { BiasAdd(s.WithOpName("dense/bias"), x, b); });
  EXPECT_NE(msg.find("'dense/bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[?,10]"), std::string::npos) << msg;
}

// ---- Softmax family ----

// Reference softmax of a [outer, n, inner] view.
std::vector<double> SoftmaxReference(const Tensor& x, int axis, bool log) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1, n = s.dim(axis);
  for (int i = 0; i < axis; ++i) outer *= s.dim(i);
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s.dim(i);
  std::vector<double> v = Values(x), out(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(v[(o * n + j) * inner + i]);
      for (int64_t j = 0; j < n; ++j) {
        double xv = v[(o * n + j) * inner + i];
        out[(o * n + j) * inner + i] = log ? xv - std::log(sum) : std::exp(xv) / sum;
      }
    }
  }
  return out;
}

TEST(NnSoftmaxTest, ForwardAlongEveryAxis) {
  Tensor x = RandomDoubles({2, 3, 4}, 7, -3, 3);
  for (int axis : {-1, 0, 1, 2}) {
    int a = axis < 0 ? axis + 3 : axis;
    ExpectNear(
        EvalWith({x}, [&](const Scope& s,
                          const std::vector<Output>& in) { return Softmax(s, in[0], axis); }),
        SoftmaxReference(x, a, false), 1e-12, "softmax");
    ExpectNear(EvalWith({ToFloat(x)},
                        [&](const Scope& s, const std::vector<Output>& in) {
                          return LogSoftmax(s, in[0], axis);
                        }),
               SoftmaxReference(x, a, true), 1e-5, "log_softmax");
  }
}

TEST(NnSoftmaxTest, StableForHugeLogits) {
  Tensor x = Tensor::FromVector<float>({1000, 1000, -1000}, {1, 3});
  ExpectNear(EvalWith({x}, [](const Scope& s,
                              const std::vector<Output>& in) { return Softmax(s, in[0]); }),
             {0.5, 0.5, 0}, 1e-6);
  ExpectNear(EvalWith({x}, [](const Scope& s,
                              const std::vector<Output>& in) { return LogSoftmax(s, in[0]); }),
             {-std::log(2.0), -std::log(2.0), -2000 - std::log(2.0)}, 1e-6);
}

TEST(NnSoftmaxTest, GradientsPassTheChecker) {
  Tensor x = RandomDoubles({2, 3, 4}, 9, -2, 2);
  for (int axis : {-1, 1, 0}) {
    EXPECT_LT(
        MaxGradientError(
            [&](const Scope& s, const std::vector<Output>& in) { return Softmax(s, in[0], axis); },
            {x}),
        1e-8);
    EXPECT_LT(
        MaxGradientError([&](const Scope& s,
                             const std::vector<Output>& in) { return LogSoftmax(s, in[0], axis); },
                         {x}),
        1e-8);
  }
}

TEST(NnSoftmaxTest, BadAxisFailsAtConstruction) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat32, {2, 3});
  std::string msg = InvalidArgumentMessage([&] { Softmax(s.WithOpName("probs"), x, 2); });
  EXPECT_NE(msg.find("'probs'"), std::string::npos) << msg;
}

// ---- Cross entropy ----

TEST(NnXentTest, DenseMatchesReferenceAndIsStable) {
  Tensor logits = RandomDoubles({3, 5}, 21, -4, 4);
  logits.data<double>()[0] = 500;  // would overflow a naive exp
  Tensor labels = RandomDoubles({3, 5}, 22, 0, 1);
  std::vector<double> log_p = SoftmaxReference(logits, 1, true), expected(3, 0);
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 5; ++j) expected[r] -= labels.flat<double>()[r * 5 + j] * log_p[r * 5 + j];
  }
  auto fn = [](const Scope& s, const std::vector<Output>& in) {
    return SoftmaxCrossEntropyWithLogits(s, in[0], in[1]);
  };
  ExpectNear(EvalWith({labels, logits}, fn), expected, 1e-12);
  ExpectNear(EvalWith({ToFloat(labels), ToFloat(logits)}, fn), expected, 1e-5);
  Tensor moderate = RandomDoubles({3, 5}, 23, -2, 2);
  EXPECT_LT(MaxGradientError(fn, {labels, moderate}), 1e-8);
}

TEST(NnXentTest, SparseMatchesDenseOneHot) {
  Tensor logits = RandomDoubles({4, 3}, 31, -3, 3);
  std::vector<int> ids = {2, 0, 1, 2};
  std::vector<double> log_p = SoftmaxReference(logits, 1, true), expected;
  for (int r = 0; r < 4; ++r) expected.push_back(-log_p[r * 3 + ids[r]]);
  for (bool wide : {false, true}) {
    Tensor labels =
        wide ? Tensor::FromVector<int64_t>({2, 0, 1, 2}) : Tensor::FromVector<int32_t>(ids);
    auto fn = [&](const Scope& s, const std::vector<Output>& in) {
      return SparseSoftmaxCrossEntropyWithLogits(s, Const(s, labels), in[0]);
    };
    ExpectNear(EvalWith({logits}, fn), expected, 1e-12);
    ExpectNear(EvalWith({ToFloat(logits)}, fn), expected, 1e-5);
    EXPECT_LT(MaxGradientError(fn, {logits}), 1e-8);
  }
}

TEST(NnXentTest, SparseLabelOutOfRangeNamesLabelAndClassCount) {
  Graph graph;
  Scope s(graph);
  auto labels = Placeholder(s, kInt32, {-1});
  auto logits = Placeholder(s, kFloat32, {-1, 10});
  auto loss = SparseSoftmaxCrossEntropyWithLogits(s.WithOpName("xent"), labels, logits);
  Session session(graph, {.intra_op_threads = 1});
  FeedList feeds = {{labels, Tensor::FromVector<int32_t>({3, 12})},
                    {logits, Tensor::Zeros(kFloat32, {2, 10})}};
  std::string msg = InvalidArgumentMessage([&] { session.Run(feeds, {loss}); });
  EXPECT_NE(msg.find("label 12"), std::string::npos) << msg;
  EXPECT_NE(msg.find("10 classes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'xent'"), std::string::npos) << msg;
  feeds[0].second = Tensor::FromVector<int32_t>({-1, 0});
  msg = InvalidArgumentMessage([&] { session.Run(feeds, {loss}); });
  EXPECT_NE(msg.find("label -1"), std::string::npos) << msg;
}

TEST(NnXentTest, LabelShapeMismatchFailsAtConstruction) {
  Graph graph;
  Scope s(graph);
  auto logits = Placeholder(s, kFloat32, {-1, 10});
  std::string msg = InvalidArgumentMessage([&] {
    SparseSoftmaxCrossEntropyWithLogits(s.WithOpName("loss"), Placeholder(s, kInt32, {-1, 10}),
                                        logits);
  });
  EXPECT_NE(msg.find("'loss'"), std::string::npos) << msg;
  msg = InvalidArgumentMessage([&] {
    SoftmaxCrossEntropyWithLogits(s.WithOpName("dense_loss"), Placeholder(s, kFloat32, {-1, 9}),
                                  logits);
  });
  EXPECT_NE(msg.find("[?,9]"), std::string::npos) << msg;
}

TEST(NnXentTest, SigmoidCrossEntropyStableFormulaAndGradient) {
  Tensor logits = Tensor::FromVector<double>({-200, -1.5, 0.3, 2, 200, 0.7}, {2, 3});
  Tensor labels = Tensor::FromVector<double>({0, 1, 0.5, 0, 1, 0.25}, {2, 3});
  std::vector<double> expected;
  for (int i = 0; i < 6; ++i) {
    double x = logits.flat<double>()[i], z = labels.flat<double>()[i];
    expected.push_back(std::max(x, 0.0) - x * z + std::log1p(std::exp(-std::abs(x))));
  }
  auto fn = [](const Scope& s, const std::vector<Output>& in) {
    return SigmoidCrossEntropyWithLogits(s, in[0], in[1]);
  };
  ExpectNear(EvalWith({labels, logits}, fn), expected, 1e-12);
  ExpectNear(EvalWith({ToFloat(labels), ToFloat(logits)}, fn), expected, 1e-5);
  EXPECT_LT(
      MaxGradientError(fn, {RandomDoubles({2, 3}, 41, 0, 1), RandomDoubles({2, 3}, 42, -3, 3)}),
      1e-8);
}

// ---- Norms ----

TEST(NnNormsTest, L2LossForwardAndGradient) {
  Tensor x = RandomDoubles({3, 4}, 51);
  double expected = 0;
  for (double v : x.flat<double>()) expected += v * v / 2;
  auto fn = [](const Scope& s, const std::vector<Output>& in) { return L2Loss(s, in[0]); };
  ExpectNear(EvalWith({x}, fn), {expected}, 1e-14);
  ExpectNear(EvalWith({ToFloat(x)}, fn), {expected}, 1e-6);
  EXPECT_LT(MaxGradientError(fn, {x}), 1e-8);
  // Enough elements for a parallel reduction.
  Tensor big = RandomDoubles({100000}, 52);
  double big_expected = 0;
  for (double v : big.flat<double>()) big_expected += v * v / 2;
  ExpectNear(EvalWith({big}, fn), {big_expected}, 1e-12);
}

TEST(NnNormsTest, ClipByGlobalNormScalesOnlyAboveTheClip) {
  Tensor a = Tensor::FromVector<float>({3, 0}, {2});
  Tensor b = Tensor::FromVector<float>({0, 4}, {2});  // global norm 5
  for (float clip : {2.5f, 10.0f}) {
    Graph graph;
    Scope s(graph);
    ClippedList r = ClipByGlobalNorm(s, {Const(s, a), Const(s, b)}, clip);
    Session session(graph, {.intra_op_threads = 1});
    auto out = session.Run({}, {r.clipped[0], r.clipped[1], r.global_norm});
    double scale = clip < 5 ? 0.5 : 1.0;
    ExpectNear(out[0], {3 * scale, 0}, 1e-6);
    ExpectNear(out[1], {0, 4 * scale}, 1e-6);
    ExpectNear(out[2], {5}, 1e-6);
  }
}

TEST(NnNormsTest, ClipByGlobalNormSkipsAbsentEntries) {
  Graph graph;
  Scope s(graph);
  ClippedList r =
      ClipByGlobalNorm(s, {Output(), Const(s, Tensor::FromVector<float>({3, 4}))}, 1.0f);
  ASSERT_EQ(r.clipped.size(), 2u);
  EXPECT_FALSE(r.clipped[0].valid());
  Session session(graph, {.intra_op_threads = 1});
  ExpectNear(session.Eval(r.clipped[1]), {0.6, 0.8}, 1e-6);
}

TEST(NnNormsTest, ClipByGlobalNormOfInfiniteNormIsNaN) {
  Tensor a = Tensor::FromVector<float>({INFINITY, 1});
  Tensor y = EvalWith({a}, [](const Scope& s, const std::vector<Output>& in) {
    return ClipByGlobalNorm(s, {in[0]}, 1.0f).clipped[0];
  });
  EXPECT_TRUE(std::isnan(y.flat<float>()[1]));
}

TEST(NnNormsTest, ClipByGlobalNormGradients) {
  // Global norm of two [3,2] tensors in [-1, 1) is about 1.4: clip at 0.5 (scaling) and
  // at 10 (identity), then also differentiate w.r.t. clip_norm and through global_norm.
  std::vector<Tensor> xs = {RandomDoubles({3, 2}, 61), RandomDoubles({3, 2}, 62)};
  for (double clip : {0.5, 10.0}) {
    EXPECT_LT(MaxGradientError(
                  [&](const Scope& s, const std::vector<Output>& in) {
                    ClippedList r = ClipByGlobalNorm(s, {in[0], in[1]}, clip);
                    return AddN(s, {r.clipped[0], r.clipped[1]});
                  },
                  xs),
              1e-8)
        << clip;
  }
  std::vector<Tensor> with_clip = {xs[0], xs[1], Tensor::Scalar<double>(0.5)};
  EXPECT_LT(MaxGradientError(
                [&](const Scope& s, const std::vector<Output>& in) {
                  return ClipByGlobalNorm(s, {in[0], in[1]}, in[2]).clipped[1];
                },
                with_clip),
            1e-8);
  EXPECT_LT(MaxGradientError(
                [&](const Scope& s, const std::vector<Output>& in) {
                  return GlobalNorm(s, {in[0], in[1]});
                },
                xs),
            1e-8);
}

TEST(NnRegistryTest, RegistersEveryOpAndGradientOp) {
  OpRegistry registry;
  RegisterNnOps(registry);
  for (const char* name : {"Relu",
                           "ReluGrad",
                           "Relu6",
                           "Elu",
                           "LeakyRelu",
                           "Sigmoid",
                           "SigmoidGrad",
                           "Tanh",
                           "Softplus",
                           "BiasAdd",
                           "BiasAddGrad",
                           "Softmax",
                           "LogSoftmax",
                           "Conv2D",
                           "Conv2DBackpropInput",
                           "Conv2DBackpropFilter",
                           "MaxPool",
                           "MaxPoolGrad",
                           "AvgPool",
                           "AvgPoolGrad",
                           "SoftmaxCrossEntropyWithLogits",
                           "SparseSoftmaxCrossEntropyWithLogits",
                           "SigmoidCrossEntropyWithLogits",
                           "L2Loss",
                           "GlobalNorm",
                           "ClipToGlobalNorm"}) {
    EXPECT_NE(registry.Find(name), nullptr) << name;
  }
}

}  // namespace
}  // namespace loom
