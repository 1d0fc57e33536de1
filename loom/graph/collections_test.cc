#include "loom/graph/collections.h"

#include <gtest/gtest.h>

#include "loom/graph/graph_def.h"
#include "loom/graph/graph_def_proto.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

constexpr CollectionKey<Output> kLosses{"losses"};
constexpr CollectionKey<Operation> kLossesAsOps{"losses"};

TEST(CollectionsTest, KeysReturnTheirItemsTypedInOrder) {
  Graph graph;
  Scope s(graph);
  Output a = Placeholder(s.WithOpName("a"), kFloat32, {});
  Output b = Placeholder(s.WithOpName("b"), kFloat32, {});
  Variable v(s.WithOpName("v"), Tensor::Scalar<int64_t>(0), {.trainable = false});
  Operation noop = NoOp(s.WithOpName("noop"));

  EXPECT_TRUE(graph.collections().Get(kLosses).empty());
  graph.collections().Add(kLosses, b);
  graph.collections().Add(kLosses, a);
  graph.collections().Add(kLosses, b);  // already there: not added again
  graph.collections().Add(GraphKeys::kUpdateOps, noop);
  graph.collections().Add(GraphKeys::kGlobalStep, VariableRef{v, v.initializer});

  EXPECT_EQ(graph.collections().Get(kLosses), (std::vector<Output>{b, a}));
  ASSERT_EQ(graph.collections().Get(GraphKeys::kUpdateOps).size(), 1u);
  EXPECT_EQ(graph.collections().Get(GraphKeys::kUpdateOps)[0].node, noop.node);
  const auto steps = graph.collections().Get(GraphKeys::kGlobalStep);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].variable, Output(v));
  EXPECT_EQ(steps[0].initializer.node, v.initializer.node);
}

TEST(CollectionsTest, WrongKindsForeignNodesAndFinalizedGraphsAreErrors) {
  Graph graph, other;
  Scope s(graph);
  Output a = Placeholder(s.WithOpName("a"), kFloat32, {});
  Output foreign = Placeholder(Scope(other).WithOpName("f"), kFloat32, {});
  graph.collections().Add(kLosses, a);
  // The same name read or written as another kind.
  EXPECT_THROW(graph.collections().Get(kLossesAsOps), Error);
  EXPECT_THROW(graph.collections().Add(kLossesAsOps, Operation(a)), Error);
  EXPECT_THROW(graph.collections().Add(kLosses, foreign), Error);
  EXPECT_THROW(graph.collections().Add(kLosses, Output()), Error);
  // A VariableRef needs a variable and its initializer.
  EXPECT_THROW(graph.collections().Add(GraphKeys::kGlobalStep, VariableRef{a, Operation(a)}),
               Error);
  graph.Finalize();
  try {
    graph.collections().Add(kLosses, a);
    FAIL() << "added to a finalized graph";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(e.message().find("'losses'"), std::string::npos) << e.message();
  }
}

TEST(CollectionsTest, CollectionsSurviveAGraphDefRoundTrip) {
  Graph graph;
  Scope s(graph);
  Output a = Placeholder(s.WithOpName("a"), kFloat32, {});
  Output b = Identity(s.WithOpName("b"), a);
  Variable v(s.WithOpName("step"), Tensor::Scalar<int64_t>(0), {.trainable = false});
  Operation group = NoOp(s.WithOpName("group"));
  graph.collections().Add(kLosses, b);
  graph.collections().Add(kLosses, a);
  graph.collections().Add(GraphKeys::kUpdateOps, group);
  graph.collections().Add(GraphKeys::kGlobalStep, VariableRef{v, v.initializer});

  auto env = NewMemEnv();
  ExportGraph(graph, env.get(), "/g.pb");
  OpRegistry registry;
  RegisterStateOps(registry);
  RegisterGradSupportOps(registry);
  Graph loaded;
  ImportGraph(env.get(), "/g.pb", registry, loaded);

  const auto losses = loaded.collections().Get(kLosses);
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(losses[0].name(), "b:0");
  EXPECT_EQ(losses[1].name(), "a:0");
  const auto updates = loaded.collections().Get(GraphKeys::kUpdateOps);
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].name(), "group");
  const auto steps = loaded.collections().Get(GraphKeys::kGlobalStep);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].variable.node, loaded.FindNode("step"));
  EXPECT_EQ(steps[0].initializer.node, loaded.FindNode(v.initializer.name()));
  // Writing the loaded graph again gives the same bytes.
  EXPECT_EQ(SerializeGraphDef(ToGraphDef(graph)), SerializeGraphDef(ToGraphDef(loaded)));
}

// GlobalVariablesInitializer / LocalVariablesInitializer follow the variables
// collections, not marker attributes: a graph read from a file whose Assigns lost their
// "_initializer" mark still initializes every variable it declares.
TEST(CollectionsTest, VariablesInitializersFollowTheVariablesCollections) {
  Graph graph;
  Scope s(graph);
  Variable w(s.WithOpName("w"), Tensor::Scalar<float>(2.0f));
  Variable counter(s.WithOpName("counter"), Tensor::Scalar<float>(3.0f), {.local = true});
  const auto globals = graph.collections().Get(GraphKeys::kGlobalVariables);
  ASSERT_EQ(globals.size(), 1u);
  EXPECT_EQ(globals[0].variable.node, w.node);
  EXPECT_EQ(globals[0].initializer.node, w.initializer.node);
  const auto locals = graph.collections().Get(GraphKeys::kLocalVariables);
  ASSERT_EQ(locals.size(), 1u);
  EXPECT_EQ(locals[0].variable.node, counter.node);

  proto::GraphDef def = ToGraphDef(graph);
  for (proto::NodeDef& node : *def.mutable_node()) node.mutable_attr()->erase("_initializer");
  OpRegistry registry;
  RegisterStateOps(registry);
  RegisterGradSupportOps(registry);
  Graph loaded;
  ImportGraphDef(def, registry, loaded);
  Scope ls(loaded);
  const Operation init = GlobalVariablesInitializer(ls);
  const Operation init_local = LocalVariablesInitializer(ls);
  Session session(loaded);
  session.RunTarget(init);
  EXPECT_EQ(session.Eval(loaded.GetOutput("w")).data<float>()[0], 2.0f);
  // The global initializer leaves the local variable alone; the local one sets it.
  EXPECT_THROW(session.Eval(loaded.GetOutput("counter")), Error);
  session.RunTarget(init_local);
  EXPECT_EQ(session.Eval(loaded.GetOutput("counter")).data<float>()[0], 3.0f);
}

TEST(CollectionsTest, AFileNamingAMissingNodeIsAnError) {
  Graph graph;
  Scope s(graph);
  graph.collections().Add(kLosses, Placeholder(s.WithOpName("a"), kFloat32, {}));
  proto::GraphDef def = ToGraphDef(graph);
  def.mutable_loom_collections(0)->mutable_member(0)->set_node("gone");
  OpRegistry registry;
  RegisterStateOps(registry);
  Graph loaded;
  try {
    ImportGraphDef(def, registry, loaded);
    FAIL() << "imported a collection naming a missing node";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(e.message().find("'gone'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace loom
