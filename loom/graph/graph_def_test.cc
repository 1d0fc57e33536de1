#include "loom/graph/graph_def.h"

// The public header exposes no protobuf type: it includes no protobuf header (which all
// define GOOGLE_PROTOBUF_VERSION), so a program using it needs no protobuf of its own.
#ifdef GOOGLE_PROTOBUF_VERSION
#error "loom/graph/graph_def.h includes a protobuf header"
#endif

#include <gtest/gtest.h>

#include "loom/graph/graph_def_proto.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"

namespace loom {
namespace {

OpRegistry TestRegistry() {
  OpRegistry registry;
  RegisterStateOps(registry);
  RegisterGradSupportOps(registry);
  return registry;
}

TEST(GraphDefTest, RoundTripKeepsStructureAttributesAndResults) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({1, 2}, {1, 2}), {.trainable = false});
  AddN(s.WithOpName("y"), {x, w, Identity(s.WithControlDependencies({w.initializer}), x)});
  proto::GraphDef def = ToGraphDef(graph);

  Graph loaded;
  ImportGraphDef(def, TestRegistry(), loaded);
  ASSERT_EQ(loaded.num_nodes(), graph.num_nodes());
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* a = graph.node(id);
    const Node* b = loaded.node(id);
    EXPECT_EQ(a->name(), b->name());
    EXPECT_EQ(a->op(), b->op());
    EXPECT_EQ(a->num_inputs(), b->num_inputs());
    EXPECT_EQ(a->control_inputs().size(), b->control_inputs().size());
    for (int o = 0; o < a->num_outputs(); ++o) EXPECT_EQ(a->output_shape(o), b->output_shape(o));
  }
  EXPECT_FALSE(loaded.FindNode("w")->attr<bool>("trainable"));
  // Serializing the loaded graph gives the same bytes.
  EXPECT_EQ(SerializeGraphDef(def), SerializeGraphDef(ToGraphDef(loaded)));

  Session session(loaded);
  session.RunTarget(loaded.FindNode("w/Assign"));
  Tensor out = session.Eval(loaded.GetOutput("y"),
                            {{loaded.GetOutput("x"), Tensor::FromVector<float>({1, 1}, {1, 2})}});
  EXPECT_EQ(out.flat<float>()[0], 3);
  EXPECT_EQ(out.flat<float>()[1], 4);
}

// The public, Loom-typed API (bytes in, bytes out) is the proto API plus the encoding.
TEST(GraphDefTest, SerializedGraphRoundTripsWithoutProtoTypes) {
  Graph graph;
  Scope s(graph);
  auto x = Placeholder(s.WithOpName("x"), kFloat32, {-1, 2});
  Variable w(s.WithOpName("w"), Tensor::FromVector<float>({1, 2}, {1, 2}));
  AddN(s.WithOpName("y"), {x, w});
  const std::string bytes = SerializeGraph(graph);
  EXPECT_EQ(bytes, SerializeGraphDef(ToGraphDef(graph)));

  Graph loaded;
  ImportSerializedGraph(bytes, TestRegistry(), loaded);
  ASSERT_EQ(loaded.num_nodes(), graph.num_nodes());
  EXPECT_EQ(SerializeGraph(loaded), bytes);
  EXPECT_EQ(loaded.GetOutput("y").shape(), graph.GetOutput("y").shape());

  const std::string text = GraphToText(graph);
  EXPECT_NE(text.find("name: \"w/Assign\""), std::string::npos) << text;
  EXPECT_NE(text.find("op: \"AddN\""), std::string::npos) << text;

  Graph bad;
  try {
    ImportSerializedGraph("\xff\xff not a graph", TestRegistry(), bad);
    FAIL() << "garbage parsed as a GraphDef";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(e.message().find("not a GraphDef"), std::string::npos) << e.message();
  }
}

TEST(GraphDefTest, LargeConstantsGoToTheSidecarNotTheGraph) {
  auto env = NewMemEnv();
  auto build = [](Graph& graph, int64_t n) {
    Scope s(graph);
    Tensor big = Tensor::Zeros(kFloat32, {n});
    big.flat<float>()[n - 1] = 42;
    Identity(s.WithOpName("out"), Const(s.WithOpName("table"), big));
  };
  GraphExportOptions options{.inline_constant_bytes = 1024};
  Graph small, large;
  build(small, 1000);
  build(large, 100000);
  ExportGraph(small, env.get(), "small.pb", options);
  ExportGraph(large, env.get(), "large.pb", options);
  // Same structure, so the same graph size (up to the varint of the dim), though the
  // data differ 100x.
  EXPECT_NEAR(double(env->GetFileSize("small.pb")), double(env->GetFileSize("large.pb")), 8);
  EXPECT_LT(env->GetFileSize("large.pb"), 1024u);
  EXPECT_TRUE(env->FileExists(GraphSidecarPath("large.pb")));

  Graph loaded;
  ImportGraph(env.get(), "large.pb", TestRegistry(), loaded);
  Session session(loaded);
  Tensor out = session.Eval(loaded.GetOutput("out"));
  EXPECT_EQ(out.NumElements(), 100000);
  EXPECT_EQ(out.flat<float>()[99999], 42);
}

TEST(GraphDefTest, UnknownOpsAndMissingInputsAreClearErrors) {
  proto::GraphDef def;
  auto* n = def.add_node();
  n->set_name("a");
  n->set_op("NoSuchOp");
  Graph graph;
  try {
    ImportGraphDef(def, TestRegistry(), graph);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(e.message().find("NoSuchOp"), std::string::npos);
  }
  n->set_op("Identity");
  n->add_input("missing:0");
  try {
    ImportGraphDef(def, TestRegistry(), graph);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("missing"), std::string::npos) << e.message();
  }
}

// A Const node whose value attr declares `dims` of `dtype`, with `fill` run on the proto.
proto::GraphDef ConstGraph(proto::DataType dtype, std::vector<int64_t> dims,
                           const std::function<void(proto::TensorProto*)>& fill) {
  proto::GraphDef def;
  auto* n = def.add_node();
  n->set_name("c");
  n->set_op("Const");
  proto::TensorProto* t = (*n->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(dtype);
  for (int64_t d : dims) t->mutable_tensor_shape()->add_dim()->set_size(d);
  fill(t);
  return def;
}

std::string ImportError(const proto::GraphDef& def) {
  Graph graph;
  try {
    ImportGraphDef(def, TestRegistry(), graph);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(e.message().find("node 'c'"), std::string::npos) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "imported";
  return "";
}

// The declared size is checked against the content before anything is allocated: a
// 50-byte GraphDef used to allocate 3.2 GB (one float_val filling [1e8, 8]) and one
// declaring 2^40 elements with 4 content bytes asked for 4 TiB before comparing.
TEST(GraphDefTest, TensorAttributesAreCheckedBeforeAllocating) {
  const auto float_dtype = static_cast<proto::DataType>(static_cast<int>(kFloat32));
  const auto string_dtype = static_cast<proto::DataType>(static_cast<int>(kString));
  const proto::GraphDef filled =
      ConstGraph(float_dtype, {100000000, 8}, [](proto::TensorProto* t) { t->add_float_val(1); });
  EXPECT_LT(filled.ByteSizeLong(), 60u);
  EXPECT_NE(ImportError(filled).find("fills at most"), std::string::npos);
  EXPECT_NE(ImportError(ConstGraph(float_dtype, {int64_t{1} << 40}, [](proto::TensorProto*) {}))
                .find("fills at most"),
            std::string::npos);
  EXPECT_NE(
      ImportError(ConstGraph(string_dtype, {int64_t{1} << 40},
                             // a moved std::string: add_string_val(const char*) trips g++ 12's
                             // -Wrestrict false positive (GCC bug 105651)
                             [](proto::TensorProto* t) { t->add_string_val(std::string(1, 's')); }))
          .find("fills at most"),
      std::string::npos);
  EXPECT_NE(ImportError(ConstGraph(float_dtype, {int64_t{1} << 40},
                                   [](proto::TensorProto* t) { t->set_tensor_content("abcd"); }))
                .find("tensor_content has 4 bytes"),
            std::string::npos);
  // Shapes whose element count overflows, a zero dim notwithstanding.
  EXPECT_NE(ImportError(ConstGraph(float_dtype, {int64_t{1} << 32, int64_t{1} << 32, 0},
                                   [](proto::TensorProto*) {}))
                .find("more elements"),
            std::string::npos);
  // Small filled values still work, as TF writes them.
  Graph graph;
  ImportGraphDef(
      ConstGraph(float_dtype, {2, 3}, [](proto::TensorProto* t) { t->add_float_val(2); }),
      TestRegistry(), graph);
  const Tensor& value = graph.FindNode("c")->attrs().Get<Tensor>("value");
  EXPECT_EQ(value.shape(), (Shape{2, 3}));
  EXPECT_EQ(value.flat<float>()[5], 2.0f);
}

// Input names come from the file: a bad output index is an InvalidArgument naming the node,
// not a std::invalid_argument escaping from std::stoi.
TEST(GraphDefTest, BadInputIndicesAreLoomErrors) {
  for (const char* input : {"c:abc", "c:99999999999"}) {
    proto::GraphDef def = ConstGraph(static_cast<proto::DataType>(static_cast<int>(kFloat32)), {},
                                     [](proto::TensorProto* t) { t->add_float_val(1); });
    auto* n = def.add_node();
    n->set_name("id");
    n->set_op("Identity");
    n->add_input(input);
    Graph graph;
    try {
      ImportGraphDef(def, TestRegistry(), graph);
      ADD_FAILURE() << input;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(e.message().find("node 'id'"), std::string::npos) << e.message();
    }
  }
}

}  // namespace
}  // namespace loom
