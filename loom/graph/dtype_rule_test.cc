// Output dtype rules: registration checks them against the record, Graph::AddNode checks
// the shape rule against them (naming the node and the rule), and a shape rule may take an
// output's dtype from them.
#include "loom/graph/dtype_rule.h"

#include <gtest/gtest.h>

#include "loom/graph/op_def.h"

namespace loom {
namespace {

inline constexpr Attr<DType> kOutType{"out_type"};
inline constexpr Attr<std::vector<DType>> kOutTypes{"out_types"};
inline constexpr Attr<Tensor> kValue{"value"};

// Passes input 0 through; its shape rule sets the dtype the test asks for, so a rule that
// disagrees can be built on purpose.
OpDef PassOp(std::vector<DTypeRule> rules, DType shape_rule_dtype = DType::kInvalid) {
  return {
      .name = "Pass",
      .num_inputs = 2,
      .attrs = {kOutType.Default(kInt32)},
      .output_dtypes = std::move(rules),
      .shape =
          [shape_rule_dtype](InferenceContext& c) {
            if (shape_rule_dtype == DType::kInvalid) {
              c.set_output_shape(0, c.input_shape(0));
            } else {
              c.set_output(0, shape_rule_dtype, c.input_shape(0));
            }
          },
      .kernel = [](KernelContext& c) { c.set_output(0, c.input(0)); },
      .no_gradient = "test op",
  };
}

std::vector<Output> TwoInputs(Graph& graph) {
  Scope root(graph);
  return {Const(root.WithOpName("f"), Tensor::Scalar<float>(1)),
          Const(root.WithOpName("d"), Tensor::Scalar<double>(1))};
}

TEST(DTypeRuleTest, AShapeRuleDisagreeingWithTheRecordsRuleNamesTheNodeAndTheRule) {
  static const OpDef op = PassOp({DTypeRule::SameAsInput(1)}, kFloat32);
  Graph graph;
  try {
    graph.AddNode(op, "mixed", TwoInputs(graph), {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("Pass 'mixed': output 0 has dtype float32, but the record's rule "
                               "says same as input 1 (float64)"),
              std::string::npos)
        << e.message();
  }
  // Agreeing: no error.
  static const OpDef agreeing = PassOp({DTypeRule::SameAsInput(0)}, kFloat32);
  Graph ok;
  EXPECT_EQ(ok.AddNode(agreeing, "p", TwoInputs(ok), {})->output_dtype(0), kFloat32);
}

TEST(DTypeRuleTest, SetOutputShapeTakesTheDTypeFromTheRule) {
  struct Case {
    DTypeRule rule;
    DType want;
  };
  for (const Case& c :
       {Case{DTypeRule::SameAsInput(1), kFloat64}, Case{DTypeRule::Fixed(kBool), kBool},
        Case{DTypeRule::FromAttr(kOutType), kInt32}}) {
    const OpDef op = PassOp({c.rule});
    Graph graph;
    Node* n = graph.AddNode(op, "p", TwoInputs(graph), {});
    EXPECT_EQ(n->output_dtype(0), c.want) << c.rule.ToString();
  }
  // The attribute's value, not its default, when the builder sets it.
  const OpDef op = PassOp({DTypeRule::FromAttr(kOutType)});
  Graph graph;
  EXPECT_EQ(graph.AddNode(op, "p", TwoInputs(graph), {kOutType(kInt64)})->output_dtype(0), kInt64);
}

TEST(DTypeRuleTest, ResolvesListEntriesEachInputAndTensorAttributes) {
  static const OpDef many = {
      .name = "Many",
      .num_inputs = kVariadic,
      .attrs = {kOutTypes.Required(), kValue.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::FromAttrList(kOutTypes)},
      .shape =
          [](InferenceContext& c) {
            for (int i = 0; i < static_cast<int>(c.attr(kOutTypes).size()); ++i) {
              c.set_output_shape(i, Shape{});
            }
          },
      .kernel = [](KernelContext&) {},
      .no_gradient = "test op",
  };
  Graph graph;
  Node* n = graph.AddNode(many, "m", TwoInputs(graph),
                          {kOutTypes({kString, kInt64}), kValue(Tensor::Scalar<bool>(true))});
  ASSERT_EQ(n->num_outputs(), 2);
  EXPECT_EQ(n->output_dtype(0), kString);
  EXPECT_EQ(n->output_dtype(1), kInt64);
  EXPECT_EQ(DTypeRule::SameAsEachInput().Resolve(*n, 1), kFloat64);
  EXPECT_EQ(DTypeRule::FromTensorAttr(kValue).Resolve(*n, 0), kBool);
  EXPECT_EQ(DTypeRule::ByShapeRule("somehow").Resolve(*n, 0), DType::kInvalid);
}

std::string ValidationMessage(const OpDef& op) {
  try {
    ValidateOpDef(op);
  } catch (const Error& e) {
    return e.message();
  }
  return "<no error>";
}

TEST(DTypeRuleTest, RegistrationRequiresARulePerOutputThatNamesWhatTheOpHas) {
  EXPECT_EQ(ValidationMessage(PassOp({DTypeRule::SameAsInput(0)})), "<no error>");
  EXPECT_NE(ValidationMessage(PassOp({})).find("'Pass': declares no output dtype rules"),
            std::string::npos);
  EXPECT_NE(ValidationMessage(PassOp({DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(0)}))
                .find("has 1 outputs and 2 output dtype rules"),
            std::string::npos);
  EXPECT_NE(ValidationMessage(PassOp({DTypeRule::SameAsInput(2)}))
                .find("(same as input 2) names an input the op, with 2 inputs, does not have"),
            std::string::npos);
  EXPECT_NE(ValidationMessage(PassOp({DTypeRule::FromAttr(Attr<DType>{"missing"})}))
                .find("needs a declared type attribute 'missing'"),
            std::string::npos);
  EXPECT_NE(ValidationMessage(PassOp({DTypeRule::FromAttrList(kOutTypes)}))
                .find("needs a declared list(type) attribute 'out_types'"),
            std::string::npos);
  EXPECT_NE(ValidationMessage(PassOp({DTypeRule::ByShapeRule("")})).find("without saying how"),
            std::string::npos);
  OpDef both = PassOp({DTypeRule::SameAsInput(0)});
  both.sample = [] { return OpSample{}; };
  both.not_swept = "reason";
  EXPECT_NE(ValidationMessage(both).find("both a sweep sample and a not_swept reason"),
            std::string::npos);
}

TEST(DTypeRuleTest, ToStringSaysTheRule) {
  EXPECT_EQ(DTypeRule::SameAsInput(1).ToString(), "same as input 1");
  EXPECT_EQ(DTypeRule::Fixed(kInt64).ToString(), "int64");
  EXPECT_EQ(DTypeRule::FromAttr(kOutType).ToString(), "attribute out_type");
  EXPECT_EQ(DTypeRule::FromAttrList(kOutTypes).ToString(), "entry i of attribute out_types");
}

TEST(OpSampleTest, SampleDoublesAreDeterministicAndInRange) {
  const Tensor a = SampleDoubles({2, 3}, 7), b = SampleDoubles({2, 3}, 7);
  ASSERT_EQ(a.shape(), (Shape{2, 3}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(a.data<double>()[i], b.data<double>()[i]);
    EXPECT_GE(a.data<double>()[i], 0.5);
    EXPECT_LT(a.data<double>()[i], 1.5);
  }
  EXPECT_NE(SampleDoubles({1}, 1).data<double>()[0], SampleDoubles({1}, 2).data<double>()[0]);
}

}  // namespace
}  // namespace loom
