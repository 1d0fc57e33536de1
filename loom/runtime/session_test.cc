#include "loom/runtime/session.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "loom/autodiff/gradients.h"
#include "loom/ops/array.h"
#include "loom/ops/blas.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::CodeOf;

TEST(SessionTest, FeedsAndFetchesThroughIdentity) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  auto y = Identity(s, x);
  Session session(graph);
  Tensor value = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  Tensor out = session.Run({{x, value}}, {y})[0];
  EXPECT_TRUE(out.Equals(value));
}

TEST(SessionTest, MissingFeedNamesThePlaceholder) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("features"), kFloat32, {-1, 2});
  Session session(graph);
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Eval(Identity(s, x)); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'features'"), std::string::npos) << message;
}

TEST(SessionTest, FeedOfWrongDtypeOrShapeIsRejected) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  auto y = Identity(s, x);
  Session session(graph);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{x, Tensor::FromVector<double>({1, 2}, {1, 2})}}, {y});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
  EXPECT_EQ(CodeOf(
                [&] {
                  session.Run({{x, Tensor::FromVector<float>({1, 2, 3}, {1, 3})}}, {y});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("[?,2]"), std::string::npos) << message;
}

TEST(SessionTest, VariablesInitializeAssignAndPersist) {
  Graph graph;
  Scope s(graph);
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({1, 2}));
  auto add = AssignAdd(s, w, Tensor::FromVector<float>({10, 20}));
  Session session(graph);
  std::string message;
  EXPECT_EQ(CodeOf([&] { session.Eval(w); }, &message), ErrorCode::kFailedPrecondition);
  EXPECT_NE(message.find("'w'"), std::string::npos) << message;
  session.RunTarget(GlobalVariablesInitializer(s));
  Tensor before = session.Eval(w);
  session.RunTarget(add);
  session.RunTarget(add);
  Tensor after = session.Eval(w);
  EXPECT_EQ(before.flat<float>()[0], 1);  // a fetched value never changes afterwards
  EXPECT_EQ(after.flat<float>()[0], 21);
  EXPECT_EQ(after.flat<float>()[1], 42);
  EXPECT_EQ(graph.FindNode("w/Assign")->op(), "Assign");
}

// A hook's thread may write a variable while a step reads it (GlobalStepWaiterHook waits for
// a chief that moves global_step). Every read, the initialized check included, takes the
// variable's lock: under ThreadSanitizer (`make tsan`) an unlocked read is a reported race.
TEST(SessionTest, VariableWrittenFromAnotherThreadWhileStepsReadIt) {
  Graph graph;
  Scope s(graph);
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({0, 0}));
  auto read_in_step = Identity(s, w);
  Session session(graph);
  constexpr int kWrites = 300;
  std::thread writer([&] {
    for (int k = 1; k <= kWrites; ++k) {
      session.WriteVariable("w", Tensor::FromVector<float>({float(k), float(k)}));
    }
  });
  float last = 0;
  int seen_initialized = 0;
  while (last < kWrites) {
    if (!session.VariableInitialized("w")) continue;
    ++seen_initialized;
    for (const Tensor& t :
         {session.Eval(read_in_step), session.Eval(w), session.ReadVariable("w")}) {
      ASSERT_EQ(t.flat<float>()[0], t.flat<float>()[1]) << "a torn value";
      ASSERT_GE(t.flat<float>()[0], last) << "a value older than one read before";
      last = t.flat<float>()[0];
    }
  }
  writer.join();
  EXPECT_GT(seen_initialized, 0);
}

TEST(SessionTest, AssignAddTakesTheVariablesShapeOrAScalar) {
  Graph graph;
  Scope s(graph);
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  auto add_scalar = AssignAdd(s, w, 10.0f);
  auto sub_scalar = AssignSub(s, w, 1.0f);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  AssignAdd(s, w, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'w' of shape [2,3]"), std::string::npos) << message;
  EXPECT_NE(message.find("[3,2]"), std::string::npos) << message;
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  session.RunTarget(add_scalar);
  session.RunTarget(sub_scalar);
  Tensor after = session.Eval(w);
  EXPECT_EQ(after.flat<float>()[0], 10);
  EXPECT_EQ(after.flat<float>()[5], 15);
}

TEST(SessionTest, PrunesToWhatFetchesNeed) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("unused"), kFloat32);
  (void)Identity(s, x);
  auto c = Const(s, Tensor::Scalar<float>(3));
  Session session(graph);
  EXPECT_EQ(session.Eval(Identity(s, c)).scalar<float>(), 3);  // no feed for 'unused' needed
}

TEST(SessionTest, ControlDependenciesRunFirst) {
  Graph graph;
  Scope s(graph);
  Variable v(s.WithOpName("v"), Tensor::Scalar<float>(0));
  auto inc = AssignAdd(s, v, 1.0f);
  auto read = Identity(s.WithControlDependencies({inc}), v);
  Session session(graph);
  session.RunTarget(GlobalVariablesInitializer(s));
  EXPECT_EQ(session.Eval(read).scalar<float>(), 1);
  EXPECT_EQ(session.Eval(read).scalar<float>(), 2);
}

// Plans are cached per (feeds, fetches, targets) signature, and each keeps the variables it
// reads once found. A variable created after its reader's plan (by the initializer, or a
// write) is found by the next Run; a write between runs is seen; a signature that differs
// only in what is fed or fetched gets its own plan; nodes appended after a plan was cached
// run; errors in a cached plan still name the node; two Sessions keep their own values.
TEST(SessionTest, CachedPlansFindVariablesCreatedLaterAndKeepSignaturesApart) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {});
  Variable w(s.WithOpName("w"), Tensor::Scalar<float>(2));
  auto y = Mul(s, x, w);
  const FeedList feed_x = {{x, Tensor::Scalar<float>(3)}};
  Session session(graph);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the same plan fails twice, naming 'w'
    std::string message;
    EXPECT_EQ(CodeOf([&] { session.Run(feed_x, {y}); }, &message), ErrorCode::kFailedPrecondition);
    EXPECT_NE(message.find("'w'"), std::string::npos) << message;
  }
  session.RunTarget(GlobalVariablesInitializer(s));
  EXPECT_EQ(session.Run(feed_x, {y})[0].scalar<float>(), 6);
  session.WriteVariable("w", Tensor::Scalar<float>(5));
  EXPECT_EQ(session.Run(feed_x, {y})[0].scalar<float>(), 15);
  // Feeding the variable: another signature, which reads the feed and not the variable.
  EXPECT_EQ(session.Run({{x, Tensor::Scalar<float>(3)}, {w, Tensor::Scalar<float>(7)}}, {y})[0]
                .scalar<float>(),
            21);
  EXPECT_EQ(session.Run(feed_x, {y})[0].scalar<float>(), 15);
  const auto both = session.Run(feed_x, {y, w});  // fetching the variable too
  EXPECT_EQ(both[0].scalar<float>(), 15);
  EXPECT_EQ(both[1].scalar<float>(), 5);
  // The graph grows after plans are cached.
  auto z = Add(s, y, w);
  EXPECT_EQ(session.Run(feed_x, {z})[0].scalar<float>(), 20);
  EXPECT_EQ(session.Run(feed_x, {y})[0].scalar<float>(), 15);
  // A kernel error in a cached plan names its node.
  auto u = Placeholder(s.WithOpName("u"), kFloat32);  // unknown shape: fails in the kernel
  auto bad = Reshape(s.WithOpName("bad_reshape"), u, {2});
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string message;
    EXPECT_EQ(CodeOf(
                  [&] {
                    session.Run({{u, Tensor::Scalar<float>(1)}}, {bad});
                  },
                  &message),
              ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find("bad_reshape"), std::string::npos) << message;
  }
  // Another Session on the same graph has its own variables and plans.
  Session other(graph);
  other.WriteVariable("w", Tensor::Scalar<float>(-1));
  EXPECT_EQ(other.Run(feed_x, {y})[0].scalar<float>(), -3);
  EXPECT_EQ(session.Run(feed_x, {y})[0].scalar<float>(), 15);
}

// A Run started inside a kernel of another Run on the same thread (the per-thread scratch
// vectors are a stack): the outer Run's values survive the inner one, which also throws.
TEST(SessionTest, RunInsideAKernelKeepsTheOuterRunsValues) {
  static std::function<void()> inner;
  static const OpDef nested = {
      .name = "NestedRun",
      .num_inputs = 0,
      .num_outputs = 0,
      .shape = [](InferenceContext&) {},
      .kernel = [](KernelContext&) { inner(); },
      .no_gradient = "test op",
  };
  Graph inner_graph;
  Scope is(inner_graph);
  auto v = Placeholder(is.WithOpName("v"), kFloat32, {});
  auto doubled = Add(is, Identity(is, v), Identity(is, v));
  Session inner_session(inner_graph);
  inner = [&] {
    EXPECT_EQ(inner_session.Run({{v, Tensor::Scalar<float>(4)}}, {doubled})[0].scalar<float>(), 8);
    EXPECT_EQ(CodeOf([&] { inner_session.Eval(doubled); }), ErrorCode::kInvalidArgument);
  };
  Graph graph;
  Scope s(graph);
  auto c = Const(s, Tensor::Scalar<float>(2));
  auto x = Identity(s, c);
  Node* run_inner = s.WithOpName("run_inner").AddNode(nested, {}, {});
  auto y = Add(s, x, c);  // reads slots written before the inner Run
  Session session(graph);
  for (int attempt = 0; attempt < 2; ++attempt) {
    EXPECT_EQ(session.Run({}, {y}, {run_inner})[0].scalar<float>(), 4);
  }
}

TEST(SessionTest, StepStatsWhenTracing) {
  Graph graph;
  Scope s(graph);
  auto y = Identity(s.WithOpName("y"), Const(s, Tensor::Scalar<float>(1)));
  Session session(graph);
  RunOptions options{.trace = true};
  RunMetadata metadata;
  session.Run({}, {y}, {}, &options, &metadata);
  ASSERT_EQ(metadata.step_stats.size(), 2u);
  EXPECT_EQ(metadata.step_stats[1].node_name, "y");
}

// A node with `_schedule_early` runs right after the last of its inputs and control
// inputs, not in node order (what a collective's start needs, distribute/collective_ops.h).
TEST(SessionTest, ScheduleEarlyNodesRunRightAfterTheirInputs) {
  for (bool early : {true, false}) {
    Graph graph;
    Scope s(graph);
    auto a = Identity(s.WithOpName("a"), Const(s.WithOpName("x"), Tensor::Scalar<float>(3)));
    auto b = Identity(s.WithOpName("b"), a);
    auto c = Identity(s.WithOpName("c"), b);
    const OpDef& identity = a.node->op_def();
    Node* after_a = s.WithOpName("after_a").AddNode(identity, {a}, {{"_schedule_early", early}});
    Node* after_b = s.WithOpName("after_b").WithControlDependencies({b}).AddNode(
        identity, {a}, {{"_schedule_early", early}});
    Session session(graph);
    RunOptions options{.trace = true};
    RunMetadata metadata;
    auto out =
        session.Run({}, {c, after_a->output(0), after_b->output(0)}, {}, &options, &metadata);
    EXPECT_EQ(out[1].scalar<float>(), 3);
    EXPECT_EQ(out[2].scalar<float>(), 3);
    std::vector<std::string> order;
    for (const NodeExecStats& st : metadata.step_stats) order.push_back(st.node_name);
    const std::vector<std::string> expected =
        early ? std::vector<std::string>{"x", "a", "after_a", "b", "after_b", "c"}
              : std::vector<std::string>{"x", "a", "b", "c", "after_a", "after_b"};
    EXPECT_EQ(order, expected);
  }
}

// A kernel that throws `message` unmarked, or through KernelContext::Fail.
const OpDef& ThrowingOp(bool through_fail) {
  static const OpDef plain = {
      .name = "ThrowPlain",
      .num_inputs = 0,
      .num_outputs = 0,
      .shape = [](InferenceContext&) {},
      .kernel = [](KernelContext&) { throw InvalidArgument("no feature 'k' in the input"); },
      .no_gradient = "test op",
  };
  static const OpDef failing = {
      .name = "ThrowFail",
      .num_inputs = 0,
      .num_outputs = 0,
      .shape = [](InferenceContext&) {},
      .kernel = [](KernelContext& c) { c.Fail("no feature 'k' in the input"); },
      .no_gradient = "test op",
  };
  return through_fail ? failing : plain;
}

int Count(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Every kernel error names its node exactly once, whatever else its message quotes: a
// node named 'k' whose message quotes a feature 'k' still gets its context.
TEST(SessionTest, KernelErrorsNameTheirNodeOnce) {
  Graph graph;
  Scope s(graph);
  Node* plain = s.WithOpName("k").AddNode(ThrowingOp(false), {}, {});
  Node* failing = s.WithOpName("f").AddNode(ThrowingOp(true), {}, {});
  auto x = Placeholder(s.WithOpName("features"), kFloat32, {});
  Session session(graph);
  try {
    session.RunTarget(plain);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "no feature 'k' in the input [in ThrowPlain 'k']");
    EXPECT_EQ(e.node(), "k");
  }
  try {
    session.RunTarget(failing);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "ThrowFail 'f': no feature 'k' in the input");
    EXPECT_EQ(e.node(), "f");
  }
  std::string message;
  CodeOf([&] { session.Eval(Identity(s, x)); }, &message);
  EXPECT_EQ(Count(message, "features"), 1) << message;
}

// OpenBLAS has one thread count per process; a Run sets it to its own Session's, not
// to whichever Session was created last.
TEST(SessionTest, EachRunSetsItsSessionsBlasThreads) {
  Graph graph;
  Scope s(graph);
  auto y = Identity(s, Placeholder(s, kFloat32, {}));
  Session one(graph, {.intra_op_threads = 1});
  Session two(graph, {.intra_op_threads = 2});
  const FeedList feed = {{y.node->input(0), Tensor::Scalar<float>(1)}};
  one.Run(feed, {y});
  EXPECT_EQ(BlasThreads(), 1);
  two.Run(feed, {y});
  EXPECT_EQ(BlasThreads(), 2);
  one.Run(feed, {y});
  EXPECT_EQ(BlasThreads(), 1);
}

TEST(ResourceMgrTest, UnnamedResourcesAreOnePerTypeAndApartFromNames) {
  struct Cache : Resource {
    int hits = 0;
  };
  ResourceMgr resources;
  Cache& cache = resources.Unnamed<Cache>();
  cache.hits = 3;
  EXPECT_EQ(&resources.Unnamed<Cache>(), &cache);
  EXPECT_TRUE(resources.Names().empty());
  // A named resource of the same type is another object.
  Cache* named = resources.LookupOrCreate<Cache>("cache");
  EXPECT_NE(named, &cache);
  EXPECT_EQ(resources.Unnamed<Cache>().hits, 3);
  EXPECT_EQ(resources.Names(), (std::vector<std::string>{"cache"}));
}

// gradient_checker.h's example, as written there.
TEST(GradientCheckerTest, HeaderExampleRunsAsWritten) {
  double err =
      MaxGradientError([](const Scope& s, const std::vector<Output>& x) { return Tanh(s, x[0]); },
                       {RandomDoubles({3, 4})});
  EXPECT_LT(err, 1e-6);
}

TEST(GradientsTest, AddNAndIdentityAccumulate) {
  double err = MaxGradientError(
      [](const Scope& s, const std::vector<Output>& x) {
        return AddN(s, {x[0], Identity(s, x[0]), x[1]});
      },
      {RandomDoubles({3, 2}), RandomDoubles({3, 2}, 2)});
  EXPECT_LT(err, 1e-8);
}

TEST(GradientsTest, StopGradientBlocksAndNoRuleIsAnError) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {2});
  auto y = AddN(s, {StopGradient(s, x), OnesLike(s, x)});
  EXPECT_FALSE(Gradients(s, {y}, {x})[0].valid());
  Variable v(s.WithOpName("v"), Tensor::FromVector<double>({1, 2}));
  auto assigned = Assign(s, v, x);
  std::string message;
  EXPECT_EQ(CodeOf([&] { Gradients(s, {assigned}, {x}); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Assign"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom
