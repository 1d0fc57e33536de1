#include "loom/graph/graph.h"

#include <gtest/gtest.h>

#include "loom/autodiff/gradients.h"
#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::ErrorOf;

TEST(GraphTest, UniqueNamesAndNameScopes) {
  Graph graph;
  Scope root(graph);
  auto a = Identity(root.WithOpName("x"), 1.0f);
  auto b = Identity(root.WithOpName("x"), 2.0f);
  EXPECT_EQ(a.node->name(), "x");
  EXPECT_EQ(b.node->name(), "x_1");
  Scope dense = root.NewSubScope("dense");
  Scope dense2 = root.NewSubScope("dense");
  EXPECT_EQ(Identity(dense.WithOpName("MatMul"), a).node->name(), "dense/MatMul");
  EXPECT_EQ(Identity(dense2, a).node->name(), "dense_1/Identity");
  EXPECT_EQ(graph.GetOutput("x_1:0"), b);
  EXPECT_NE(ErrorOf([&] { graph.GetOutput("dens"); }).find("dense"), std::string::npos);
}

// WithPrefix re-enters a name scope exactly (tf.name_scope("dense/")) where NewSubScope
// would make a new one; the nodes' own names are still made unique.
TEST(GraphTest, WithPrefixReentersANameScope) {
  Graph graph;
  Scope root(graph);
  Scope dense = root.NewSubScope("dense");
  auto a = Identity(dense.WithOpName("x"), 1.0f);
  Scope again = root.WithPrefix(dense.prefix());
  EXPECT_EQ(again.prefix(), "dense");
  EXPECT_EQ(Identity(again.WithOpName("x"), a).node->name(), "dense/x_1");
  EXPECT_EQ(root.NewSubScope("dense").prefix(), "dense_1");
  EXPECT_EQ(again.WithPrefix("").prefix(), "");
}

// Names come from files (GraphDef inputs): a bad index is a loom::Error, never the
// std::invalid_argument / std::out_of_range that std::stoi throws.
TEST(GraphTest, GetOutputRejectsBadIndicesWithLoomErrors) {
  Graph graph;
  Scope root(graph);
  Identity(root.WithOpName("x"), 1.0f);
  for (const char* name : {"x:abc", "x:99999999999", "x:", "x:1a", "x: 1"}) {
    try {
      graph.GetOutput(name);
      ADD_FAILURE() << name << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << name;
      EXPECT_NE(e.message().find(name), std::string::npos) << e.message();
    }
  }
  EXPECT_NE(ErrorOf([&] { graph.GetOutput("x:1"); }).find("has 1 outputs"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { graph.GetOutput("x:-1"); }).find("does not exist"), std::string::npos);
}

TEST(GraphTest, ShapeErrorsNameTheNodeAndBothShapes) {
  Graph graph;
  Scope s(graph);
  auto a = Placeholder(s, kFloat32, {2, 3});
  auto b = Placeholder(s, kFloat32, {3, 2});
  std::string message = ErrorOf([&] { AddN(s.WithOpName("total"), {a, b}); });
  EXPECT_NE(message.find("AddN 'total'"), std::string::npos) << message;
  EXPECT_NE(message.find("[3,2]"), std::string::npos) << message;
  EXPECT_NE(message.find("[2,3]"), std::string::npos) << message;
  // The failed node was not added.
  EXPECT_EQ(graph.FindNode("total"), nullptr);
}

TEST(GraphTest, FinalizeForbidsNewNodes) {
  Graph graph;
  Scope s(graph);
  Identity(s, 1.0f);
  graph.Finalize();
  EXPECT_NE(ErrorOf([&] { Identity(s, 2.0f); }).find("finalized"), std::string::npos);
}

TEST(GraphTest, ControlDependenciesAndVariables) {
  Graph graph;
  Scope s(graph);
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({1, 2}));
  Variable step(s.WithOpName("step"), Tensor::Scalar<int64_t>(0), {.trainable = false});
  auto after = Identity(s.WithControlDependencies({w.initializer}), 1.0f);
  ASSERT_EQ(after.node->control_inputs().size(), 1u);
  EXPECT_EQ(after.node->control_inputs()[0]->name(), "w/Assign");
  EXPECT_EQ(graph.Variables().size(), 2u);
  ASSERT_EQ(graph.TrainableVariables().size(), 1u);
  EXPECT_EQ(graph.TrainableVariables()[0]->name(), "w");
  EXPECT_EQ(w.shape(), Shape({2}));
}

std::vector<std::string> ControlNames(const Output& o) {
  std::vector<std::string> names;
  for (const Node* n : o.node->control_inputs()) names.push_back(n->name());
  return names;
}

TEST(GraphTest, ControlDependencyBlocksReachEveryBuilder) {
  Graph graph;
  Scope s(graph);
  Output a = Identity(s.WithOpName("a"), 1.0f);
  Output b = Identity(s.WithOpName("b"), 2.0f);
  Output x, y, z, data, free, scoped;
  {
    Graph::ControlDependencies block(graph, {a.node});
    x = Const(s.WithOpName("x"), Tensor::Scalar<float>(3));
    {
      Graph::ControlDependencies inner(graph, {b.node});
      EXPECT_EQ(graph.CurrentControlDependencies(), (std::vector<Node*>{a.node, b.node}));
      y = Const(s.WithOpName("y"), Tensor::Scalar<float>(4));
      z = Identity(s.WithOpName("z"), y);        // dominated: y was built in both blocks
      data = Identity(s.WithOpName("data"), b);  // b is a data input: no control edge on it
      {
        Graph::ContextOverride outside(graph, nullptr);  // TF's init_scope
        free = Const(s.WithOpName("free"), Tensor::Scalar<float>(5));
        EXPECT_TRUE(graph.CurrentControlDependencies().empty());
      }
      // A Scope's own control dependencies join the block's, without repeats.
      scoped = Const(s.WithOpName("scoped").WithControlDependencies({a}), Tensor::Scalar<float>(6));
    }
  }
  Output after = Const(s.WithOpName("after"), Tensor::Scalar<float>(7));
  EXPECT_EQ(ControlNames(x), (std::vector<std::string>{"a"}));
  EXPECT_EQ(ControlNames(y), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ControlNames(z).empty());
  EXPECT_EQ(ControlNames(data), (std::vector<std::string>{"a"}));
  EXPECT_TRUE(ControlNames(free).empty());
  EXPECT_EQ(ControlNames(scoped), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(ControlNames(after).empty());
  EXPECT_TRUE(graph.CurrentControlDependencies().empty());
}

TEST(GraphTest, ControlDependenciesRejectForeignNodesAndSkipVariables) {
  Graph graph, other;
  Scope s(graph);
  Output foreign = Identity(Scope(other).WithOpName("foreign"), 1.0f);
  EXPECT_NE(ErrorOf([&] {
              graph.PushControlDependencies({foreign.node});
            }).find("belongs to another graph"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { graph.PopControlDependencies(); }, ErrorCode::kFailedPrecondition)
                .find("no open block"),
            std::string::npos);
  Output a = Identity(s.WithOpName("a"), 1.0f);
  Graph::ControlDependencies block(graph, {a.node});
  Variable v(s.WithOpName("v"), Tensor::Scalar<float>(1));
  EXPECT_TRUE(v.node->control_inputs().empty());
  EXPECT_TRUE(v.initializer.node->control_inputs().empty());
}

// Gradients (loom/autodiff) past a StopGradient: a node without a gradient beyond it (a
// Fill whose dims are the shape of x) is not on a path to x, as its error message advises.
TEST(GraphTest, GradientsStopAtAStopGradient) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, Shape({-1, 2}));
  Output dims = StopGradient(s, ShapeOf(s, x));
  Output zeros = Fill(s, dims, Tensor::Scalar<float>(0));
  std::vector<Output> g = Gradients(s, {Sum(s, Add(s, x, zeros), {})}, {x});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(g[0].valid());
  Output unstopped = Fill(s, ShapeOf(s, x), Tensor::Scalar<float>(0));
  EXPECT_NE(
      ErrorOf([&] { Gradients(s, {Sum(s, Add(s, x, unstopped), {})}, {x}); }).find("FillDynamic"),
      std::string::npos);
}

TEST(GraphTest, LiteralsTakeTheOtherOperandsDtype) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s, kFloat64, {2});
  auto [a, b] = AsOutputs(s, x, 2);
  EXPECT_EQ(b.dtype(), kFloat64);
  auto i = Placeholder(s, kInt32, {2});
  EXPECT_NE(ErrorOf([&] { AsOutputs(s, i, 0.5); }).find("fraction"), std::string::npos);
}

}  // namespace
}  // namespace loom
