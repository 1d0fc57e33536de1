// TF models run by Loom: TF Serving's half_plus_two SavedModel (TF 1.14) and tf2onnx's
// frozen MNIST MLP, against the evaluations in expected_tf.json; the unsupported-op error.
#include "loom/estimator/tf_saved_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/tf_graph_test_util.h"
#include "loom/estimator/tf_inputs.h"
#include "loom/io/example_builder.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/io/proto/saved_model.pb.h"
#include "loom/io/tf_checkpoint_test_util.h"

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
  // Every signature runs, the tf.Example ones through ParseExample (dense features).
  EXPECT_TRUE(model->unavailable().empty());
  Tensor examples(kString, {3});
  const std::vector<float> xs = {1, 2, 5};
  for (int i = 0; i < 3; ++i) {
    examples.data<std::string>()[i] = ExampleBuilder().AddFloats("x", {xs[i]}).Serialize();
  }
  const Tensor want_y = Tensor::FromVector<float>({2.5f, 3, 4.5f}, Shape{3, 1});
  EXPECT_TRUE(model->Run("classify_x_to_y", {{"inputs", examples}}).at("scores").Equals(want_y));
  EXPECT_TRUE(model->Run("regress_x_to_y", {{"inputs", examples}}).at("outputs").Equals(want_y));
  // y2 = a2 x + c2 with a2 = 0.5, c2 = 3.
  EXPECT_TRUE(model->Run("regress_x_to_y2", {{"inputs", examples}})
                  .at("outputs")
                  .Equals(Tensor::FromVector<float>({3.5f, 4, 5.5f}, Shape{3, 1})));
  // A record without "x" (no default in the graph) names the feature.
  examples.data<std::string>()[1] = ExampleBuilder().AddFloats("z", {1}).Serialize();
  try {
    model->Run("classify_x_to_y", {{"inputs", examples}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'x'"), std::string::npos) << e.what();
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
  // Without named inputs, the placeholders the outputs need are the inputs.
  auto by_placeholder = TfModel::LoadFrozenGraph(
      Env::Default(), JoinPath(kTf, "tf2onnx_fc_layers/frozen.pb"), {}, {{"logits", "output:0"}});
  const auto& inputs = by_placeholder->signatures().at("serving_default").inputs;
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs.at("X").name, "X:0");
  EXPECT_EQ(inputs.at("X").shape, Shape({-1, 784}));
}

using tf_testing::GraphBuilder;

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return {t.flat<T>().begin(), t.flat<T>().end()};
}

// The array and reduction rules, each checked against values worked out by hand.
TEST(TfGraphOpsTest, ArrayAndReductionOps) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);  // [[1, 2, 3], [4, 5, 6]]
  g.Ints("shape32", {3, 2}, {2});
  g.Add("r", "Reshape", {"x", "shape32"});  // [[1, 2], [3, 4], [5, 6]]
  (*g.Add("sh", "Shape", {"r"})->mutable_attr())["out_type"].set_type(proto::DT_INT32);
  g.Ints("b", {1, 0}, {2});
  g.Ints("e", {3, 2}, {2});
  g.Ints("st", {1, 1}, {2});
  g.Add("ss", "StridedSlice", {"r", "b", "e", "st"});  // [[3, 4], [5, 6]]
  g.Ints("b0", {0}, {1});
  g.Ints("e1", {1}, {1});
  g.Ints("s1", {1}, {1});
  (*g.Add("rows", "StridedSlice", {"sh", "b0", "e1", "s1"})->mutable_attr())["shrink_axis_mask"]
      .set_i(1);
  g.Ints("zero", {0}, {});
  g.Add("ex", "ExpandDims", {"ss", "zero"});  // [1, 2, 2]
  GraphBuilder::SetInts(g.Add("sq", "Squeeze", {"ex"}), "squeeze_dims", {0});
  (*g.Add("pk", "Pack", {"sq", "ss"})->mutable_attr())["axis"].set_i(1);  // [2, 2, 2]
  g.Add("cat", "ConcatV2", {"ss", "sq", "zero"});                         // [4, 2]
  g.Ints("axis0", {0}, {1});
  g.Add("mean", "Mean", {"cat", "axis0"});  // [4, 5]
  g.Ints("axis1", {1}, {1});
  (*g.Add("sum", "Sum", {"x", "axis1"})->mutable_attr())["keep_dims"].set_b(true);  // [[6], [15]]
  g.Ints("one", {1}, {});
  g.Add("am", "ArgMax", {"x", "one"});
  (*g.Add("amf", "Cast", {"am"})->mutable_attr())["DstT"].set_type(proto::DT_FLOAT);
  g.Floats("two", {2.f}, {});
  g.Add("mx", "Maximum", {"x", "two"});
  g.Add("sub", "Sub", {"x", "two"});
  g.Add("div", "RealDiv", {"sub", "mx"});  // (x - 2) / max(x, 2)
  // Python's // and % (TF's FloorDiv, FloorMod) against C's truncation (TruncateDiv).
  g.Add("fdiv", "FloorDiv", {"sub", "two"});  // floor([-1, 0, 1, 2, 3, 4] / 2)
  g.Add("fmod", "FloorMod", {"sub", "two"});
  g.Ints("minus2", {-2}, {});
  g.Add("ifdiv", "FloorDiv", {"sh", "minus2"});     // [3, 2] // -2
  g.Add("itdiv", "TruncateDiv", {"sh", "minus2"});  // trunc([3, 2] / -2)
  g.Add("imod", "FloorMod", {"sh", "minus2"});
  g.Ints("r0", {0}, {});
  g.Ints("r1", {1}, {});
  g.Add("rng", "Range", {"r0", "rows", "r1"});  // [0, 1, 2]: rows is 3, computed
  (*g.Add("csum", "Cumsum", {"x", "one"})->mutable_attr())["exclusive"].set_b(true);
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"x", "x:0"}},
                                        {{"r", "r"},
                                         {"sh", "sh"},
                                         {"rows", "rows"},
                                         {"pk", "pk"},
                                         {"cat", "cat"},
                                         {"mean", "mean"},
                                         {"sum", "sum"},
                                         {"am", "amf"},
                                         {"div", "div"},
                                         {"fdiv", "fdiv"},
                                         {"fmod", "fmod"},
                                         {"ifdiv", "ifdiv"},
                                         {"itdiv", "itdiv"},
                                         {"imod", "imod"},
                                         {"rng", "rng"},
                                         {"csum", "csum"}});
  auto out = model->Run("serving_default",
                        {{"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3})}});
  EXPECT_EQ(out["r"].shape(), Shape({3, 2}));
  EXPECT_EQ(out["sh"].dtype(), kInt32);
  EXPECT_EQ(Values<int32_t>(out["sh"]), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(out["rows"].shape(), Shape({}));
  EXPECT_EQ(out["rows"].scalar<int32_t>(), 3);
  EXPECT_EQ(out["pk"].shape(), Shape({2, 2, 2}));
  EXPECT_EQ(Values<float>(out["pk"]), (std::vector<float>{3, 4, 3, 4, 5, 6, 5, 6}));
  EXPECT_EQ(out["cat"].shape(), Shape({4, 2}));
  EXPECT_EQ(Values<float>(out["mean"]), (std::vector<float>{4, 5}));
  EXPECT_EQ(out["sum"].shape(), Shape({2, 1}));
  EXPECT_EQ(Values<float>(out["sum"]), (std::vector<float>{6, 15}));
  EXPECT_EQ(Values<float>(out["am"]), (std::vector<float>{2, 2}));
  EXPECT_EQ(Values<float>(out["div"]),
            (std::vector<float>{-0.5f, 0, 1.f / 3, 0.5f, 0.6f, 4.f / 6}));
  EXPECT_EQ(Values<float>(out["fdiv"]), (std::vector<float>{-1, 0, 0, 1, 1, 2}));
  EXPECT_EQ(Values<float>(out["fmod"]), (std::vector<float>{1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(Values<int32_t>(out["ifdiv"]), (std::vector<int32_t>{-2, -1}));
  EXPECT_EQ(Values<int32_t>(out["itdiv"]), (std::vector<int32_t>{-1, -1}));
  EXPECT_EQ(Values<int32_t>(out["imod"]), (std::vector<int32_t>{-1, 0}));
  EXPECT_EQ(Values<int32_t>(out["rng"]), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(Values<float>(out["csum"]), (std::vector<float>{0, 1, 3, 0, 4, 9}));
}

// TopKV2's two outputs (values, int32 indices), k a constant input; ties keep the lower
// index first (TF's documented order). And TF1's TopK, k an attribute, and Where.
TEST(TfGraphOpsTest, TopKValuesAndIndices) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);  // [[1, 3, 2, 3], [5, 4, 6, 0]]
  g.Ints("k", {2}, {});
  g.Add("top", "TopKV2", {"x", "k"});
  (*g.Add("top1", "TopK", {"x"})->mutable_attr())["k"].set_i(1);
  g.Floats("half", {2.5f}, {});
  g.Add("big", "Greater", {"x", "half"});
  g.Add("where", "Where", {"big"});  // tf.where(x > 2.5): coordinates
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(
      Env::Default(), g.Write(dir), {{"x", "x:0"}},
      {{"values", "top"}, {"indices", "top:1"}, {"best", "top1:1"}, {"where", "where"}});
  auto out = model->Run("serving_default",
                        {{"x", Tensor::FromVector<float>({1, 3, 2, 3, 5, 4, 6, 0}, Shape{2, 4})}});
  EXPECT_EQ(Values<float>(out["values"]), (std::vector<float>{3, 3, 6, 5}));
  EXPECT_EQ(out["indices"].dtype(), kInt32);
  EXPECT_EQ(Values<int32_t>(out["indices"]), (std::vector<int32_t>{1, 3, 2, 0}));
  EXPECT_EQ(Values<int32_t>(out["best"]), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(out["where"].shape(), Shape({5, 2}));
  EXPECT_EQ(Values<int64_t>(out["where"]), (std::vector<int64_t>{0, 1, 0, 3, 1, 0, 1, 1, 1, 2}));
}

// The array rules a frozen tf.boolean_mask, tf.clip_by_norm or TF 1.15 einsum needs, each
// against values worked out by hand; an empty axes list reduces nothing, as in TF.
TEST(TfGraphOpsTest, GatherSelectTransposeBatchMatMulProd) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);  // [[1, 2, 3], [4, 5, 6]]
  g.Ints("idx", {2, 0}, {2});
  g.Ints("one", {1}, {});
  g.Add("gather", "GatherV2", {"x", "idx", "one"});  // [[3, 1], [6, 4]]
  g.Ints("row1", {1}, {1});
  g.Add("gather0", "Gather", {"x", "row1"});  // [[4, 5, 6]]
  g.Ints("perm", {1, 0}, {2});
  g.Add("tr", "Transpose", {"x", "perm"});
  g.Ints("shape3", {1, 2, 3}, {3});
  g.Add("x3", "Reshape", {"x", "shape3"});
  (*g.Add("bmm", "BatchMatMulV2", {"x3", "x3"})->mutable_attr())["adj_y"].set_b(true);
  g.Add("prod", "Prod", {"x", "one"});  // [6, 120]
  g.Ints("noaxes", {}, {0});
  g.Add("sum_none", "Sum", {"x", "noaxes"});  // x itself
  g.Add("ones", "OnesLike", {"x"});
  g.Add("zeros", "ZerosLike", {"x"});
  g.Floats("rowvals", {0, 1}, {2});
  g.Floats("half", {0.5f}, {});
  g.Add("rowcond", "Greater", {"rowvals", "half"});   // [false, true]
  g.Add("sel", "Select", {"rowcond", "x", "zeros"});  // TF1: row 1 of x, row 0 zeros
  g.Floats("m", {1, 2, 3, 4}, {2, 2});                // a static rank: the reshape is static
  g.Add("mzeros", "ZerosLike", {"m"});
  g.Add("selm", "Select", {"rowcond", "m", "mzeros"});
  g.Floats("th", {2.5f}, {});
  g.Add("big", "Greater", {"x", "th"});
  g.Add("selv2", "SelectV2", {"big", "x", "zeros"});
  g.Ints("nd", {1, 2, 0, 0}, {2, 2});
  g.Add("gnd", "GatherNd", {"x", "nd"});  // [6, 1]
  g.Ints("segs", {1, 1}, {2});
  g.Ints("nseg", {2}, {});
  g.Add("segsum", "UnsortedSegmentSum", {"x", "segs", "nseg"});  // [[0, 0, 0], [5, 7, 9]]
  g.Ints("at", {2, 0}, {2, 1});
  g.Floats("upd", {1, 2}, {2});
  g.Ints("len", {3}, {1});
  g.Add("snd", "ScatterNd", {"at", "upd", "len"});  // [2, 0, 1]
  g.Ints("dup", {7, 3, 7, 7}, {4});
  g.Add("uniq", "Unique", {"dup"});  // y [7, 3], idx [0, 1, 0, 0]
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"x", "x:0"}},
                                        {{"gather", "gather"},
                                         {"gather0", "gather0"},
                                         {"tr", "tr"},
                                         {"bmm", "bmm"},
                                         {"prod", "prod"},
                                         {"sum_none", "sum_none"},
                                         {"ones", "ones"},
                                         {"sel", "sel"},
                                         {"selm", "selm"},
                                         {"selv2", "selv2"},
                                         {"gnd", "gnd"},
                                         {"segsum", "segsum"},
                                         {"snd", "snd"},
                                         {"uniq", "uniq"},
                                         {"uniq_idx", "uniq:1"}});
  auto out = model->Run("serving_default",
                        {{"x", Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3})}});
  EXPECT_EQ(Values<float>(out["gather"]), (std::vector<float>{3, 1, 6, 4}));
  EXPECT_EQ(Values<float>(out["gather0"]), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(out["tr"].shape(), Shape({3, 2}));
  EXPECT_EQ(Values<float>(out["tr"]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(out["bmm"].shape(), Shape({1, 2, 2}));
  EXPECT_EQ(Values<float>(out["bmm"]), (std::vector<float>{14, 32, 32, 77}));
  EXPECT_EQ(Values<float>(out["prod"]), (std::vector<float>{6, 120}));
  EXPECT_EQ(out["sum_none"].shape(), Shape({2, 3}));
  EXPECT_EQ(Values<float>(out["sum_none"]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Values<float>(out["ones"]), (std::vector<float>(6, 1.f)));
  EXPECT_EQ(Values<float>(out["sel"]), (std::vector<float>{0, 0, 0, 4, 5, 6}));
  EXPECT_EQ(Values<float>(out["selm"]), (std::vector<float>{0, 0, 3, 4}));
  EXPECT_EQ(Values<float>(out["selv2"]), (std::vector<float>{0, 0, 3, 4, 5, 6}));
  EXPECT_EQ(Values<float>(out["gnd"]), (std::vector<float>{6, 1}));
  EXPECT_EQ(Values<float>(out["segsum"]), (std::vector<float>{0, 0, 0, 5, 7, 9}));
  EXPECT_EQ(Values<float>(out["snd"]), (std::vector<float>{2, 0, 1}));
  EXPECT_EQ(Values<int32_t>(out["uniq"]), (std::vector<int32_t>{7, 3}));
  EXPECT_EQ(Values<int32_t>(out["uniq_idx"]), (std::vector<int32_t>{0, 1, 0, 0}));
}

TEST(TfGraphOpsTest, NnOps) {
  GraphBuilder g;
  g.Placeholder("img", proto::DT_FLOAT);  // [1, 4, 4, 1], values 0..15 row-major
  g.Floats("w", {1, 1, 1, 1}, {2, 2, 1, 1});
  proto::NodeDef* conv = g.Add("conv", "Conv2D", {"img", "w"});
  GraphBuilder::SetInts(conv, "strides", {1, 2, 2, 1});
  (*conv->mutable_attr())["padding"].set_s("VALID");
  g.Floats("bias", {0.5f}, {1});
  g.Add("biased", "BiasAdd", {"conv", "bias"});
  for (const std::string op : {"MaxPool", "AvgPool"}) {
    proto::NodeDef* p = g.Add(op, op, {"img"});
    GraphBuilder::SetInts(p, "ksize", {1, 2, 2, 1});
    GraphBuilder::SetInts(p, "strides", {1, 2, 2, 1});
    (*p->mutable_attr())["padding"].set_s("VALID");
  }
  g.Placeholder("v", proto::DT_FLOAT);  // [1, 3]: [0, ln 3, 7]
  g.Add("softmax", "Softmax", {"v"});
  g.Add("sigmoid", "Sigmoid", {"v"});
  g.Add("tanh", "Tanh", {"v"});
  g.Add("relu6", "Relu6", {"v"});
  g.Floats("m", {1, 0, 0, 1, 2, 0}, {3, 2});
  proto::NodeDef* mm = g.Add("mm", "MatMul", {"m", "v"});
  (*mm->mutable_attr())["transpose_a"].set_b(true);
  (*mm->mutable_attr())["transpose_b"].set_b(true);  // m^T [2,3] x v^T [3,1]
  estimator_testing::TempDir dir;
  auto model =
      TfModel::LoadFrozenGraph(Env::Default(), g.Write(dir), {{"img", "img"}, {"v", "v:0"}},
                               {{"conv", "biased"},
                                {"max", "MaxPool"},
                                {"avg", "AvgPool"},
                                {"softmax", "softmax"},
                                {"sigmoid", "sigmoid"},
                                {"tanh", "tanh"},
                                {"relu6", "relu6"},
                                {"mm", "mm"}});
  Tensor img(kFloat32, {1, 4, 4, 1});
  for (int i = 0; i < 16; ++i) img.data<float>()[i] = i;
  const float ln3 = std::log(3.f);
  auto out = model->Run("serving_default",
                        {{"img", img}, {"v", Tensor::FromVector<float>({0, ln3, 7}, Shape{1, 3})}});
  // 2x2 windows at stride 2: {0,1,4,5}, {2,3,6,7}, {8,9,12,13}, {10,11,14,15}.
  EXPECT_EQ(Values<float>(out["conv"]), (std::vector<float>{10.5f, 18.5f, 42.5f, 50.5f}));
  EXPECT_EQ(Values<float>(out["max"]), (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(Values<float>(out["avg"]), (std::vector<float>{2.5f, 4.5f, 10.5f, 12.5f}));
  const std::vector<float> sm = Values<float>(out["softmax"]);
  const float z = 1 + 3 + std::exp(7.f);
  EXPECT_NEAR(sm[0], 1 / z, 1e-6);
  EXPECT_NEAR(sm[1], 3 / z, 1e-6);
  EXPECT_NEAR(Values<float>(out["sigmoid"])[0], 0.5f, 1e-7);
  EXPECT_NEAR(Values<float>(out["tanh"])[2], std::tanh(7.f), 1e-6);
  EXPECT_EQ(Values<float>(out["relu6"]), (std::vector<float>{0, ln3, 6}));
  EXPECT_EQ(out["mm"].shape(), Shape({2, 1}));
  EXPECT_NEAR(Values<float>(out["mm"])[0], 0 + 0 + 2 * 7, 1e-5);  // column 0 of m . v
  EXPECT_NEAR(Values<float>(out["mm"])[1], ln3, 1e-6);
}

TEST(TfGraphOpsTest, NonConstantAxisAndNchwAreClearErrors) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  g.Placeholder("axis", proto::DT_INT32);
  g.Add("mean", "Mean", {"x", "axis"});
  g.Floats("b", {1}, {1});
  (*g.Add("nchw", "BiasAdd", {"x", "b"})->mutable_attr())["data_format"].set_s("NCHW");
  estimator_testing::TempDir dir;
  const std::string path = g.Write(dir);
  auto message = [&](const std::string& output) {
    try {
      TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}, {"axis", "axis"}},
                               {{"y", output}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("mean").find("input 1 must be a constant"), std::string::npos);
  EXPECT_NE(message("nchw").find("NCHW"), std::string::npos);
}

TEST(TfSavedModelTest, UnsupportedOpsAreListedWithCounts) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  g.Add("e1", "Digamma", {"x"});
  g.Add("e2", "Digamma", {"e1"});
  g.Add("c", "Zeta", {"e2", "x"});
  g.Add("r", "Relu", {"c"});
  g.Add("unused", "Lgamma", {"x"});  // not needed by the output: not reported
  estimator_testing::TempDir dir;
  const std::string path = g.Write(dir);
  try {
    TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "r:0"}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(e.message().find("unsupported TF ops: Digamma x2, Zeta x1)"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.message().find("Lgamma"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("MatMul"), std::string::npos) << e.what();  // the supported list
  }
}

// A TF1 while loop's frame ops: the error names them and says why they cannot come in.
TEST(TfSavedModelTest, Tf1WhileLoopOpsAreAClearError) {
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  g.Add("while/Enter", "Enter", {"x"});
  g.Add("while/Exit", "Exit", {"while/Enter"});
  estimator_testing::TempDir dir;
  const std::string path = g.Write(dir);
  try {
    TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "while/Exit:0"}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(e.message().find("Enter x1, Exit x1"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("TF1 while loop"), std::string::npos) << e.what();
  }
}

// A SavedModel written here: `graph` as its one MetaGraphDef {serve} with `signatures`
// (key -> {input key -> tensor}, {output key -> tensor}); inputs are float [?, 2] unless
// listed in `string_inputs`.
struct Sig {
  std::map<std::string, std::string> inputs, outputs;
};
void WriteSavedModel(const std::string& dir, const proto::GraphDef& graph,
                     const std::map<std::string, Sig>& signatures,
                     const std::set<std::string>& string_inputs = {}) {
  proto::SavedModel saved;
  proto::MetaGraphDef* meta = saved.add_meta_graphs();
  meta->mutable_meta_info_def()->add_tags("serve");
  *meta->mutable_graph_def() = graph;
  for (const auto& [key, sig] : signatures) {
    proto::SignatureDef& def = (*meta->mutable_signature_def())[key];
    def.set_method_name("tensorflow/serving/predict");
    for (const auto& [k, tensor] : sig.inputs) {
      proto::TensorInfo& info = (*def.mutable_inputs())[k];
      info.set_name(tensor);
      if (string_inputs.count(k)) {
        info.set_dtype(proto::DT_STRING);
        info.mutable_tensor_shape()->add_dim()->set_size(-1);
      } else {
        info.set_dtype(proto::DT_FLOAT);
        info.mutable_tensor_shape()->add_dim()->set_size(-1);
        info.mutable_tensor_shape()->add_dim()->set_size(2);
      }
    }
    for (const auto& [k, tensor] : sig.outputs) (*def.mutable_outputs())[k].set_name(tensor);
  }
  Env::Default()->CreateDirs(JoinPath(dir, "variables"));
  tf_testing::Overwrite(Env::Default(), JoinPath(dir, "saved_model.pb"), saved.SerializeAsString());
}

// A TF1 partitioned variable: the graph holds "w/part_0" and "w/part_1" (VariableV2), the
// checkpoint the full tensor "w" [4, 2] as two slices in two shards. The graph computes
// x . concat(parts) as TF's partitioned matmul does.
TEST(TfSavedModelTest, PartitionedVariablePartsComeFromTheFullTensor) {
  estimator_testing::TempDir dir;
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  for (const auto& [name, rows] :
       {std::pair<std::string, int64_t>{"w/part_0", 3}, {"w/part_1", 1}}) {
    proto::NodeDef* v = g.Add(name, "VariableV2");
    (*v->mutable_attr())["dtype"].set_type(proto::DT_FLOAT);
    auto* shape = (*v->mutable_attr())["shape"].mutable_shape();
    shape->add_dim()->set_size(rows);
    shape->add_dim()->set_size(2);
    g.Add(name + "/read", "Identity", {name});
  }
  g.Ints("axis", {0}, {});
  g.Add("w/concat", "ConcatV2", {"w/part_0/read", "w/part_1/read", "axis"});
  g.Ints("b0", {0, 0}, {2});
  g.Ints("e0", {2, 2}, {2});
  g.Ints("st", {1, 1}, {2});
  g.Add("w/top", "StridedSlice", {"w/concat", "b0", "e0", "st"});  // rows 0-1: [2, 2]
  g.Add("y", "MatMul", {"x", "w/top"});
  g.Add("last", "Identity", {"w/part_1/read"});
  WriteSavedModel(dir.path(), g.def(),
                  {{"serving_default", {{{"x", "x:0"}}, {{"y", "y:0"}, {"last", "last:0"}}}}});
  // w = [[1, 2], [3, 4], [5, 6], [7, 8]]: part_0 rows 0-2 in shard 1, part_1 row 3 in shard 0.
  tf_testing::TestBundleWriter w(2);
  w.AddPartitioned(
      "w", Shape{4, 2},
      {{{{3, 1}, {0, -1}}, Tensor::FromVector<float>({7, 8}, Shape{1, 2}), 0},
       {{{0, 3}, {0, -1}}, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2}), 1}});
  w.Write(Env::Default(), JoinPath(dir.path(), "variables/variables"), /*snappy=*/false);

  auto model = LoadTFSavedModel(Env::Default(), dir.path());
  auto out = model->Run("serving_default", {{"x", Tensor::FromVector<float>({1, 1}, Shape{1, 2})}});
  EXPECT_EQ(Values<float>(out["y"]), (std::vector<float>{4, 6}));  // [1, 1] . [[1, 2], [3, 4]]
  EXPECT_EQ(Values<float>(out["last"]), (std::vector<float>{7, 8}));

  // Parts whose shapes differ from the graph's declared ones.
  tf_testing::TestBundleWriter halves(1);
  halves.AddPartitioned("w", Shape{4, 2},
                        {{{{0, 2}, {0, -1}}, Tensor::Zeros(kFloat32, {2, 2}), 0},
                         {{{2, 2}, {0, -1}}, Tensor::Zeros(kFloat32, {2, 2}), 0}});
  halves.Write(Env::Default(), JoinPath(dir.path(), "variables/variables"), false);
  try {
    LoadTFSavedModel(Env::Default(), dir.path());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    // Whichever part is translated first: part_0 is declared [3,2], part_1 [1,2].
    EXPECT_NE(e.message().find("but its checkpoint value is [2,2]"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("TF variable 'w/part_"), std::string::npos) << e.what();
  }
}

// ParseExample with a VarLenFeature: TF's sparse indices, values and dense shape, then
// the dense feature; fetched as signature outputs.
TEST(TfSavedModelTest, ParseExampleSparseFeatures) {
  estimator_testing::TempDir dir;
  GraphBuilder g;
  g.Placeholder("serialized", proto::DT_STRING);
  g.String("names", "");
  g.String("key_tags", "tags");
  g.String("key_age", "age");
  proto::NodeDef* fallback = g.Add("age_default", "Const");
  (*fallback->mutable_attr())["dtype"].set_type(proto::DT_INT64);
  proto::TensorProto* t = (*fallback->mutable_attr())["value"].mutable_tensor();
  t->set_dtype(proto::DT_INT64);
  t->mutable_tensor_shape()->add_dim()->set_size(1);
  t->add_int64_val(-1);
  proto::NodeDef* p =
      g.Add("parse", "ParseExample", {"serialized", "names", "key_tags", "key_age", "age_default"});
  (*p->mutable_attr())["Nsparse"].set_i(1);
  (*p->mutable_attr())["Ndense"].set_i(1);
  (*p->mutable_attr())["sparse_types"].mutable_list()->add_type(proto::DT_STRING);
  (*p->mutable_attr())["Tdense"].mutable_list()->add_type(proto::DT_INT64);
  (*p->mutable_attr())["dense_shapes"].mutable_list()->add_shape()->add_dim()->set_size(1);
  WriteSavedModel(dir.path(), g.def(),
                  {{"parse",
                    {{{"examples", "serialized:0"}},
                     {{"indices", "parse:0"},
                      {"values", "parse:1"},
                      {"shape", "parse:2"},
                      {"age", "parse:3"}}}}},
                  {"examples"});
  auto model = LoadTFSavedModel(Env::Default(), dir.path());
  const TfSignature& sig = model->signatures().at("parse");
  EXPECT_EQ(sig.example_input, "examples");
  ASSERT_EQ(sig.example_features.size(), 2u);
  EXPECT_EQ(sig.example_features[0].key, "age");
  EXPECT_TRUE(sig.example_features[0].has_default);
  EXPECT_EQ(sig.example_features[1].key, "tags");
  EXPECT_TRUE(sig.example_features[1].var_len);
  EXPECT_EQ(sig.example_features[1].dtype, kString);
  const Tensor records = Tensor::FromVector<std::string>(
      {ExampleBuilder().AddBytes("tags", {"a", "b"}).AddInt64s("age", {30}).Serialize(),
       ExampleBuilder().Serialize(), ExampleBuilder().AddBytes("tags", {"c"}).Serialize()});
  auto out = model->Run("parse", {{"examples", records}});
  EXPECT_TRUE(out["indices"].Equals(Tensor::FromVector<int64_t>({0, 0, 0, 1, 2, 0}, Shape{3, 2})));
  EXPECT_TRUE(out["values"].Equals(Tensor::FromVector<std::string>({"a", "b", "c"})));
  EXPECT_TRUE(out["shape"].Equals(Tensor::FromVector<int64_t>({3, 2})));
  EXPECT_TRUE(out["age"].Equals(Tensor::FromVector<int64_t>({30, -1, -1}, Shape{3, 1})));
  // The same records from CSV rows: "tags" space-separated, an empty "age" its default.
  const std::string csv = dir.Join("rows.csv");
  tf_testing::Overwrite(Env::Default(), csv, "tags,age\na b,30\n,\nc,\n");
  auto from_csv = model->Run("parse", TfInputsFromCsv(Env::Default(), csv, sig, "parse"));
  for (const char* key : {"indices", "values", "shape", "age"}) {
    EXPECT_TRUE(from_csv[key].Equals(out[key])) << key << " " << from_csv[key].DebugString();
  }
}

// Two signatures that both need one unsupported node and each one of their own: the load
// error counts every unsupported node of the graph once.
TEST(TfSavedModelTest, UnsupportedOpsOfASavedModelAreCountedOncePerNode) {
  estimator_testing::TempDir dir;
  GraphBuilder g;
  g.Placeholder("x", proto::DT_FLOAT);
  g.Add("shared", "Digamma", {"x"});
  g.Add("a", "Digamma", {"shared"});
  g.Add("b", "Zeta", {"shared", "x"});
  g.Add("c", "Lgamma", {"b"});
  WriteSavedModel(
      dir.path(), g.def(),
      {{"first", {{{"x", "x:0"}}, {{"y", "a:0"}}}}, {"second", {{{"x", "x:0"}}, {{"y", "c:0"}}}}});
  try {
    LoadTFSavedModel(Env::Default(), dir.path());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(e.message().find("(unsupported TF ops: Digamma x2, Lgamma x1, Zeta x1)"),
              std::string::npos)
        << e.what();
  }
  // With one runnable signature the model loads; the other says why it cannot run.
  g.Add("ok", "Relu", {"x"});
  WriteSavedModel(
      dir.path(), g.def(),
      {{"first", {{{"x", "x:0"}}, {{"y", "a:0"}}}}, {"fine", {{{"x", "x:0"}}, {{"y", "ok:0"}}}}});
  auto model = LoadTFSavedModel(Env::Default(), dir.path());
  EXPECT_EQ(model->unavailable().at("first"), "unsupported TF ops: Digamma x2");
  try {
    model->Run("first", {{"x", Tensor::Zeros(kFloat32, {1, 2})}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    EXPECT_NE(e.message().find("Digamma x2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
