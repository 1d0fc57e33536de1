// Layers and initializers: names, shapes and variables as tf.layers makes them, forward
// values against hand references, batch normalization in training and inference.
#include "loom/estimator/layers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/estimator/all_ops.h"
#include "loom/estimator/initializers.h"
#include "loom/graph/collections.h"
#include "loom/graph/graph_def.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"
#include "loom/testing/values.h"

namespace loom {
namespace {

namespace L = loom::layers;
namespace I = loom::initializers;

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v[i] = t.dtype() == kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
  }
  return v;
}

void ExpectAllNear(const Tensor& t, const std::vector<double>& expected, double tol) {
  std::vector<double> got = AsDoubles(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "entry " << i;
}

using testing::Floats;

TEST(DenseTest, NamesShapesAndVariablesFollowTfLayers) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 3});
  Output h = L::Dense(s, x, {.units = 4, .activation = loom::Relu});
  Output y = L::Dense(s, h, {.units = 2, .use_bias = false});
  EXPECT_EQ(h.shape(), Shape({-1, 4}));
  EXPECT_EQ(y.shape(), Shape({-1, 2}));
  ASSERT_NE(graph.FindNode("dense/kernel"), nullptr);
  ASSERT_NE(graph.FindNode("dense/bias"), nullptr);
  ASSERT_NE(graph.FindNode("dense_1/kernel"), nullptr);
  EXPECT_EQ(graph.FindNode("dense_1/bias"), nullptr);
  EXPECT_EQ(graph.FindNode("dense/kernel")->output_shape(0), Shape({3, 4}));
  EXPECT_EQ(graph.TrainableVariables().size(), 3u);
  L::Dense(s, x, {.units = 1, .trainable = false});
  EXPECT_EQ(graph.TrainableVariables().size(), 3u);
  EXPECT_EQ(graph.Variables().size(), 5u);
}

// The layers' precision option (loom/graph/precision.h) is recorded on their product
// node; float32 (the default) leaves the node as it was.
TEST(DenseTest, PrecisionOptionReachesTheProduct) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 4, 4, 2});
  L::Conv2D(s, x, {.filters = 3, .kernel_size = 3, .precision = Precision::kBf16Emulated});
  L::Conv2D(s, x, {.filters = 3, .kernel_size = 3, .precision = Precision::kBf16});
  Output flat = L::Flatten(s, x);
  L::Dense(s, flat, {.units = 4, .precision = Precision::kBf16Emulated});
  L::Dense(s, flat, {.units = 2, .name = "logits"});
  auto precision = [&](const std::string& node) {
    const std::string* p = graph.FindNode(node)->attrs().Find<std::string>("precision");
    return p == nullptr ? std::string("(absent)") : *p;
  };
  EXPECT_EQ(precision("conv2d/Conv2D"), "bf16-emulated");
  EXPECT_EQ(precision("conv2d_1/Conv2D"), "bf16");
  EXPECT_EQ(precision("dense/MatMul"), "bf16-emulated");
  EXPECT_EQ(precision("logits/MatMul"), "(absent)");  // float32
}

TEST(DenseTest, ForwardMatchesHandComputation) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 3});
  Output y = L::Dense(s, x, {.units = 2, .activation = loom::Relu});
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  session.WriteVariable("dense/kernel", Floats({1, -1, 2, 0, -1, 3}, {3, 2}));
  session.WriteVariable("dense/bias", Floats({0.5, -20}, {2}));
  Tensor out = session.Eval(y, {{x, Floats({1, 2, 3, -1, 0, 1}, {2, 3})}});
  // row 1: [1+4-3+0.5, -1+0+9-20] = [2.5, -12] -> relu [2.5, 0]; row 2: [-1-1+.5, 1+3-20].
  ExpectAllNear(out, {2.5, 0, 0, 0}, 1e-6);
  session.WriteVariable("dense/bias", Floats({0, 0}, {2}));
  ExpectAllNear(session.Eval(y, {{x, Floats({1, 2, 3, -1, 0, 1}, {2, 3})}}), {2, 8, 0, 4}, 1e-6);
}

TEST(DenseTest, RankThreeInputsMultiplyAlongTheLastDim) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2, 3});
  Output y = L::Dense(
      s, x, {.units = 2, .kernel_initializer = I::Ones(), .bias_initializer = I::Constant(1.0)});
  EXPECT_EQ(y.shape(), Shape({-1, 2, 2}));
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  Tensor out = session.Eval(y, {{x, Floats({1, 2, 3, 4, 5, 6}, {1, 2, 3})}});
  EXPECT_EQ(out.shape(), Shape({1, 2, 2}));
  ExpectAllNear(out, {7, 7, 16, 16}, 1e-6);
}

TEST(DenseTest, ActivationsWithParametersAndFunctionPointers) {
  Graph graph;
  Scope s(graph);
  Output x = Const(s, Floats({-1, 2}, {1, 2}));
  auto dense = [&](L::Activation a) {
    return L::Dense(s, x,
                    {.units = 2,
                     .activation = a,
                     .kernel_initializer = I::Constant(Floats({1, 0, 0, 1}, {2, 2}))});
  };
  Output tanh = dense(loom::Tanh);
  Output sigmoid = dense(loom::Sigmoid);
  Output leaky = dense(L::LeakyReluActivation(0.1));
  Output softmax = dense(L::SoftmaxActivation());
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  ExpectAllNear(session.Eval(tanh), {std::tanh(-1.0), std::tanh(2.0)}, 1e-6);
  ExpectAllNear(session.Eval(sigmoid), {1 / (1 + std::exp(1.0)), 1 / (1 + std::exp(-2.0))}, 1e-6);
  ExpectAllNear(session.Eval(leaky), {-0.1, 2}, 1e-6);
  const double e = std::exp(3.0);
  ExpectAllNear(session.Eval(softmax), {1 / (1 + e), e / (1 + e)}, 1e-6);
}

TEST(DenseTest, RegularizerPenaltyIsRecorded) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2});
  L::Dense(s, x,
           {.units = 2,
            .kernel_initializer = I::Constant(2.0),
            .kernel_regularizer = L::L2Regularizer(0.5)});
  std::vector<Output> penalties = L::RegularizationLosses(graph);
  ASSERT_EQ(penalties.size(), 1u);
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  // 0.5 * sum(4 * 2^2) / 2.
  EXPECT_NEAR(session.Eval(penalties[0]).scalar<float>(), 4.0, 1e-6);
}

// A regularizer may return no penalty (TF's l2_regularizer(0.0) returns None): the
// layer then records nothing, as TF's does.
TEST(DenseTest, RegularizerWithoutPenaltyRecordsNothing) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2});
  int calls = 0;
  L::Dense(s, x,
           {.units = 2,
            .kernel_regularizer =
                [&](const Scope&, Output) {
                  ++calls;
                  return Output();
                },
            .bias_regularizer = L::L1Regularizer(0.5)});
  EXPECT_EQ(calls, 1);
  std::vector<Output> penalties = L::RegularizationLosses(graph);
  ASSERT_EQ(penalties.size(), 1u);
  EXPECT_EQ(penalties[0].name(), "dense/bias_regularizer/penalty:0");
}

// Layers register penalties and updates in the graph's collections, where a model's own
// code may add its own, and exported graphs keep them.
TEST(LayersTest, CollectionsHoldPenaltiesAndUpdatesAndSurviveExport) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  Output h = L::Dense(s, x,
                      {.units = 2,
                       .kernel_initializer = I::Constant(2.0),
                       .kernel_regularizer = L::L2Regularizer(0.5)});
  L::BatchNormalization(s, h, {.momentum = 0.9, .training = true});
  Output own_penalty = Const(s.WithOpName("own_penalty"), Tensor::Scalar<float>(1.5f));
  graph.collections().Add(GraphKeys::kRegularizationLosses, own_penalty);
  Operation own_update = NoOp(s.WithOpName("own_update"));
  graph.collections().Add(GraphKeys::kUpdateOps, own_update);
  ASSERT_EQ(L::RegularizationLosses(graph).size(), 2u);
  EXPECT_EQ(L::RegularizationLosses(graph)[0].name(), "dense/kernel_regularizer/penalty:0");
  EXPECT_EQ(L::RegularizationLosses(graph)[1], own_penalty);
  ASSERT_EQ(L::UpdateOps(graph).size(), 2u);
  EXPECT_EQ(L::UpdateOps(graph)[0].name(), "batch_normalization/update_ops");

  auto env = NewMemEnv();
  ExportGraph(graph, env.get(), "/graph.pb");
  Graph loaded;
  ImportGraph(env.get(), "/graph.pb", AllOps(), loaded);
  std::vector<Output> penalties = L::RegularizationLosses(loaded);
  ASSERT_EQ(penalties.size(), 2u);
  EXPECT_EQ(penalties[1].name(), "own_penalty:0");
  std::vector<Operation> updates = L::UpdateOps(loaded);
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[1].name(), "own_update");
  Session session(loaded, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(Scope(loaded)));
  // 0.5 * sum(4 * 2^2) / 2.
  EXPECT_NEAR(session.Eval(penalties[0]).scalar<float>(), 4.0, 1e-6);
  session.RunTarget(updates[0], {{loaded.GetOutput("x"), Floats({1, 2, 3, 4}, {2, 2})}});
  // h = x * 2 summed over both inputs: rows 6, 14 in both columns (mean 10).
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_mean"), {1.0, 1.0}, 1e-5);
}

TEST(DenseTest, BadArgumentsNameTheLayer) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, -1});
  try {
    L::Dense(s, x, {.units = 3});
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dense"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("last dim"), std::string::npos) << e.what();
  }
  EXPECT_THROW(L::Dense(s, Placeholder(s, kInt32, {-1, 2}), {.units = 3}), Error);
  EXPECT_THROW(L::Conv2D(s, Placeholder(s, kFloat32, {1, 4, 4, 1}),
                         {.filters = 2, .kernel_size = 3, .padding = "full"}),
               Error);
}

// Naive NHWC / HWIO cross-correlation with "same" or "valid" padding, stride 1.
std::vector<double> NaiveConv(const std::vector<double>& x, int h, int w, int cin,
                              const std::vector<double>& k, int kh, int kw, int cout, bool same) {
  const int ph = same ? (kh - 1) / 2 : 0, pw = same ? (kw - 1) / 2 : 0;
  const int oh = same ? h : h - kh + 1, ow = same ? w : w - kw + 1;
  std::vector<double> out(oh * ow * cout, 0.0);
  for (int i = 0; i < oh; ++i)
    for (int j = 0; j < ow; ++j)
      for (int o = 0; o < cout; ++o) {
        double acc = 0;
        for (int a = 0; a < kh; ++a)
          for (int b = 0; b < kw; ++b)
            for (int c = 0; c < cin; ++c) {
              const int r = i + a - ph, q = j + b - pw;
              if (r < 0 || r >= h || q < 0 || q >= w) continue;
              acc += x[(r * w + q) * cin + c] * k[((a * kw + b) * cin + c) * cout + o];
            }
        out[(i * ow + j) * cout + o] = acc;
      }
  return out;
}

TEST(Conv2DTest, ShapesNamesAndValues) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 5, 4, 2});
  Output same = L::Conv2D(
      s, x, {.filters = 3, .kernel_size = {3, 3}, .padding = "same", .activation = loom::Relu});
  Output valid = L::Conv2D(s, x, {.filters = 3, .kernel_size = {3, 2}});
  Output strided =
      L::Conv2D(s, x, {.filters = 1, .kernel_size = 2, .strides = 2, .padding = "SAME"});
  EXPECT_EQ(same.shape(), Shape({-1, 5, 4, 3}));
  EXPECT_EQ(valid.shape(), Shape({-1, 3, 3, 3}));
  EXPECT_EQ(strided.shape(), Shape({-1, 3, 2, 1}));
  ASSERT_NE(graph.FindNode("conv2d/kernel"), nullptr);
  EXPECT_EQ(graph.FindNode("conv2d/kernel")->output_shape(0), Shape({3, 3, 2, 3}));
  EXPECT_EQ(graph.FindNode("conv2d_1/kernel")->output_shape(0), Shape({3, 2, 2, 3}));
  EXPECT_EQ(graph.FindNode("conv2d/bias")->output_shape(0), Shape({3}));

  Tensor xv = RandomDoubles({1, 5, 4, 2}, 11);
  Tensor kv = RandomDoubles({3, 3, 2, 3}, 12);
  auto to_float = [](const Tensor& t) {
    Tensor f(kFloat32, t.shape());
    for (int64_t i = 0; i < t.NumElements(); ++i) f.data<float>()[i] = float(t.data<double>()[i]);
    return f;
  };
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  session.WriteVariable("conv2d/kernel", to_float(kv));
  session.WriteVariable("conv2d/bias", Floats({0.1f, -0.2f, 0.3f}, {3}));
  std::vector<double> expected = NaiveConv(AsDoubles(xv), 5, 4, 2, AsDoubles(kv), 3, 3, 3, true);
  for (size_t i = 0; i < expected.size(); ++i) {
    expected[i] = std::max(0.0, expected[i] + std::vector<double>{0.1, -0.2, 0.3}[i % 3]);
  }
  ExpectAllNear(session.Eval(same, {{x, to_float(xv)}}), expected, 1e-5);
}

TEST(PoolingTest, MaxAndAveragePoolingWithTheSketchsOptions) {
  Graph graph;
  Scope s(graph);
  Output x =
      Const(s, Floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 4, 4, 1}));
  Output max = L::MaxPooling2D(s, x, {.pool_size = {2, 2}, .strides = 2});
  Output avg = L::AveragePooling2D(s, x, {.pool_size = 2});
  Output avg_same = L::AveragePooling2D(s, x, {.pool_size = 3, .strides = 2, .padding = "same"});
  EXPECT_EQ(max.shape(), Shape({1, 2, 2, 1}));
  EXPECT_EQ(max.node->name(), "max_pooling2d/MaxPool");
  EXPECT_EQ(avg.node->name(), "average_pooling2d/AvgPool");
  Session session(graph, {.intra_op_threads = 1});
  ExpectAllNear(session.Eval(max), {6, 8, 14, 16}, 0);
  ExpectAllNear(session.Eval(avg), {3.5, 5.5, 11.5, 13.5}, 1e-6);
  // "same", 3x3 windows, stride 2 over 4x4: one padding row/column at the end, not counted.
  ExpectAllNear(session.Eval(avg_same), {6, 7.5, 12, 13.5}, 1e-6);
}

TEST(FlattenTest, KeepsTheBatchDim) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2, 3, 4});
  Output f = L::Flatten(s, x);
  EXPECT_EQ(f.shape(), Shape({-1, 24}));
  EXPECT_THROW(L::Flatten(s, Placeholder(s, kFloat32, {-1, -1, 3})), Error);
}

TEST(DropoutTest, IdentityInInferenceAndScaledMaskInTraining) {
  Graph graph({.seed = 5});
  Scope s(graph);
  Output x = Const(s, Tensor::FromVector(std::vector<float>(1000, 2.0f), {10, 100}));
  EXPECT_EQ(L::Dropout(s, x, {.rate = 0.4, .training = false}), x);
  Output d = L::Dropout(s, x, {.rate = 0.4, .training = true});
  EXPECT_EQ(d.shape(), Shape({10, 100}));
  Session session(graph, {.intra_op_threads = 1});
  int zeros = 0;
  for (double v : AsDoubles(session.Eval(d))) {
    if (v == 0)
      ++zeros;
    else
      EXPECT_NEAR(v, 2.0 / 0.6, 1e-5);
  }
  EXPECT_GT(zeros, 330);
  EXPECT_LT(zeros, 470);
  EXPECT_THROW(L::Dropout(s, x, {.rate = 1.0, .training = true}), Error);
}

TEST(BatchNormalizationTest, TrainingUsesBatchStatisticsAndUpdatesMovingAverages) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2});
  Output y = L::BatchNormalization(s, x, {.momentum = 0.9, .training = true});
  for (const char* name :
       {"batch_normalization/gamma", "batch_normalization/beta", "batch_normalization/moving_mean",
        "batch_normalization/moving_variance"}) {
    EXPECT_NE(graph.FindNode(name), nullptr) << name;
  }
  EXPECT_EQ(graph.TrainableVariables().size(), 2u);
  std::vector<Operation> updates = L::UpdateOps(graph);
  ASSERT_EQ(updates.size(), 1u);
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  // Column 0: 1, 3, 5, 7 (mean 4, var 5); column 1: 2, 2, 2, 6 (mean 3, var 3).
  Tensor xv = Floats({1, 2, 3, 2, 5, 2, 7, 6}, {4, 2});
  std::vector<Tensor> out = session.Run({{x, xv}}, {y}, {L::UpdateOp(s)});
  const double eps = 1e-3;
  std::vector<double> expected;
  for (int i = 0; i < 4; ++i) {
    expected.push_back((std::vector<double>{1, 3, 5, 7}[i] - 4) / std::sqrt(5 + eps));
    expected.push_back((std::vector<double>{2, 2, 2, 6}[i] - 3) / std::sqrt(3 + eps));
  }
  ExpectAllNear(out[0], expected, 1e-5);
  // moving = moving - (moving - batch) * 0.1.
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_mean"), {0.4, 0.3}, 1e-6);
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_variance"), {1.4, 1.2}, 1e-6);
  session.RunTarget(updates[0], {{x, xv}});
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_mean"), {0.76, 0.57}, 1e-6);
  // Evaluating the output alone does not move the statistics.
  session.Eval(y, {{x, xv}});
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_mean"), {0.76, 0.57}, 1e-6);
}

TEST(BatchNormalizationTest, InferenceUsesMovingStatisticsAndMakesNoUpdates) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 1, 1, 2});
  Output y = L::BatchNormalization(s, x, {.training = false});
  EXPECT_TRUE(L::UpdateOps(graph).empty());
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  session.WriteVariable("batch_normalization/moving_mean", Floats({1, -1}, {2}));
  session.WriteVariable("batch_normalization/moving_variance", Floats({4, 0.25}, {2}));
  session.WriteVariable("batch_normalization/gamma", Floats({2, 1}, {2}));
  session.WriteVariable("batch_normalization/beta", Floats({0, 10}, {2}));
  Tensor out = session.Eval(y, {{x, Floats({3, 0, 5, 1}, {2, 1, 1, 2})}});
  const double eps = 1e-3;
  ExpectAllNear(out,
                {2 * 2 / std::sqrt(4 + eps), 10 + 1 / std::sqrt(0.25 + eps),
                 2 * 4 / std::sqrt(4 + eps), 10 + 2 / std::sqrt(0.25 + eps)},
                1e-5);
}

TEST(BatchNormalizationTest, ChannelsFirstAxisAndGradient) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2, 3});
  Output y = L::BatchNormalization(s, x, {.axis = 1, .training = true});
  EXPECT_EQ(y.shape(), Shape({-1, 2, 3}));
  EXPECT_EQ(graph.FindNode("batch_normalization/gamma")->output_shape(0), Shape({2}));
  // Without gamma/beta the training output depends only on x: check its gradient.
  double err = MaxGradientError(
      [](const Scope& sc, const std::vector<Output>& xs) {
        return L::BatchNormalization(sc, xs[0],
                                     {.center = false, .scale = false, .training = true});
      },
      {RandomDoubles({4, 3}, 21)});
  EXPECT_LT(err, 1e-5);
}

// A bool tensor `training` (TF1's is_training placeholder): batch statistics and moving
// updates when fed true, moving statistics and no change when false.
TEST(BatchNormalizationTest, TrainingTensorPicksAtRunTimeAndUpdatesOnlyWhenTrue) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2});
  Output is_training = Placeholder(s.WithOpName("is_training"), kBool, {});
  Output y = L::BatchNormalization(s, x, {.momentum = 0.9, .training = is_training});
  ASSERT_EQ(L::UpdateOps(graph).size(), 1u);
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  // Column 0: 1, 3, 5, 7 (mean 4, var 5); column 1: 2, 2, 2, 6 (mean 3, var 3).
  Tensor xv = Floats({1, 2, 3, 2, 5, 2, 7, 6}, {4, 2});
  const double eps = 1e-3;
  const std::vector<double> c0{1, 3, 5, 7}, c1{2, 2, 2, 6};
  auto run = [&](bool training) {
    return session.Run({{x, xv}, {is_training, Tensor::Scalar<bool>(training)}}, {y},
                       {L::UpdateOp(s)})[0];
  };
  std::vector<double> expected;
  for (int i = 0; i < 4; ++i) {
    expected.push_back((c0[i] - 4) / std::sqrt(5 + eps));
    expected.push_back((c1[i] - 3) / std::sqrt(3 + eps));
  }
  ExpectAllNear(run(true), expected, 1e-5);
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_mean"), {0.4, 0.3}, 1e-6);
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_variance"), {1.4, 1.2}, 1e-6);
  expected.clear();
  for (int i = 0; i < 4; ++i) {
    expected.push_back((c0[i] - 0.4) / std::sqrt(1.4 + eps));
    expected.push_back((c1[i] - 0.3) / std::sqrt(1.2 + eps));
  }
  ExpectAllNear(run(false), expected, 1e-5);
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_mean"), {0.4, 0.3}, 1e-6);
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_variance"), {1.4, 1.2}, 1e-6);
  // A training flag that is not a bool scalar names the layer and the tensor.
  try {
    L::BatchNormalization(s, x, {.training = Placeholder(s.WithOpName("flag"), kFloat32, {})});
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training must be a bool scalar"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("flag"), std::string::npos) << e.what();
  }
}

// TF1's fused kernel moves the moving variance toward the batch variance times n / (n - 1);
// the output still uses the biased one.
TEST(BatchNormalizationTest, UnbiasedMovingVarianceAsTfsFusedKernel) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2});
  Output y = L::BatchNormalization(
      s, x, {.momentum = 0.9, .training = true, .unbiased_moving_variance = true});
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  Tensor out =
      session.Run({{x, Floats({1, 2, 3, 2, 5, 2, 7, 6}, {4, 2})}}, {y}, {L::UpdateOp(s)})[0];
  EXPECT_NEAR(AsDoubles(out)[0], (1 - 4) / std::sqrt(5 + 1e-3), 1e-5);
  // 1 - (1 - 5 * 4 / 3) * 0.1 and 1 - (1 - 3 * 4 / 3) * 0.1.
  ExpectAllNear(session.ReadVariable("batch_normalization/moving_variance"),
                {1 - (1 - 20.0 / 3) * 0.1, 1.3}, 1e-6);
}

// A variable getter (TF1's variable scope) names the variables and shares them; an empty
// name builds in the scope given.
TEST(LayersTest, VariableGetterNamesAndSharesVariables) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {-1, 2});
  std::map<std::string, Output> store;
  std::vector<std::string> asked;
  L::VariableGetter getter = [&](const L::VariableRequest& r) {
    asked.push_back(r.name);
    auto it = store.find(r.name);
    if (it != store.end()) return it->second;
    return store[r.name] = r.make("vs/d");
  };
  Output y0 = L::Dense(s.NewSubScope("tower_0"), x, {.units = 3, .variable_getter = getter});
  Output y1 = L::Dense(s.NewSubScope("tower_1"), x, {.units = 3, .variable_getter = getter});
  EXPECT_EQ(asked, (std::vector<std::string>{"kernel", "bias", "kernel", "bias"}));
  ASSERT_EQ(graph.Variables().size(), 2u);
  EXPECT_NE(graph.FindNode("vs/d/kernel"), nullptr);
  EXPECT_NE(graph.FindNode("vs/d/bias"), nullptr);
  EXPECT_EQ(y0.node->name(), "tower_0/dense/BiasAdd");
  EXPECT_EQ(y1.node->name(), "tower_1/dense/BiasAdd");
  Output own = L::Dense(s.NewSubScope("mine"), x, {.units = 1, .name = ""});
  EXPECT_EQ(own.node->name(), "mine/BiasAdd");
  EXPECT_NE(graph.FindNode("mine/kernel"), nullptr);
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  Tensor xv = Floats({1, 2, 3, 4}, {2, 2});
  std::vector<Tensor> out = session.Run({{x, xv}}, {y0, y1});
  ExpectAllNear(out[1], AsDoubles(out[0]), 0);
  // A getter that gives a variable of another shape is an error naming the layer.
  L::VariableGetter wrong = [&](const L::VariableRequest&) { return store["bias"]; };
  try {
    L::Dense(s, x, {.units = 3, .name = "bad", .variable_getter = wrong});
    FAIL() << "expected InvalidArgument";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'bad'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape [2,3]"), std::string::npos) << e.what();
  }
}

TEST(EmbeddingTest, LooksUpRowsWithASparseGradient) {
  Graph graph;
  Scope s(graph);
  Output ids = Const(s, Tensor::FromVector(std::vector<int64_t>{0, 2, 2, 1}, {2, 2}));
  Output e =
      L::Embedding(s, ids,
                   {.input_dim = 3,
                    .output_dim = 2,
                    .embeddings_initializer = I::Constant(Floats({0, 1, 10, 11, 20, 21}, {3, 2}))});
  EXPECT_EQ(e.shape(), Shape({2, 2, 2}));
  Node* table = graph.FindNode("embedding/embeddings");
  ASSERT_NE(table, nullptr);
  std::vector<GradOutput> grads = GradientsWithSparse(s, {Sum(s, e)}, {table->output(0)});
  EXPECT_TRUE(grads[0].is_sparse());
  Session session(graph, {.intra_op_threads = 1});
  session.RunTarget(GlobalVariablesInitializer(s));
  ExpectAllNear(session.Eval(e), {0, 1, 20, 21, 20, 21, 10, 11}, 0);
  Output lookup = L::EmbeddingLookup(s, table->output(0),
                                     Const(s, Tensor::FromVector(std::vector<int32_t>{1})));
  ExpectAllNear(session.Eval(lookup), {10, 11}, 0);
}

// Mean and variance of a generated initial value.
std::pair<double, double> Moments(const I::Initializer& init, const Shape& shape,
                                  int64_t graph_seed = 1, std::vector<double>* values = nullptr) {
  Graph graph({.seed = graph_seed});
  Scope s(graph);
  Output v = init(s, shape, kFloat64);
  EXPECT_EQ(v.dtype(), kFloat64);
  Session session(graph, {.intra_op_threads = 1});
  std::vector<double> x = AsDoubles(session.Eval(v));
  double mean = 0, var = 0;
  for (double e : x) mean += e;
  mean /= x.size();
  for (double e : x) var += (e - mean) * (e - mean);
  var /= x.size();
  if (values) *values = x;
  return {mean, var};
}

TEST(InitializersTest, FansFollowTf) {
  EXPECT_EQ(I::ComputeFans({}).fan_in, 1);
  EXPECT_EQ(I::ComputeFans({7}).fan_out, 7);
  EXPECT_EQ(I::ComputeFans({3, 5}).fan_in, 3);
  EXPECT_EQ(I::ComputeFans({3, 5}).fan_out, 5);
  EXPECT_EQ(I::ComputeFans({3, 3, 2, 8}).fan_in, 18);
  EXPECT_EQ(I::ComputeFans({3, 3, 2, 8}).fan_out, 72);
}

TEST(InitializersTest, VarianceScalingFamilyHasTheIntendedStatistics) {
  std::vector<double> values;
  // Glorot uniform: U(-l, l), l = sqrt(6 / (200 + 300)), variance l^2 / 3 = 2 / 500.
  auto [m1, v1] = Moments(I::GlorotUniform(), {200, 300}, 1, &values);
  const double limit = std::sqrt(6.0 / 500);
  for (double e : values) ASSERT_LE(std::abs(e), limit);
  EXPECT_NEAR(m1, 0, 0.002);
  EXPECT_NEAR(v1, 2.0 / 500, 2.0 / 500 * 0.03);
  // Truncated-normal variants: the 0.8796 correction restores the target variance.
  auto [m2, v2] = Moments(I::GlorotNormal(), {200, 300}, 2, &values);
  const double sd = std::sqrt(2.0 / 500) / 0.87962566103423978;
  for (double e : values) ASSERT_LE(std::abs(e), 2 * sd + 1e-12);
  EXPECT_NEAR(m2, 0, 0.002);
  EXPECT_NEAR(v2, 2.0 / 500, 2.0 / 500 * 0.03);
  auto [m3, v3] = Moments(I::HeNormal(), {3, 3, 16, 32}, 3);  // fan_in 144
  EXPECT_NEAR(m3, 0, 0.01);
  EXPECT_NEAR(v3, 2.0 / 144, 2.0 / 144 * 0.05);
  auto [m4, v4] = Moments(
      I::VarianceScaling(
          {.scale = 3.0, .mode = I::FanMode::kFanOut, .distribution = I::Distribution::kNormal}),
      {100, 400}, 4);
  EXPECT_NEAR(m4, 0, 0.003);
  EXPECT_NEAR(v4, 3.0 / 400, 3.0 / 400 * 0.03);
  auto [m5, v5] = Moments(I::TruncatedNormal({.mean = 1.0, .stddev = 0.5}), {50000}, 5, &values);
  for (double e : values) ASSERT_LE(std::abs(e - 1.0), 1.0 + 1e-12);
  EXPECT_NEAR(m5, 1.0, 0.01);
  EXPECT_NEAR(v5, 0.25 * 0.87962566103423978 * 0.87962566103423978, 0.01);
  auto [m6, v6] = Moments(I::RandomUniform({.minval = 2, .maxval = 4}), {50000}, 6);
  EXPECT_NEAR(m6, 3, 0.01);
  EXPECT_NEAR(v6, 4.0 / 12, 0.01);
}

TEST(InitializersTest, SeedsAreHonored) {
  std::vector<double> a, b, c, d;
  Moments(I::GlorotUniform(), {10, 10}, 42, &a);
  Moments(I::GlorotUniform(), {10, 10}, 42, &b);
  Moments(I::GlorotUniform(), {10, 10}, 43, &c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  Moments(I::GlorotUniform({.seed = 7}), {10, 10}, 42, &c);
  Moments(I::GlorotUniform({.seed = 8}), {10, 10}, 42, &d);
  EXPECT_NE(c, d);
}

TEST(InitializersTest, ConstantsAndShapeChecks) {
  Graph graph;
  Scope s(graph);
  Output z = I::Zeros()(s, {2, 2}, kFloat32);
  Output o = I::Ones()(s, {3}, kFloat64);
  Output c = I::Constant(2.5)(s, {2}, kFloat32);
  Session session(graph, {.intra_op_threads = 1});
  ExpectAllNear(session.Eval(z), {0, 0, 0, 0}, 0);
  ExpectAllNear(session.Eval(o), {1, 1, 1}, 0);
  ExpectAllNear(session.Eval(c), {2.5, 2.5}, 0);
  EXPECT_THROW(I::Constant(Floats({1, 2}, {2}))(s, {3}, kFloat32), Error);
  EXPECT_THROW(I::GlorotUniform()(s, Shape({-1, 3}), kFloat32), Error);
}

}  // namespace
}  // namespace loom
