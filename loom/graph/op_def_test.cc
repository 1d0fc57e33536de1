// The op record's declared signature: registration validates a record, node construction
// validates attributes against it, host objects are checked by type.
#include "loom/graph/op_def.h"

#include <gtest/gtest.h>

#include "loom/graph/graph_def.h"
#include "loom/graph/graph_def_proto.h"

namespace loom {
namespace {

inline constexpr Attr<bool> kFlag{"flag"};
inline constexpr Attr<int64_t> kCount{"count"};
inline constexpr Attr<std::string> kMode{"mode"};
inline constexpr Attr<std::vector<DType>> kTypes{"types"};
inline constexpr Attr<HostObject> kThing{"thing"};

// An op with one attribute of each declaration form; its output is a scalar int64 of
// `count` (+1 when `flag`).
OpDef SampleOp() {
  return {
      .name = "Sample",
      .num_inputs = 0,
      .attrs = {kFlag.Default(false), kCount.Required(), kMode.OneOf({"a", "b"}, "a"),
                kTypes.Default({}), kThing.Optional()},
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = [](InferenceContext& c) { c.set_output(0, kInt64, Shape{}); },
      .kernel =
          [](KernelContext& c) {
            c.set_output(0, Tensor::Scalar<int64_t>(c.attr(kCount) + (c.attr(kFlag) ? 1 : 0)));
          },
      .no_gradient = "test op",
  };
}

const OpDef& Sample() {
  static const OpDef op = SampleOp();
  return op;
}

std::string AddError(AttrMap attrs) {
  Graph graph;
  try {
    graph.AddNode(Sample(), "s", {}, std::move(attrs));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.message();
    return e.message();
  }
  return "<no error>";
}

TEST(OpDefTest, TypedKeysBuildEntriesAndReadDeclaredValues) {
  Graph graph;
  Node* n = graph.AddNode(Sample(), "s", {}, {kCount(3), kFlag(true)});
  EXPECT_EQ(n->attr(kCount), 3);
  EXPECT_TRUE(n->attr(kFlag));
  // Defaults are filled in at construction; an absent optional stays absent.
  EXPECT_EQ(n->attr(kMode), "a");
  EXPECT_TRUE(n->attr(kTypes).empty());
  EXPECT_EQ(n->find_attr(kThing), nullptr);
}

TEST(OpDefTest, UnknownAttributeNamesOpAttributeAndTheDeclaredOnes) {
  const std::string m = AddError({kCount(1), {"cuont", int64_t{1}}});
  EXPECT_NE(m.find("Sample 's'"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown attribute 'cuont'"), std::string::npos) << m;
  EXPECT_NE(m.find("flag, count, mode, types, thing"), std::string::npos) << m;
}

TEST(OpDefTest, MissingRequiredAttributeIsAnError) {
  const std::string m = AddError({kFlag(true)});
  EXPECT_NE(m.find("Sample 's': missing attribute 'count' (int)"), std::string::npos) << m;
}

TEST(OpDefTest, IllTypedAttributeIsAnError) {
  const std::string m = AddError({{"count", 1.5}});
  EXPECT_NE(m.find("attribute 'count' is declared int, got float 1.5"), std::string::npos) << m;
  EXPECT_NE(AddError({kCount(1), {"flag", int64_t{1}}}).find("declared bool, got int"),
            std::string::npos);
}

TEST(OpDefTest, ValueOutsideTheAllowedOnesIsAnError) {
  const std::string m = AddError({kCount(1), kMode("c")});
  EXPECT_NE(m.find("attribute 'mode' is \"c\"; allowed: \"a\", \"b\""), std::string::npos) << m;
  EXPECT_EQ(AddError({kCount(1), kMode("b")}), "<no error>");
}

TEST(OpDefTest, UnderscoreAnnotationsAreNotDeclared) {
  EXPECT_EQ(AddError({kCount(1), {"_initializer", true}}), "<no error>");
}

TEST(OpDefTest, AnEmptyListTakesTheDeclaredListKind) {
  // A GraphDef stores an empty list without its element kind; it reads back as list(int).
  AttrMap attrs = {kCount(1), {"types", std::vector<int64_t>{}}};
  CheckNodeAttrs(Sample(), "s", attrs);
  ASSERT_NE(attrs.Find<std::vector<DType>>("types"), nullptr);
  // A non-empty list of the wrong kind is still an error.
  EXPECT_NE(AddError({kCount(1), {"types", std::vector<int64_t>{1}}}).find("declared list(type)"),
            std::string::npos);
}

TEST(OpDefTest, RoundTripThroughGraphDefKeepsDeclaredAttributes) {
  Graph graph;
  graph.AddNode(Sample(), "s", {}, {kCount(7), kMode("b")});
  OpRegistry registry;
  registry.Register(Sample());
  Graph loaded;
  ImportGraphDef(ToGraphDef(graph), registry, loaded);
  Node* n = loaded.FindNode("s");
  EXPECT_EQ(n->attr(kCount), 7);
  EXPECT_EQ(n->attr(kMode), "b");
  EXPECT_TRUE(n->attr(kTypes).empty());
}

struct Widget {
  int value = 0;
};
struct Gadget {};

TEST(OpDefTest, HostObjectsAreCheckedByTypeNeverCastBlindly) {
  auto widget = std::make_shared<const Widget>(Widget{42});
  HostObject h = HostObject::Of(widget);
  EXPECT_EQ(h.As<Widget>("node").value, 42);
  try {
    h.As<Gadget>("Sample 's'");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("Sample 's': the host object attribute holds a "), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("Widget, expected a "), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("Gadget"), std::string::npos) << e.message();
  }
  EXPECT_THROW(HostObject().As<Widget>("n"), Error);
  // The node shares ownership; a serialized graph leaves the object out.
  Graph graph;
  graph.AddNode(Sample(), "s", {}, {kCount(1), kThing(h)});
  widget.reset();
  EXPECT_EQ(graph.FindNode("s")->attr(kThing).As<Widget>("s").value, 42);
  const proto::GraphDef def = ToGraphDef(graph);
  EXPECT_EQ(def.node(0).attr().count("thing"), 0u);
}

std::string ValidateError(const OpDef& op) {
  try {
    ValidateOpDef(op);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.message();
    return e.message();
  }
  return "<no error>";
}

TEST(OpDefTest, RegistrationValidatesTheRecord) {
  EXPECT_EQ(ValidateError(SampleOp()), "<no error>");
  auto with = [](auto change) {
    OpDef op = SampleOp();
    change(op);
    return ValidateError(op);
  };
  EXPECT_NE(with([](OpDef& op) { op.kernel = nullptr; }).find("'Sample': has no kernel"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) { op.no_gradient.clear(); }).find("neither a gradient"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) {
              op.attrs.push_back(kFlag.Default(true));
            }).find("'flag' is declared twice"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) {
              op.attrs.push_back({"_x", AttrType::kInt});
            }).find("do not start with '_'"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) {
              op.attrs.push_back({"n", AttrType::kInt, AttrValue(std::string("x"))});
            }).find("'n' (int) has a default of kind string"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) {
              op.attrs.push_back(Attr<std::string>{"other"}.OneOf({"a"}, "z"));
            }).find("the default \"z\" is not among the allowed values"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) {
              op.attrs.push_back({"h", AttrType::kHostObject});
            }).find("a host object is not serialized, so it is Optional()"),
            std::string::npos);
  EXPECT_NE(with([](OpDef& op) { op.ref_inputs = {0}; }).find("ref input 0"), std::string::npos);

  OpRegistry registry;
  registry.Register(Sample());
  registry.Register(Sample());  // the same record again is harmless
  static const OpDef other = SampleOp();
  EXPECT_THROW(registry.Register(other), Error);
  OpDef broken = SampleOp();
  broken.kernel = nullptr;
  EXPECT_THROW(OpRegistry().Register(broken), Error);
}

TEST(OpDefDeathTest, OutputCountDisagreeingWithTheShapeRuleIsOurBug) {
  static const OpDef op = [] {
    OpDef o = SampleOp();
    o.num_outputs = 2;
    return o;
  }();
  Graph graph;
  EXPECT_DEATH(graph.AddNode(op, "s", {}, {kCount(1)}), "declares 2 outputs; its shape rule set 1");
}

}  // namespace
}  // namespace loom
