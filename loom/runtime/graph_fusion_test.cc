#include "loom/runtime/graph_fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "loom/autodiff/gradients.h"
#include "loom/graph/precision.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

Tensor Random(DType dtype, const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(kFloat64, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<double>()[i] = u(rng);
  if (dtype == kFloat64) return t;
  Tensor f(kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) f.data<float>()[i] = float(t.data<double>()[i]);
  return f;
}

double At(const Tensor& t, int64_t i) {
  return t.dtype() == kFloat64 ? t.data<double>()[i] : t.data<float>()[i];
}

// max |a - b| / max(1, max |b|).
double RelError(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double err = 0, scale = 1;
  for (int64_t i = 0; i < b.NumElements(); ++i) {
    err = std::max(err, std::abs(At(a, i) - At(b, i)));
    scale = std::max(scale, std::abs(At(b, i)));
  }
  return err / scale;
}

// Two conv -> bias -> relu -> max-pool layers, a dense ReLU layer and a weighted sum, with
// the gradients of the sum by every input: the convnet's step in small.
struct Convnet {
  Graph graph;
  std::vector<Output> inputs;  // x, w1, b1, w2, b2, w3, b3, c
  Output conv1, bias1, relu1, loss;
  std::vector<Output> fetches;  // loss and the gradients

  Convnet(DType dtype, int64_t pool_window, int64_t pool_stride) {
    Scope s(graph);
    const char* names[] = {"x", "w1", "b1", "w2", "b2", "w3", "b3", "c"};
    for (int i = 0; i < 8; ++i) {
      inputs.push_back(Placeholder(s.WithOpName(names[i]), dtype, Shape::Unknown()));
    }
    Scope l1 = s.NewSubScope("conv1");
    conv1 = Conv2D(l1, inputs[0], inputs[1], {1, 1}, "SAME");
    bias1 = BiasAdd(l1, conv1, inputs[2]);
    relu1 = Relu(l1, bias1);
    auto p1 = MaxPool(s, relu1, {pool_window, pool_window}, {pool_stride, pool_stride}, "VALID");
    Scope l2 = s.NewSubScope("conv2");
    auto relu2 = Relu(l2, BiasAdd(l2, Conv2D(l2, p1, inputs[3], {1, 1}, "SAME"), inputs[4]));
    auto p2 = MaxPool(s, relu2, {2, 2}, {2, 2}, "VALID");
    auto flat = Reshape(s, p2, {3, -1});
    auto dense = Relu(s, BiasAdd(s, MatMul(s, flat, inputs[5]), inputs[6]));
    loss = Sum(s, Mul(s, dense, inputs[7]));
    fetches = {loss};
    for (Output g :
         Gradients(s, {loss},
                   {inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], inputs[5], inputs[6]})) {
      fetches.push_back(g);
    }
  }

  FeedList Feeds(DType dtype, int64_t flat_size) const {
    const std::vector<Shape> shapes = {{3, 12, 12, 3}, {5, 5, 3, 8},    {8},  {3, 3, 8, 16},
                                       {16},           {flat_size, 12}, {12}, {3, 12}};
    FeedList feeds;
    for (int i = 0; i < 8; ++i) feeds.push_back({inputs[i], Random(dtype, shapes[i], 100 + i)});
    return feeds;
  }
};

std::vector<Tensor> RunConvnet(DType dtype, bool fuse, int64_t window, int64_t stride,
                               std::set<std::string>* traced_ops = nullptr, bool nan = false) {
  Convnet net(dtype, window, stride);
  const int64_t pooled = (12 - window) / stride + 1;
  Session session(net.graph, {.intra_op_threads = 2, .fuse_ops = fuse});
  RunOptions options{.trace = true};
  RunMetadata metadata;
  FeedList feeds = net.Feeds(dtype, (pooled / 2) * (pooled / 2) * 16);
  if (nan) {  // one NaN pixel of image 1: NaN flows through conv, bias, ReLU, pools and back
    Tensor& x = feeds[0].second;
    const int64_t at = ((1 * 12 + 5) * 12 + 6) * 3 + 1;
    if (dtype == kFloat32) x.data<float>()[at] = std::nanf("");
    if (dtype == kFloat64) x.data<double>()[at] = std::nan("");
  }
  auto out = session.Run(feeds, net.fetches, {}, &options, &metadata);
  if (traced_ops != nullptr) {
    for (const auto& st : metadata.step_stats) traced_ops->insert(st.op + " " + st.node_name);
  }
  return out;
}

bool Traced(const std::set<std::string>& ops, const std::string& entry) {
  return ops.count(entry) > 0;
}

TEST(GraphFusionTest, ConvnetStepMatchesUnfusedAndFloat64AndTracesTheFusedNodes) {
  for (const int64_t window : {2, 3}) {  // 2x2/2 tiles the input; 3x3/2 windows overlap
    const int64_t stride = 2;
    std::set<std::string> fused_ops, plain_ops;
    auto fused = RunConvnet(kFloat32, true, window, stride, &fused_ops);
    auto plain = RunConvnet(kFloat32, false, window, stride, &plain_ops);
    auto exact = RunConvnet(kFloat64, false, window, stride);
    auto fused64 = RunConvnet(kFloat64, true, window, stride);
    ASSERT_EQ(fused.size(), plain.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "window " << window << " fetch " << i);
      EXPECT_LT(RelError(fused[i], plain[i]), 2e-6);
      EXPECT_LT(RelError(fused[i], exact[i]), 2e-5);
      EXPECT_LT(RelError(plain[i], exact[i]), 2e-5);
      // float64 runs the same arithmetic in the same order, fused or not.
      EXPECT_LT(RelError(fused64[i], exact[i]), 1e-14);
    }
    EXPECT_TRUE(Traced(fused_ops, "Conv2D+BiasAdd+Relu conv1/Conv2D+conv1/BiasAdd+conv1/Relu"));
    EXPECT_TRUE(Traced(fused_ops, "Conv2D+BiasAdd+Relu conv2/Conv2D+conv2/BiasAdd+conv2/Relu"));
    EXPECT_TRUE(Traced(fused_ops,
                       "MaxPoolGrad+ReluGrad+BiasAddGrad gradients/MaxPool/MaxPoolGrad+"
                       "gradients/conv1/Relu/ReluGrad+gradients/conv1/BiasAdd/BiasAddGrad"));
    EXPECT_TRUE(Traced(
        fused_ops, "ReluGrad+BiasAddGrad gradients/Relu/ReluGrad+gradients/BiasAdd/BiasAddGrad"));
    EXPECT_FALSE(Traced(fused_ops, "Conv2D conv1/Conv2D"));
    EXPECT_FALSE(Traced(fused_ops, "ReluGrad gradients/conv1/Relu/ReluGrad"));
    // Unfused, every node is its own step.
    EXPECT_TRUE(Traced(plain_ops, "Conv2D conv1/Conv2D"));
    EXPECT_TRUE(Traced(plain_ops, "ReluGrad gradients/conv1/Relu/ReluGrad"));
    for (const std::string& op : plain_ops) EXPECT_EQ(op.find('+'), std::string::npos) << op;
  }
}

// NaN is where the unfused graph has it (ReLU, its gradient and the pools propagate it).
TEST(GraphFusionTest, NaNPropagatesAsUnfused) {
  for (const DType dtype : {kFloat32, kFloat64}) {
    auto fused = RunConvnet(dtype, true, 2, 2, nullptr, true);
    auto plain = RunConvnet(dtype, false, 2, 2, nullptr, true);
    for (size_t i = 0; i < fused.size(); ++i) {
      int64_t nans = 0;
      for (int64_t j = 0; j < plain[i].NumElements(); ++j) {
        const bool plain_nan = std::isnan(At(plain[i], j));
        nans += plain_nan;
        ASSERT_EQ(std::isnan(At(fused[i], j)), plain_nan)
            << DTypeName(dtype) << " fetch " << i << " element " << j;
        if (!plain_nan) {
          EXPECT_NEAR(At(fused[i], j), At(plain[i], j), 1e-5 * (1 + std::abs(At(plain[i], j))));
        }
      }
      if (i == 1) {
        EXPECT_GT(nans, 0) << "the input gradient has no NaN: the test tests nothing";
      }
    }
  }
}

// The ops of the steps that compute `fetches`.
std::set<std::string> TracedOps(Convnet& net, const std::vector<Output>& fetches,
                                std::vector<Tensor>* values) {
  Session session(net.graph, {.intra_op_threads = 1});
  RunOptions options{.trace = true};
  RunMetadata metadata;
  *values = session.Run(net.Feeds(kFloat32, 3 * 3 * 16), fetches, {}, &options, &metadata);
  std::set<std::string> ops;
  for (const auto& st : metadata.step_stats) ops.insert(st.op);
  return ops;
}

TEST(GraphFusionTest, FetchingAnIntermediateDisablesItsFusion) {
  Convnet net(kFloat32, 2, 2);
  std::vector<Tensor> v;
  // The chain's last output may be fetched: it is still written.
  EXPECT_TRUE(TracedOps(net, {net.relu1}, &v).count("Conv2D+BiasAdd+Relu"));
  // BiasAdd fetched: Conv2D -> BiasAdd still fuses, the Relu runs alone.
  auto ops = TracedOps(net, {net.relu1, net.bias1}, &v);
  EXPECT_TRUE(ops.count("Conv2D+BiasAdd")) << *ops.begin();
  EXPECT_TRUE(ops.count("Relu"));
  std::vector<Tensor> ref;
  {
    Session plain(net.graph, {.intra_op_threads = 1, .fuse_ops = false});
    ref = plain.Run(net.Feeds(kFloat32, 3 * 3 * 16), {net.relu1, net.bias1, net.conv1});
  }
  EXPECT_LT(RelError(v[0], ref[0]), 2e-6);
  EXPECT_LT(RelError(v[1], ref[1]), 2e-6);
  // The Conv2D fetched: nothing of conv1 fuses.
  ops = TracedOps(net, {net.relu1, net.conv1}, &v);
  EXPECT_TRUE(ops.count("Conv2D"));
  EXPECT_TRUE(ops.count("BiasAdd"));
  EXPECT_FALSE(ops.count("Conv2D+BiasAdd+Relu"));
  EXPECT_LT(RelError(v[1], ref[2]), 1e-7);
}

TEST(GraphFusionTest, ErrorsNameTheUsersNode) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape::Unknown());
  auto w = Placeholder(s.WithOpName("w"), kFloat32, Shape::Unknown());
  auto b = Placeholder(s.WithOpName("b"), kFloat32, Shape::Unknown());
  auto y =
      Relu(s.WithOpName("act"), BiasAdd(s.WithOpName("add"), Conv2D(s, x, w, {1, 1}, "SAME"), b));
  Session session(graph);
  std::string message;
  Error error(ErrorCode::kInternal, "");
  const FeedList feeds = {{x, Random(kFloat32, {1, 4, 4, 2}, 1)},
                          {w, Random(kFloat32, {3, 3, 2, 5}, 2)},
                          {b, Random(kFloat32, {4}, 3)}};  // 5 channels: a bad bias
  try {
    session.Run(feeds, {y});
    FAIL() << "a bias of the wrong size ran";
  } catch (const Error& e) {
    error = e;
  }
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(error.node(), "add");
  EXPECT_NE(error.message().find("BiasAdd 'add'"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("fuse_ops = false"), std::string::npos) << error.message();
  // The Conv2D's own errors name the Conv2D.
  const FeedList bad_channels = {{x, Random(kFloat32, {1, 4, 4, 3}, 1)},
                                 {w, Random(kFloat32, {3, 3, 2, 5}, 2)},
                                 {b, Random(kFloat32, {5}, 3)}};
  try {
    session.Run(bad_channels, {y});
    FAIL() << "mismatched channels ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "Conv2D") << e.message();
    EXPECT_NE(e.message().find("input channels 3"), std::string::npos) << e.message();
  }
}

// A two-layer dense net (MatMul -> BiasAdd -> Relu, then MatMul -> BiasAdd) and the
// gradients of a weighted sum of its output by every input.
struct DenseNet {
  Graph graph;
  std::vector<Output> inputs;  // x, w1, b1, w2, b2, c
  Output mm1, bias1, relu1, out;
  std::vector<Output> fetches;  // the loss and the gradients

  DenseNet(DType dtype, bool transpose_a, bool transpose_b) {
    Scope s(graph);
    const char* names[] = {"x", "w1", "b1", "w2", "b2", "c"};
    for (int i = 0; i < 6; ++i) {
      inputs.push_back(Placeholder(s.WithOpName(names[i]), dtype, Shape::Unknown()));
    }
    Scope l1 = s.NewSubScope("dense1");
    mm1 = MatMul(l1, inputs[0], inputs[1], {.transpose_a = transpose_a});
    bias1 = BiasAdd(l1, mm1, inputs[2]);
    relu1 = Relu(l1, bias1);
    Scope l2 = s.NewSubScope("dense2");
    out = BiasAdd(l2, MatMul(l2, relu1, inputs[3], {.transpose_b = transpose_b}), inputs[4]);
    Output loss = Sum(s, Mul(s, out, inputs[5]));
    fetches = {loss, out};
    for (Output g : Gradients(s, {loss}, {inputs[0], inputs[1], inputs[2], inputs[3], inputs[4]})) {
      fetches.push_back(g);
    }
  }

  // x [7, 9] (stored [9, 7] when transpose_a), w1 [9, 13], w2 [13, 5] (stored [5, 13] when
  // transpose_b); some of x's entries zero, so that exact zeros reach the ReLU.
  FeedList Feeds(DType dtype, bool transpose_a, bool transpose_b) const {
    const std::vector<Shape> shapes = {transpose_a ? Shape{9, 7} : Shape{7, 9},   {9, 13}, {13},
                                       transpose_b ? Shape{5, 13} : Shape{13, 5}, {5},     {7, 5}};
    FeedList feeds;
    for (int i = 0; i < 6; ++i) feeds.push_back({inputs[i], Random(dtype, shapes[i], 200 + i)});
    return feeds;
  }
};

std::vector<Tensor> RunDense(DType dtype, bool fuse, bool ta, bool tb,
                             std::set<std::string>* traced_ops) {
  DenseNet net(dtype, ta, tb);
  Session session(net.graph, {.intra_op_threads = 2, .fuse_ops = fuse});
  RunOptions options{.trace = true};
  RunMetadata metadata;
  auto out = session.Run(net.Feeds(dtype, ta, tb), net.fetches, {}, &options, &metadata);
  for (const auto& st : metadata.step_stats) traced_ops->insert(st.op + " " + st.node_name);
  return out;
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const size_t size = DTypeSize(a.dtype()) * static_cast<size_t>(a.NumElements());
  return std::memcmp(a.raw_data(), b.raw_data(), size) == 0;
}

// The fused dense layers compute the unfused nodes' values bit for bit (the same product,
// then the same additions and comparisons), in both precisions and for the transposes, and
// within rounding of float64.
TEST(GraphFusionTest, DenseChainsMatchUnfusedBitwiseAndTraceTheFusedNodes) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "transpose_a " << ta << " transpose_b " << tb);
      std::set<std::string> fused_ops, plain_ops, unused;
      auto exact = RunDense(kFloat64, false, ta, tb, &unused);
      for (const DType dtype : {kFloat32, kFloat64}) {
        auto fused = RunDense(dtype, true, ta, tb, &fused_ops);
        auto plain = RunDense(dtype, false, ta, tb, &plain_ops);
        ASSERT_EQ(fused.size(), plain.size());
        for (size_t i = 0; i < fused.size(); ++i) {
          EXPECT_TRUE(BitwiseEqual(fused[i], plain[i])) << DTypeName(dtype) << " fetch " << i;
          EXPECT_LT(RelError(fused[i], exact[i]), dtype == kFloat32 ? 2e-6 : 1e-15)
              << DTypeName(dtype) << " fetch " << i;
        }
      }
      EXPECT_TRUE(
          Traced(fused_ops, "MatMul+BiasAdd+Relu dense1/MatMul+dense1/BiasAdd+dense1/Relu"));
      // dense2's BiasAdd output is fetched: still written, so its chain fuses.
      EXPECT_TRUE(Traced(fused_ops, "MatMul+BiasAdd dense2/MatMul+dense2/BiasAdd"));
      EXPECT_FALSE(Traced(fused_ops, "MatMul dense1/MatMul"));
      EXPECT_FALSE(Traced(fused_ops, "Relu dense1/Relu"));
      EXPECT_TRUE(Traced(plain_ops, "MatMul dense1/MatMul"));
      EXPECT_TRUE(Traced(plain_ops, "BiasAdd dense1/BiasAdd"));
      for (const std::string& op : plain_ops) EXPECT_EQ(op.find('+'), std::string::npos) << op;
    }
  }
}

// A value that fusion would leave unwritten keeps its node when it is fetched or read by a
// node outside the chain; the values are the unfused ones either way.
TEST(GraphFusionTest, DenseChainDoesNotFuseWhatIsFetchedOrReadElsewhere) {
  auto ops_and_values = [](DenseNet& net, const std::vector<Output>& fetches,
                           std::vector<Tensor>* values, bool fuse) {
    Session session(net.graph, {.intra_op_threads = 1, .fuse_ops = fuse});
    RunOptions options{.trace = true};
    RunMetadata metadata;
    *values = session.Run(net.Feeds(kFloat32, false, false), fetches, {}, &options, &metadata);
    std::set<std::string> ops;
    for (const auto& st : metadata.step_stats) ops.insert(st.op + " " + st.node_name);
    return ops;
  };
  {
    // The MatMul fetched: nothing of dense1 fuses.
    DenseNet net(kFloat32, false, false);
    std::vector<Tensor> fused, plain;
    auto ops = ops_and_values(net, {net.out, net.mm1}, &fused, true);
    ops_and_values(net, {net.out, net.mm1}, &plain, false);
    EXPECT_TRUE(Traced(ops, "MatMul dense1/MatMul"));
    EXPECT_TRUE(Traced(ops, "BiasAdd dense1/BiasAdd"));
    EXPECT_TRUE(Traced(ops, "Relu dense1/Relu"));
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(BitwiseEqual(fused[i], plain[i])) << i;
  }
  {
    // The BiasAdd fetched: MatMul -> BiasAdd fuses, the Relu runs alone.
    DenseNet net(kFloat32, false, false);
    std::vector<Tensor> fused, plain;
    auto ops = ops_and_values(net, {net.out, net.bias1}, &fused, true);
    ops_and_values(net, {net.out, net.bias1}, &plain, false);
    EXPECT_TRUE(Traced(ops, "MatMul+BiasAdd dense1/MatMul+dense1/BiasAdd"));
    EXPECT_TRUE(Traced(ops, "Relu dense1/Relu"));
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(BitwiseEqual(fused[i], plain[i])) << i;
  }
  {
    // The MatMul's product read by a second node (a Square beside the BiasAdd), and the
    // BiasAdd's by a second node beside the Relu: neither value may stay unwritten.
    Graph graph;
    Scope s(graph);
    auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape::Unknown());
    auto w = Placeholder(s.WithOpName("w"), kFloat32, Shape::Unknown());
    auto b = Placeholder(s.WithOpName("b"), kFloat32, Shape::Unknown());
    auto mm = MatMul(s.WithOpName("mm"), x, w);
    auto relu = Relu(s.WithOpName("relu"), BiasAdd(s.WithOpName("add"), mm, b));
    auto y = Add(s.WithOpName("y"), relu, Square(s.WithOpName("sq"), mm));
    auto mm2 = MatMul(s.WithOpName("mm2"), x, w);
    auto add2 = BiasAdd(s.WithOpName("add2"), mm2, b);
    auto y2 = Add(s.WithOpName("y2"), Relu(s.WithOpName("relu2"), add2), add2);
    const FeedList feeds = {{x, Random(kFloat32, {4, 6}, 1)},
                            {w, Random(kFloat32, {6, 3}, 2)},
                            {b, Random(kFloat32, {3}, 3)}};
    std::vector<Tensor> values[2];
    std::set<std::string> ops;
    for (const bool fuse : {true, false}) {
      Session session(graph, {.intra_op_threads = 1, .fuse_ops = fuse});
      RunOptions options{.trace = true};
      RunMetadata metadata;
      values[fuse ? 0 : 1] = session.Run(feeds, {y, y2}, {}, &options, &metadata);
      if (fuse) {
        for (const auto& st : metadata.step_stats) ops.insert(st.op + " " + st.node_name);
      }
    }
    EXPECT_TRUE(Traced(ops, "MatMul mm"));
    EXPECT_TRUE(Traced(ops, "BiasAdd add"));
    EXPECT_TRUE(Traced(ops, "Relu relu"));
    EXPECT_TRUE(Traced(ops, "MatMul+BiasAdd mm2+add2"));
    EXPECT_TRUE(Traced(ops, "Relu relu2"));
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(BitwiseEqual(values[0][i], values[1][i])) << i;
  }
}

// Under the bf16 policies the fused step runs MatMul's own bf16 path (hardware or the
// software rounding, whichever this CPU takes): still the unfused values bit for bit.
TEST(GraphFusionTest, DenseChainUnderBf16PoliciesMatchesUnfusedBitwise) {
  for (const Precision precision : {Precision::kBf16, Precision::kBf16Emulated}) {
    Graph graph;
    Scope s(graph);
    auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape::Unknown());
    auto w = Placeholder(s.WithOpName("w"), kFloat32, Shape::Unknown());
    auto b = Placeholder(s.WithOpName("b"), kFloat32, Shape::Unknown());
    auto y = Relu(s.WithOpName("act"),
                  BiasAdd(s.WithOpName("add"),
                          MatMul(s.WithOpName("mm"), x, w, {.precision = precision}), b));
    const FeedList feeds = {{x, Random(kFloat32, {33, 70}, 1)},
                            {w, Random(kFloat32, {70, 40}, 2)},
                            {b, Random(kFloat32, {40}, 3)}};
    std::vector<Tensor> values[2];
    std::set<std::string> ops;
    for (const bool fuse : {true, false}) {
      Session session(graph, {.intra_op_threads = 1, .fuse_ops = fuse});
      RunOptions options{.trace = true};
      RunMetadata metadata;
      values[fuse ? 0 : 1] = session.Run(feeds, {y}, {}, &options, &metadata);
      if (fuse) {
        for (const auto& st : metadata.step_stats) ops.insert(st.op);
      }
    }
    EXPECT_TRUE(ops.count("MatMul+BiasAdd+Relu")) << static_cast<int>(precision);
    EXPECT_TRUE(BitwiseEqual(values[0][0], values[1][0])) << static_cast<int>(precision);
  }
}

TEST(GraphFusionTest, DenseChainErrorsNameTheirNode) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, Shape::Unknown());
  auto w = Placeholder(s.WithOpName("w"), kFloat32, Shape::Unknown());
  auto b = Placeholder(s.WithOpName("b"), kFloat32, Shape::Unknown());
  auto y = Relu(s.WithOpName("act"), BiasAdd(s.WithOpName("add"), MatMul(s, x, w), b));
  Session session(graph);
  try {
    session.Run({{x, Random(kFloat32, {2, 3}, 1)},
                 {w, Random(kFloat32, {3, 4}, 2)},
                 {b, Random(kFloat32, {5}, 3)}},  // 4 columns: a bad bias
                {y});
    FAIL() << "a bias of the wrong size ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(e.node(), "add") << e.message();
    EXPECT_NE(e.message().find("[5]"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("[2,4]"), std::string::npos) << e.message();
  }
  try {
    session.Run({{x, Random(kFloat32, {2, 3}, 1)},
                 {w, Random(kFloat32, {2, 4}, 2)},  // inner dimensions 3 and 2
                 {b, Random(kFloat32, {4}, 3)}},
                {y});
    FAIL() << "mismatched inner dimensions ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.node(), "MatMul") << e.message();
    EXPECT_NE(e.message().find("inner dimensions"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace loom
