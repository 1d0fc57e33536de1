// TF models run by Loom: TF Serving's half_plus_two SavedModel (TF 1.14) and tf2onnx's
// frozen MNIST MLP, against the evaluations in expected_tf.json; the unsupported-op error.
#include "loom/estimator/tf_saved_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "loom/estimator/estimator_test_util.h"
#include "loom/io/proto/graph.pb.h"

namespace loom {
namespace {

using nlohmann::json;

const std::string kTf = JoinPath(LOOM_SHARED_TESTDATA, "tf");

json Evaluations() {
  const std::string path = JoinPath(kTf, "expected_tf.json");
  if (!Env::Default()->FileExists(path)) {
    ADD_FAILURE() << "missing " << path;
    return json::array();
  }
  return json::parse(ReadFileToString(Env::Default(), path))["evaluations"];
}

Tensor FromJson2d(const json& rows) {
  const int64_t n = rows.size(), m = rows[0].size();
  Tensor t(kFloat32, {n, m});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) t.data<float>()[i * m + j] = rows[i][j].get<float>();
  }
  return t;
}

TEST(TfSavedModelTest, HalfPlusTwoSignatures) {
  auto model = LoadTFSavedModel(Env::Default(), JoinPath(kTf, "half_plus_two/00000123"));
  EXPECT_EQ(model->signatures().size(), 5u);
  EXPECT_EQ(model->signatures().at("serving_default").inputs.at("x").name, "x:0");
  // The tf.Example signatures need ParseExample, which Loom runs in its input pipeline,
  // not as a graph op: they are unavailable, saying so.
  ASSERT_EQ(model->unavailable().size(), 3u);
  EXPECT_NE(model->unavailable().at("classify_x_to_y").find("ParseExample x1"), std::string::npos)
      << model->unavailable().at("classify_x_to_y");
  try {
    model->Run("regress_x_to_y", {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(e.message().find("ParseExample"), std::string::npos) << e.what();
  }

  int checked = 0;
  for (const json& ev : Evaluations()) {
    if (ev["file"] != "half_plus_two/00000123/saved_model.pb") continue;
    const std::string signature = ev["target"];
    SCOPED_TRACE(signature);
    std::map<std::string, Tensor> inputs;
    for (const auto& [key, rows] : ev["feeds"].items()) inputs[key] = FromJson2d(rows);
    auto out = model->Run(signature, inputs);
    for (const auto& [key, want] : ev["outputs"].items()) {
      ASSERT_TRUE(out.count(key)) << key;
      // "exact in float32"
      EXPECT_TRUE(out.at(key).Equals(FromJson2d(want["values"]))) << out.at(key).DebugString();
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
  // y = 0.5 x + 2 for any batch size.
  auto y = model->Run("serving_default", {{"x", Tensor::FromVector<float>({-4, 10}, Shape{2, 1})}});
  EXPECT_TRUE(y.at("y").Equals(Tensor::FromVector<float>({0, 7}, Shape{2, 1})));
}

TEST(TfSavedModelTest, FrozenMnistMlpLogits) {
  auto model =
      TfModel::LoadFrozenGraph(Env::Default(), JoinPath(kTf, "tf2onnx_fc_layers/frozen.pb"),
                               {{"X", "X:0"}}, {{"logits", "output:0"}});
  int checked = 0;
  for (const json& ev : Evaluations()) {
    if (ev["file"] != "tf2onnx_fc_layers/frozen.pb") continue;
    const std::string feed = ev["feeds"]["X"];
    SCOPED_TRACE(feed);
    Tensor x = Tensor::Zeros(kFloat32, {1, 784});
    if (feed.starts_with("ramp")) {
      for (int i = 0; i < 784; ++i) x.data<float>()[i] = (i + 1) / 784.0f;
    } else {
      ASSERT_TRUE(feed.starts_with("zeros")) << feed;
    }
    const Tensor logits = model->Run("serving_default", {{"X", x}}).at("logits");
    const json& want = ev["outputs"]["output:0"];
    ASSERT_EQ(logits.shape(), Shape({1, 10}));
    int64_t argmax = 0;
    for (int j = 0; j < 10; ++j) {
      const double w = want["values"][0][j].get<double>();
      EXPECT_NEAR(logits.data<float>()[j], w, 1e-4 + 1e-4 * std::abs(w)) << j;
      if (logits.data<float>()[j] > logits.data<float>()[argmax]) argmax = j;
    }
    EXPECT_EQ(argmax, want["argmax"][0].get<int64_t>());
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(TfSavedModelTest, UnsupportedOpsAreListedWithCounts) {
  proto::GraphDef def;
  auto add = [&](const std::string& name, const std::string& op, std::vector<std::string> in) {
    proto::NodeDef* n = def.add_node();
    n->set_name(name);
    n->set_op(op);
    for (const auto& i : in) n->add_input(i);
    return n;
  };
  proto::NodeDef* x = add("x", "Placeholder", {});
  (*x->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
  add("e1", "Erf", {"x"});
  add("e2", "Erf", {"e1"});
  add("c", "Cumsum", {"e2", "x"});
  add("r", "Relu", {"c"});
  add("unused", "Lgamma", {"x"});  // not needed by the output: not reported
  estimator_testing::TempDir dir;
  const std::string path = dir.Join("g.pb");
  auto f = Env::Default()->NewWritableFile(path);
  f->Append(def.SerializeAsString());
  f->Close();
  try {
    TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "r:0"}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(e.message().find("unsupported TF ops: Cumsum x1, Erf x2)"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.message().find("Lgamma"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("MatMul"), std::string::npos) << e.what();  // the supported list
  }
}

}  // namespace
}  // namespace loom
