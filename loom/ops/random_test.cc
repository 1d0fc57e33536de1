#include "loom/ops/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "loom/autodiff/gradients.h"
#include "loom/ops/array.h"
#include "loom/ops/dropout.h"
#include "loom/ops/philox.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

// Known-answer vectors from Random123's kat_vectors (philox4x32, 10 rounds).
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(philox::Philox4x32({0, 0, 0, 0}, {0, 0}),
            (philox::Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox::Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                               {0xffffffff, 0xffffffff}),
            (philox::Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox::Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                               {0xa4093822, 0x299f31d0}),
            (philox::Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// Builds the same set of random ops in a fresh graph with a graph seed.
struct RandomGraph {
  explicit RandomGraph(int64_t graph_seed = 42, int64_t op_seed = kNoSeed)
      : graph(GraphOptions{.seed = graph_seed}), s(graph) {
    // Large enough that ParallelFor splits the work between threads.
    const Shape shape{300, 200};
    outputs = {RandomNormal(s, shape, kFloat32, 0, 1, op_seed),
               RandomNormal(s, shape, kFloat64, 0, 1, op_seed),
               RandomUniform(s, shape, kFloat32, 0, 1, op_seed),
               RandomUniform(s, shape, kFloat64, 0, 1, op_seed),
               TruncatedNormal(s, shape, kFloat32, 0, 1, op_seed),
               RandomUniformInt(s, shape, -5, 5, kInt32, op_seed),
               Dropout(s, Const(s, Tensor::Zeros(kFloat32, shape)), 0.3, op_seed)};
  }
  Graph graph;
  Scope s;
  std::vector<Output> outputs;
};

std::vector<Tensor> RunTwice(RandomGraph& g, int threads) {
  Session session(g.graph, {.intra_op_threads = threads});
  std::vector<Tensor> first = session.Run({}, g.outputs);
  std::vector<Tensor> second = session.Run({}, g.outputs);
  first.insert(first.end(), second.begin(), second.end());
  return first;
}

TEST(RandomTest, SameSeedsSameNumbersWhateverTheThreadCount) {
  RandomGraph a, b;
  std::vector<Tensor> one = RunTwice(a, 1);
  std::vector<Tensor> two = RunTwice(b, 2);  // a separately built, identical graph
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(one[i].Equals(two[i])) << "output " << i;
  // Successive runs draw new numbers.
  const size_t n = a.outputs.size();
  for (size_t i = 0; i < n - 1; ++i) EXPECT_FALSE(one[i].Equals(one[i + n])) << "output " << i;
  // A new Session restarts the run counters.
  EXPECT_TRUE(one[2].Equals(RunTwice(a, 1)[2]));
}

// The stream state the Saver checkpoints: {runs, key} per op that ran; restoring it into
// a new Session continues the sequence (issue 9, exact resume).
TEST(RandomTest, StreamsSaveAndRestoreTheirPosition) {
  Graph graph({.seed = 3});
  Scope s(graph);
  Output noise = RandomUniform(s.WithOpName("noise"), {64});
  RandomNormal(s.WithOpName("unused"), {4});
  Session a(graph);
  for (int i = 0; i < 3; ++i) a.Eval(noise);
  auto saved = SaveRandomStreams(a.resources());
  ASSERT_EQ(saved.size(), 1u);  // "unused" never ran
  EXPECT_EQ(saved[0].first, "random:noise");
  EXPECT_EQ(saved[0].second.data<int64_t>()[0], 3);
  const Tensor fourth = a.Eval(noise);

  Session b(graph);
  EXPECT_TRUE(RestoreRandomStream(b.resources(), graph, saved[0].first, saved[0].second, "ckpt"));
  EXPECT_TRUE(b.Eval(noise).Equals(fourth));
  Session c(graph);
  EXPECT_FALSE(c.Eval(noise).Equals(fourth));  // a fresh Session starts at run 0
  // Streams of other graphs' nodes are ignored; a malformed one is DataLoss naming the file.
  EXPECT_FALSE(
      RestoreRandomStream(b.resources(), graph, "random:dropout", saved[0].second, "ckpt"));
  try {
    RestoreRandomStream(b.resources(), graph, "random:noise", Tensor::Scalar<float>(1), "ckpt-7");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(e.message().find("ckpt-7"), std::string::npos) << e.message();
  }
}

TEST(RandomTest, SeedingFollowsTf1Rules) {
  // Two ops with the same graph seed and no op seed differ.
  {
    Graph graph({.seed = 7});
    Scope s(graph);
    auto a = RandomUniform(s, {1000});
    auto b = RandomUniform(s, {1000});
    Session session(graph);
    auto out = session.Run({}, {a, b});
    EXPECT_FALSE(out[0].Equals(out[1]));
  }
  // An op seed alone is deterministic across graphs and sessions.
  auto with_op_seed = [] {
    Graph graph;
    Scope s(graph);
    auto a = RandomUniform(s, {1000}, kFloat32, 0, 1, /*seed=*/3);
    Session session(graph);
    return session.Eval(a);
  };
  EXPECT_TRUE(with_op_seed().Equals(with_op_seed()));
  // No seed at all: each Session draws its own.
  Graph graph;
  Scope s(graph);
  auto a = RandomUniform(s, {1000});
  Session s1(graph), s2(graph);
  EXPECT_FALSE(s1.Eval(a).Equals(s2.Eval(a)));
  // A different graph seed gives different numbers.
  RandomGraph g1(1), g2(2);
  EXPECT_FALSE(RunTwice(g1, 1)[0].Equals(RunTwice(g2, 1)[0]));
}

struct Moments {
  double mean = 0, stddev = 0, min = INFINITY, max = -INFINITY;
};

template <typename T>
Moments MomentsOf(const Tensor& t) {
  Moments m;
  double sum = 0, sq = 0;
  for (T v : t.flat<T>()) {
    sum += v;
    sq += static_cast<double>(v) * v;
    m.min = std::min<double>(m.min, v);
    m.max = std::max<double>(m.max, v);
  }
  const double n = static_cast<double>(t.NumElements());
  m.mean = sum / n;
  m.stddev = std::sqrt(sq / n - m.mean * m.mean);
  return m;
}

TEST(RandomTest, DistributionsHaveTheRightMoments) {
  Graph graph({.seed = 1});
  Scope s(graph);
  const Shape shape{200000};
  auto normal32 = RandomNormal(s, shape, kFloat32, 3.0, 2.0);
  auto normal64 = RandomNormal(s, shape, kFloat64, -1.0, 0.5);
  auto uniform32 = RandomUniform(s, shape, kFloat32, -2.0, 4.0);
  auto uniform64 = RandomUniform(s, shape, kFloat64);
  auto truncated32 = TruncatedNormal(s, shape, kFloat32, 1.0, 0.1);
  auto truncated64 = TruncatedNormal(s, shape, kFloat64);
  auto ints = RandomUniformInt(s, shape, -3, 4, kInt64);
  auto wide = RandomUniformInt(s, {1000}, 0, int64_t{1} << 40, kInt64);
  Session session(graph, {.intra_op_threads = 2});
  auto out = session.Run(
      {}, {normal32, normal64, uniform32, uniform64, truncated32, truncated64, ints, wide});

  Moments m = MomentsOf<float>(out[0]);
  EXPECT_NEAR(m.mean, 3.0, 0.02);
  EXPECT_NEAR(m.stddev, 2.0, 0.02);
  m = MomentsOf<double>(out[1]);
  EXPECT_NEAR(m.mean, -1.0, 0.005);
  EXPECT_NEAR(m.stddev, 0.5, 0.005);
  m = MomentsOf<float>(out[2]);
  EXPECT_NEAR(m.mean, 1.0, 0.02);
  EXPECT_NEAR(m.stddev, 6.0 / std::sqrt(12.0), 0.02);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 4.0);
  m = MomentsOf<double>(out[3]);
  EXPECT_NEAR(m.mean, 0.5, 0.005);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  // Truncated at 2 sigma: stddev is 0.8796 sigma, and nothing lies beyond 2 sigma.
  m = MomentsOf<float>(out[4]);
  EXPECT_NEAR(m.mean, 1.0, 0.002);
  EXPECT_NEAR(m.stddev, 0.08796, 0.002);
  EXPECT_GE(m.min, 1.0 - 0.2 - 1e-6);
  EXPECT_LE(m.max, 1.0 + 0.2 + 1e-6);
  m = MomentsOf<double>(out[5]);
  EXPECT_NEAR(m.stddev, 0.8796, 0.01);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LE(m.max, 2.0);
  std::set<int64_t> seen(out[6].flat<int64_t>().begin(), out[6].flat<int64_t>().end());
  EXPECT_EQ(seen, (std::set<int64_t>{-3, -2, -1, 0, 1, 2, 3}));
  m = MomentsOf<int64_t>(out[6]);
  EXPECT_NEAR(m.mean, 0.0, 0.02);
  m = MomentsOf<int64_t>(out[7]);
  EXPECT_GE(m.min, 0);
  EXPECT_LT(m.max, std::ldexp(1.0, 40));
  EXPECT_GT(m.max, std::ldexp(1.0, 39));  // the upper half is reached
}

TEST(RandomTest, ConstructionErrors) {
  Graph graph;
  Scope s(graph);
  EXPECT_THROW(RandomNormal(s, {-1, 3}), Error);
  EXPECT_THROW(RandomNormal(s, {3}, kInt32), Error);
  EXPECT_THROW(RandomUniformInt(s, {3}, 5, 5), Error);
  EXPECT_THROW(RandomUniformInt(s, {3}, 0, int64_t{1} << 40, kInt32), Error);
  try {
    RandomUniform(s.WithOpName("u"), {2}, kString);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("RandomUniform 'u'"), std::string::npos) << e.message();
  }
}

// The shape as a run-time vector (TF's RandomUniform(tf.shape(x))): the numbers of the
// static-shape op with the same seeds, a shape rule that keeps what is known, and every
// Run draws anew.
TEST(RandomTest, UniformWithARunTimeShapeDrawsTheStaticOpsNumbers) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape{-1, 3});
  Output dynamic = RandomUniform(s, ShapeOf(s, x), kFloat64, -2.0, 3.0, /*seed=*/7);
  Output fixed = RandomUniform(s, Shape{4, 3}, kFloat64, -2.0, 3.0, /*seed=*/7);
  EXPECT_EQ(dynamic.shape(), Shape({-1, 3}));
  Session session(graph);
  const FeedList feed = {{x, Tensor::Zeros(kFloat32, Shape{4, 3})}};
  std::vector<Tensor> first = session.Run(feed, {dynamic, fixed});
  EXPECT_EQ(first[0].shape(), Shape({4, 3}));
  EXPECT_TRUE(first[0].Equals(first[1]));
  for (double v : first[0].flat<double>()) {
    EXPECT_GE(v, -2.0);
    EXPECT_LT(v, 3.0);
  }
  EXPECT_FALSE(session.Run(feed, {dynamic})[0].Equals(first[0]));
  EXPECT_THROW(RandomUniform(s, x), Error);  // a float "shape"
}

TEST(RandomTest, RegistersEveryOp) {
  OpRegistry registry;
  RegisterRandomOps(registry);
  for (const char* name : {"RandomNormal", "RandomUniform", "RandomUniformDynamic",
                           "TruncatedNormal", "RandomUniformInt"}) {
    EXPECT_NE(registry.Find(name), nullptr) << name;
  }
}

}  // namespace
}  // namespace loom
