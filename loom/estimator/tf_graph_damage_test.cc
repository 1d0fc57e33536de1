// TF models that are damaged or fed badly: every case is a loom::Error naming the node,
// the input or the file and what to do, never a crash (fuzz_tf_saved_model found the
// damaged graphs here).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/tf_graph_test_util.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

// Bad feeds name the signature input: a misspelt key lists the inputs (it used to say only
// that 'x' was needed), a wrong shape is caught before the run (it used to name the internal
// placeholder '_tf_input/x' and "output KEY is fetched as _tf_output/KEY"); zero rows run.
TEST(TfSavedModelTest, BadFeedsNameTheSignatureInput) {
  auto model =
      LoadTFSavedModel(Env::Default(), JoinPath(LOOM_SHARED_TESTDATA, "tf/half_plus_two/00000123"));
  const Tensor column = Tensor::FromVector<float>({1, 2}, Shape{2, 1});
  std::string message = testing::ErrorOf(
      [&] {
        model->Run("serving_default", {{"y", column}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("signature 'serving_default' has no input 'y'; its inputs are x"),
            std::string::npos)
      << message;
  message = testing::ErrorOf(
      [&] {
        model->Run("serving_default", {{"x", Tensor::FromVector<float>({1, 2, 3})}});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("input 'x' (x:0) is float32[?,1], given a tensor of shape [3]"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("_tf_"), std::string::npos) << message;
  EXPECT_EQ(model->Run("serving_default", {{"x", Tensor::Zeros(kFloat32, {0, 1})}}).at("y").shape(),
            Shape({0, 1}));
}

// A frozen GraphDef that still reads a variable has no checkpoint to read it from: the error
// names the variable and says to freeze it (it used to name the missing variables/ of a
// SavedModel).
TEST(TfSavedModelTest, AGraphDefReadingAVariableSaysToFreezeIt) {
  tf_testing::GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  (*g.Add("w", "VariableV2")->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  g.Add("y", "Mul", {"x", "w"});
  estimator_testing::TempDir dir;
  const std::string path = g.Write(dir);
  const std::string message = testing::ErrorOf(
      [&] {
        TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "y:0"}});
      },
      ErrorCode::kNotFound);
  EXPECT_NE(message.find("TF GraphDef '" + path +
                         "' signature 'serving_default': it reads TF "
                         "variable 'w'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("freeze the variables into constants"), std::string::npos) << message;
  EXPECT_EQ(message.find("variables/variables.index"), std::string::npos) << message;
}

// Damaged GraphDefs (found by fuzz_tf_saved_model): a cycle through data or control inputs
// used to overflow the stack, a Const without its value and an ExpandDims with an empty axis
// threw protobuf's and the standard library's exceptions. Each is InvalidArgument naming the
// node.
TEST(TfSavedModelTest, DamagedGraphsAreInvalidArgumentNamingTheNode) {
  auto load = [](const std::function<void(proto::GraphDef&)>& build) {
    tf_testing::GraphBuilder g;
    g.Placeholder("x", proto::DT_FLOAT);
    build(g.def());
    estimator_testing::TempDir dir;
    const std::string path = g.Write(dir);
    return testing::ErrorOf(
        [&] {
          TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "y:0"}});
        },
        ErrorCode::kInvalidArgument);
  };
  auto node = [](proto::GraphDef& def, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs) {
    proto::NodeDef* n = tf_testing::AddNode(def, name, op, inputs);
    (*n->mutable_attr())["T"].set_type(proto::DT_FLOAT);
    return n;
  };
  std::string message = load([&](proto::GraphDef& def) {
    node(def, "y", "Add", {"x", "z"});
    node(def, "z", "Relu", {"y"});
  });
  EXPECT_NE(message.find("depends on itself through its inputs (a cycle"), std::string::npos)
      << message;
  message = load([&](proto::GraphDef& def) {
    node(def, "y", "Relu", {"x", "^w"});
    node(def, "w", "Identity", {"x", "^y"});
  });
  EXPECT_NE(message.find("a cycle"), std::string::npos) << message;
  // A chain far deeper than a stack of recursive calls would hold translates.
  {
    tf_testing::GraphBuilder g;
    g.Placeholder("x", proto::DT_FLOAT);
    std::string previous = "x";
    for (int i = 0; i < 30000; ++i) {
      const std::string name = i + 1 == 30000 ? "y" : StrCat("n", i);
      node(g.def(), name, "Identity", {previous});
      previous = name;
    }
    estimator_testing::TempDir dir;
    const std::string path = g.Write(dir);
    auto model = TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "y:0"}});
    EXPECT_TRUE(model->Run("serving_default", {{"x", Tensor::FromVector<float>({3}, {1})}})
                    .at("y")
                    .Equals(Tensor::FromVector<float>({3}, {1})));
  }
  message = load([&](proto::GraphDef& def) { node(def, "y", "Relu", {"x:99999999999"}); });
  EXPECT_NE(
      message.find("TF tensor name 'x:99999999999': output index 99999999999 is out of range"),
      std::string::npos)
      << message;
  message = load([&](proto::GraphDef& def) { node(def, "y", "Const", {}); });
  EXPECT_NE(message.find("TF Const node 'y' has no 'value' attribute"), std::string::npos)
      << message;
  // An ExpandDims whose axis constant is empty (its translation reads element 0 with .at).
  message = load([&](proto::GraphDef& def) {
    proto::NodeDef* axis = node(def, "axis", "Const", {});
    (*axis->mutable_attr())["dtype"].set_type(proto::DT_INT32);
    proto::TensorProto* value = (*axis->mutable_attr())["value"].mutable_tensor();
    value->set_dtype(proto::DT_INT32);
    value->mutable_tensor_shape()->add_dim()->set_size(0);
    node(def, "y", "ExpandDims", {"x", "axis"});
  });
  EXPECT_NE(message.find("TF node 'y' (ExpandDims) has inputs or attributes its op cannot take"),
            std::string::npos)
      << message;
  // A ConcatV2 without inputs (its translation took all inputs but the last: undefined
  // behaviour on none, found by the session-14 fuzzing) or with only its axis.
  for (const std::vector<std::string>& inputs :
       {std::vector<std::string>{}, std::vector<std::string>{"x"}}) {
    message = load([&](proto::GraphDef& def) { node(def, "y", "ConcatV2", inputs); });
    EXPECT_NE(message.find("TF node 'y' (ConcatV2) has " + std::to_string(inputs.size()) +
                           " inputs, needs at least 2"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace loom
