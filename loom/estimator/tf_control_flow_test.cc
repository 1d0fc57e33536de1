// TF1 control flow in imported TF graphs: the learning-phase cond of a Keras Dropout layer
// (TF 1.15 layout: keras_learning_phase -> dropout/cond/Switch, switch_t, pred_id, branch
// constants hanging off ^switch_t, dropout/cond/Merge), an Assert reached only through a
// control edge (tf.debugging.assert_non_negative's AssertGuard cond), and the corrupt cases:
// a Merge with every input dead, a non-scalar predicate, a control input naming no node, and
// TF1 while-loop frames. The GraphDefs are written in TF's text format, node by node as
// TF 1.15 writes them (control_flow_ops.cond, nn_ops.dropout_v2, check_ops, Assert).
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

using testing::CodeOf;

// Text-format pieces of a NodeDef.
std::string TypeAttr(const std::string& key, const std::string& type) {
  return "attr { key: '" + key + "' value { type: " + type + " } }";
}
std::string ScalarConst(const std::string& name, float v, const std::string& control = "") {
  return "node { name: '" + name + "' op: 'Const' " +
         (control.empty() ? "" : "input: '^" + control + "' ") + TypeAttr("dtype", "DT_FLOAT") +
         " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: " +
         std::to_string(v) + " } } } }\n";
}
std::string Node(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs, const std::string& attrs = "") {
  std::string out = "node { name: '" + name + "' op: '" + op + "' ";
  for (const auto& i : inputs) out += "input: '" + i + "' ";
  return out + attrs + " }\n";
}
const std::string kFloatT = TypeAttr("T", "DT_FLOAT");
const std::string kBoolT = TypeAttr("T", "DT_BOOL");

// The first four nodes of control_flow_ops.cond (v1) under `scope`: Switch(pred, pred), the
// pivots switch_t / switch_f and pred_id.
std::string CondHead(const std::string& scope, const std::string& pred) {
  return Node(scope + "/Switch", "Switch", {pred, pred}, kBoolT) +
         Node(scope + "/switch_t", "Identity", {scope + "/Switch:1"}, kBoolT) +
         Node(scope + "/switch_f", "Identity", {scope + "/Switch"}, kBoolT) +
         Node(scope + "/pred_id", "Identity", {pred}, kBoolT);
}

// testdata/tf/keras_dropout_cond.pbtxt: keras.Sequential([Dense(3, relu, input_shape=(2,)),
// Dropout(0.5)]) in TF 1.15's frozen layout (the file's header describes it), with these
// weights: W float32 [2, 3], b [3].
constexpr float kW[2][3] = {{0.5f, -1.f, 2.f}, {1.f, 0.25f, -0.5f}};
constexpr float kB[3] = {0.1f, 0.2f, -0.3f};

std::string KerasDropoutGraph() {
  const std::string path = JoinPath(LOOM_SHARED_TESTDATA, "tf/keras_dropout_cond.pbtxt");
  EXPECT_TRUE(Env::Default()->FileExists(path)) << path;
  return ReadFileToString(Env::Default(), path);
}

std::string WriteGraph(const estimator_testing::TempDir& dir, const std::string& text) {
  proto::GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def)) << text;
  const std::string path = dir.Join("frozen.pb");
  auto f = Env::Default()->NewWritableFile(path);
  f->Append(def.SerializeAsString());
  f->Close();
  return path;
}

// Relu(x W + b) in float64: the Dense layer's output.
std::vector<double> DenseRelu(const std::vector<float>& x) {
  std::vector<double> out;
  for (size_t r = 0; r < x.size() / 2; ++r) {
    for (int j = 0; j < 3; ++j) {
      const double v = double{x[2 * r]} * kW[0][j] + double{x[2 * r + 1]} * kW[1][j] + kB[j];
      out.push_back(std::max(v, 0.0));
    }
  }
  return out;
}

std::vector<float> Inputs(int rows) {
  std::vector<float> x;
  for (int i = 0; i < 2 * rows; ++i) x.push_back(std::sin(0.7f * i) * 2 + 0.5f);
  return x;
}

TEST(TfControlFlowTest, KerasDropoutCondIsTheIdentityByDefault) {
  estimator_testing::TempDir dir;
  const std::string path = WriteGraph(dir, KerasDropoutGraph());
  auto model = TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "dense_input"}},
                                        {{"y", "dropout/cond/Merge:0"}});
  const std::vector<float> x = Inputs(4);
  const Tensor y =
      model->Run("serving_default", {{"x", Tensor::FromVector<float>(x, Shape{4, 2})}}).at("y");
  ASSERT_EQ(y.shape(), Shape({4, 3}));
  const std::vector<double> want = DenseRelu(x);
  int positive = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(y.data<float>()[i], want[i], 1e-6 * (1 + want[i])) << i;
    positive += want[i] > 0;
  }
  EXPECT_GT(positive, 3);  // the comparison is not all zeros
  // Without named inputs the input is the one Placeholder (the PlaceholderWithDefault keeps
  // its default).
  auto by_placeholder =
      TfModel::LoadFrozenGraph(Env::Default(), path, {}, {{"y", "dropout/cond/Merge"}});
  EXPECT_EQ(by_placeholder->signatures().at("serving_default").inputs.size(), 1u);
  EXPECT_TRUE(
      by_placeholder
          ->Run("serving_default", {{"dense_input", Tensor::FromVector<float>(x, Shape{4, 2})}})
          .at("y")
          .Equals(y));
}

// keras_learning_phase fed true: dropout's true branch runs, each value is 0 or the Dense
// output / (1 - rate), about half are dropped, and each Run draws a new mask.
TEST(TfControlFlowTest, KerasDropoutCondTrainsWhenTheLearningPhaseIsFedTrue) {
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, KerasDropoutGraph()),
                                        {{"x", "dense_input"}, {"phase", "keras_learning_phase"}},
                                        {{"y", "dropout/cond/Merge:0"}});
  const auto& inputs = model->signatures().at("serving_default").inputs;
  EXPECT_EQ(inputs.at("phase").dtype, kBool);
  const int rows = 500;
  const std::vector<float> x = Inputs(rows);
  const std::vector<double> want = DenseRelu(x);
  const Tensor xt = Tensor::FromVector<float>(x, Shape{rows, 2});
  auto run = [&](bool phase) {
    return model->Run("serving_default", {{"x", xt}, {"phase", Tensor::Scalar<bool>(phase)}})
        .at("y");
  };
  const Tensor y = run(true);
  ASSERT_EQ(y.shape(), Shape({rows, 3}));
  int kept = 0, dropped = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] <= 1e-6) continue;
    const float v = y.data<float>()[i];
    if (v == 0) {
      ++dropped;
    } else {
      EXPECT_NEAR(v, want[i] / 0.5, 1e-5 * (1 + want[i])) << i;
      ++kept;
    }
  }
  ASSERT_GT(kept + dropped, 500);
  const double rate = static_cast<double>(dropped) / (kept + dropped);
  EXPECT_NEAR(rate, 0.5, 0.08) << dropped << " of " << kept + dropped;
  EXPECT_FALSE(run(true).Equals(y));
  // Fed false: the identity again.
  const Tensor off = run(false);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(off.data<float>()[i], want[i], 1e-6 * (1 + want[i])) << i;
  }
}

// keras.layers.BatchNormalization() on a [batch, 2] input, frozen by TF 1.15 (the
// non-fused path; ref variables frozen to Const + read): nn.moments outside the cond, then
// one cond per statistic picking the batch's (true: the external tensor passed through
// Switch_1:1) or the moving one (false: Switch_2:0), and nn.batch_normalization.
constexpr float kGamma[2] = {1.5f, 0.5f}, kBeta[2] = {0.25f, -1.f};
constexpr float kMovingMean[2] = {0.5f, -0.25f}, kMovingVar[2] = {2.f, 0.5f};
constexpr float kEpsilon = 0.001f;

std::string VectorConst(const std::string& name, const float (&v)[2]) {
  return "node { name: '" + name + "' op: 'Const' " + TypeAttr("dtype", "DT_FLOAT") +
         " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } "
         "} float_val: " +
         std::to_string(v[0]) + " float_val: " + std::to_string(v[1]) + " } } } }\n";
}

std::string KerasBatchNormGraph() {
  const std::string bn = "batch_normalization";
  const std::string m = bn + "/moments";
  auto axes = [](const std::string& name) {
    return "node { name: '" + name + "' op: 'Const' " + TypeAttr("dtype", "DT_INT32") +
           " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } "
           "} int_val: 0 } } } }\n";
  };
  const std::string keep =
      " attr { key: 'keep_dims' value { b: true } }" + TypeAttr("Tidx", "DT_INT32");
  const std::string squeeze = " attr { key: 'squeeze_dims' value { list { i: 0 } } }";
  // cond `scope` choosing `batch` (true) or `moving` (false).
  auto pick = [&](const std::string& scope, const std::string& batch, const std::string& moving) {
    return CondHead(scope, "keras_learning_phase") +
           Node(scope + "/Switch_1", "Switch", {batch, scope + "/pred_id"}, kFloatT) +
           Node(scope + "/Switch_2", "Switch", {moving, scope + "/pred_id"}, kFloatT) +
           Node(scope + "/Merge", "Merge", {scope + "/Switch_2", scope + "/Switch_1:1"},
                kFloatT + " attr { key: 'N' value { i: 2 } }");
  };
  const std::string b = bn + "/batchnorm";
  return Node("input_1", "Placeholder", {},
              TypeAttr("dtype", "DT_FLOAT") +
                  " attr { key: 'shape' value { shape { dim { size: -1 } dim { size: 2 } } } }") +
         "node { name: 'keras_learning_phase/input' op: 'Const' " + TypeAttr("dtype", "DT_BOOL") +
         " attr { key: 'value' value { tensor { dtype: DT_BOOL tensor_shape { } bool_val: false "
         "} } } }\n" +
         Node("keras_learning_phase", "PlaceholderWithDefault", {"keras_learning_phase/input"},
              TypeAttr("dtype", "DT_BOOL") + " attr { key: 'shape' value { shape { } } }") +
         VectorConst(bn + "/gamma", kGamma) +
         Node(bn + "/gamma/read", "Identity", {bn + "/gamma"}, kFloatT) +
         VectorConst(bn + "/beta", kBeta) +
         Node(bn + "/beta/read", "Identity", {bn + "/beta"}, kFloatT) +
         VectorConst(bn + "/moving_mean", kMovingMean) +
         Node(bn + "/moving_mean/read", "Identity", {bn + "/moving_mean"}, kFloatT) +
         VectorConst(bn + "/moving_variance", kMovingVar) +
         Node(bn + "/moving_variance/read", "Identity", {bn + "/moving_variance"}, kFloatT) +
         axes(m + "/mean/reduction_indices") +
         Node(m + "/mean", "Mean", {"input_1", m + "/mean/reduction_indices"}, kFloatT + keep) +
         Node(m + "/StopGradient", "StopGradient", {m + "/mean"}, kFloatT) +
         Node(m + "/SquaredDifference", "SquaredDifference", {"input_1", m + "/StopGradient"},
              kFloatT) +
         axes(m + "/variance/reduction_indices") +
         Node(m + "/variance", "Mean",
              {m + "/SquaredDifference", m + "/variance/reduction_indices"}, kFloatT + keep) +
         Node(m + "/Squeeze", "Squeeze", {m + "/mean"}, kFloatT + squeeze) +
         Node(m + "/Squeeze_1", "Squeeze", {m + "/variance"}, kFloatT + squeeze) +
         pick(bn + "/cond", m + "/Squeeze", bn + "/moving_mean/read") +
         pick(bn + "/cond_1", m + "/Squeeze_1", bn + "/moving_variance/read") +
         ScalarConst(b + "/add/y", kEpsilon) +
         Node(b + "/add", "AddV2", {bn + "/cond_1/Merge", b + "/add/y"}, kFloatT) +
         Node(b + "/Rsqrt", "Rsqrt", {b + "/add"}, kFloatT) +
         Node(b + "/mul", "Mul", {b + "/Rsqrt", bn + "/gamma/read"}, kFloatT) +
         Node(b + "/mul_1", "Mul", {"input_1", b + "/mul"}, kFloatT) +
         Node(b + "/mul_2", "Mul", {bn + "/cond/Merge", b + "/mul"}, kFloatT) +
         Node(b + "/sub", "Sub", {bn + "/beta/read", b + "/mul_2"}, kFloatT) +
         Node(b + "/add_1", "AddV2", {b + "/mul_1", b + "/sub"}, kFloatT);
}

// Inference (the default) normalizes with the moving statistics, training (fed true) with
// the batch's (biased variance), both against float64.
TEST(TfControlFlowTest, KerasBatchNormCondPicksMovingOrBatchStatistics) {
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, KerasBatchNormGraph()),
                                        {{"x", "input_1"}, {"phase", "keras_learning_phase"}},
                                        {{"y", "batch_normalization/batchnorm/add_1"}});
  const int rows = 5;
  const std::vector<float> x = Inputs(rows);
  const Tensor xt = Tensor::FromVector<float>(x, Shape{rows, 2});
  for (bool training : {false, true}) {
    SCOPED_TRACE(training);
    double mean[2], var[2];
    for (int j = 0; j < 2; ++j) {
      mean[j] = kMovingMean[j];
      var[j] = kMovingVar[j];
      if (!training) continue;
      double sum = 0, sq = 0;
      for (int r = 0; r < rows; ++r) sum += x[2 * r + j];
      mean[j] = sum / rows;
      for (int r = 0; r < rows; ++r) sq += (x[2 * r + j] - mean[j]) * (x[2 * r + j] - mean[j]);
      var[j] = sq / rows;
    }
    const Tensor y =
        model->Run("serving_default", {{"x", xt}, {"phase", Tensor::Scalar<bool>(training)}})
            .at("y");
    ASSERT_EQ(y.shape(), Shape({rows, 2}));
    for (int r = 0; r < rows; ++r) {
      for (int j = 0; j < 2; ++j) {
        const double want =
            (x[2 * r + j] - mean[j]) / std::sqrt(var[j] + double{kEpsilon}) * kGamma[j] + kBeta[j];
        EXPECT_NEAR(y.data<float>()[2 * r + j], want, 2e-5 * (1 + std::abs(want))) << r << "," << j;
      }
    }
  }
}

// The same layer on an NHWC [N, H, W, 2] input takes TF 1.15's fused path: the cond's
// branches are FusedBatchNormV3 (true: is_training, empty mean / variance constants on
// ^switch_t; false: the moving statistics), each input through its own Switch, and Merge,
// Merge_1, Merge_2 join y, mean and variance.
std::string KerasFusedBatchNormGraph() {
  const std::string bn = "batch_normalization";
  const std::string c = bn + "/cond";
  auto empty = [&](const std::string& name) {
    return "node { name: '" + name + "' op: 'Const' input: '^" + c + "/switch_t' " +
           TypeAttr("dtype", "DT_FLOAT") +
           " attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 0 } "
           "} } } } }\n";
  };
  const std::string attrs = kFloatT + TypeAttr("U", "DT_FLOAT") +
                            " attr { key: 'data_format' value { s: 'NHWC' } } attr { key: "
                            "'epsilon' value { f: " +
                            std::to_string(kEpsilon) + " } }";
  auto is_training = [](bool b) {
    return std::string(" attr { key: 'is_training' value { b: ") + (b ? "true" : "false") + " } }";
  };
  std::string switches;
  const std::vector<std::string> sources = {"input_1", bn + "/gamma/read", bn + "/beta/read",
                                            bn + "/moving_mean/read", bn + "/moving_variance/read"};
  for (const std::string& fused : {c + "/FusedBatchNormV3", c + "/FusedBatchNormV3_1"}) {
    const bool training = fused.ends_with("V3");
    for (size_t i = 0; i < (training ? 3u : 5u); ++i) {
      switches += Node(fused + (i == 0 ? "/Switch" : "/Switch_" + std::to_string(i)), "Switch",
                       {sources[i], c + "/pred_id"}, kFloatT);
    }
  }
  auto sw = [&](const std::string& fused, int i, int branch) {
    return fused + (i == 0 ? "/Switch" : "/Switch_" + std::to_string(i)) + ":" +
           std::to_string(branch);
  };
  const std::string t = c + "/FusedBatchNormV3", f = c + "/FusedBatchNormV3_1";
  return Node("input_1", "Placeholder", {},
              TypeAttr("dtype", "DT_FLOAT") +
                  " attr { key: 'shape' value { shape { dim { size: -1 } dim { size: 2 } dim { "
                  "size: 2 } dim { size: 2 } } } }") +
         "node { name: 'keras_learning_phase/input' op: 'Const' " + TypeAttr("dtype", "DT_BOOL") +
         " attr { key: 'value' value { tensor { dtype: DT_BOOL tensor_shape { } bool_val: false "
         "} } } }\n" +
         Node("keras_learning_phase", "PlaceholderWithDefault", {"keras_learning_phase/input"},
              TypeAttr("dtype", "DT_BOOL") + " attr { key: 'shape' value { shape { } } }") +
         VectorConst(bn + "/gamma", kGamma) +
         Node(bn + "/gamma/read", "Identity", {bn + "/gamma"}, kFloatT) +
         VectorConst(bn + "/beta", kBeta) +
         Node(bn + "/beta/read", "Identity", {bn + "/beta"}, kFloatT) +
         VectorConst(bn + "/moving_mean", kMovingMean) +
         Node(bn + "/moving_mean/read", "Identity", {bn + "/moving_mean"}, kFloatT) +
         VectorConst(bn + "/moving_variance", kMovingVar) +
         Node(bn + "/moving_variance/read", "Identity", {bn + "/moving_variance"}, kFloatT) +
         CondHead(c, "keras_learning_phase") + empty(c + "/Const") + empty(c + "/Const_1") +
         switches +
         Node(t, "FusedBatchNormV3",
              {sw(t, 0, 1), sw(t, 1, 1), sw(t, 2, 1), c + "/Const", c + "/Const_1"},
              attrs + is_training(true)) +
         Node(f, "FusedBatchNormV3",
              {sw(f, 0, 0), sw(f, 1, 0), sw(f, 2, 0), sw(f, 3, 0), sw(f, 4, 0)},
              attrs + is_training(false)) +
         Node(c + "/Merge", "Merge", {f, t}, kFloatT + " attr { key: 'N' value { i: 2 } }") +
         Node(c + "/Merge_1", "Merge", {f + ":1", t + ":1"},
              kFloatT + " attr { key: 'N' value { i: 2 } }");
}

TEST(TfControlFlowTest, KerasFusedBatchNormCondPicksMovingOrBatchStatistics) {
  estimator_testing::TempDir dir;
  const std::string path = WriteGraph(dir, KerasFusedBatchNormGraph());
  auto model = TfModel::LoadFrozenGraph(Env::Default(), path,
                                        {{"x", "input_1"}, {"phase", "keras_learning_phase"}},
                                        {{"y", "batch_normalization/cond/Merge"}});
  const int n = 2 * 2 * 2;  // N * H * W positions per channel
  const std::vector<float> x = Inputs(n);
  const Tensor xt = Tensor::FromVector<float>(x, Shape{2, 2, 2, 2});
  for (bool training : {false, true}) {
    SCOPED_TRACE(training);
    double mean[2], var[2];
    for (int j = 0; j < 2; ++j) {
      mean[j] = kMovingMean[j];
      var[j] = kMovingVar[j];
      if (!training) continue;
      double sum = 0, sq = 0;
      for (int r = 0; r < n; ++r) sum += x[2 * r + j];
      mean[j] = sum / n;
      for (int r = 0; r < n; ++r) sq += (x[2 * r + j] - mean[j]) * (x[2 * r + j] - mean[j]);
      var[j] = sq / n;
    }
    const Tensor y =
        model->Run("serving_default", {{"x", xt}, {"phase", Tensor::Scalar<bool>(training)}})
            .at("y");
    ASSERT_EQ(y.shape(), Shape({2, 2, 2, 2}));
    for (int r = 0; r < n; ++r) {
      for (int j = 0; j < 2; ++j) {
        const double want =
            (x[2 * r + j] - mean[j]) / std::sqrt(var[j] + double{kEpsilon}) * kGamma[j] + kBeta[j];
        EXPECT_NEAR(y.data<float>()[2 * r + j], want, 2e-5 * (1 + std::abs(want))) << r << "," << j;
      }
    }
  }
  // The batch statistics (output 1, for the moving-average updates) are not translated:
  // refused naming the output, never a wrong value.
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "input_1"}},
                                           {{"mean", "batch_normalization/cond/Merge_1"}});
                },
                &message),
            ErrorCode::kUnimplemented);
  EXPECT_NE(message.find("output 1 of TF node 'batch_normalization/cond/FusedBatchNormV3"),
            std::string::npos)
      << message;
}

// tf.debugging.assert_non_negative(x) and `with tf.control_dependencies([assert]): y =
// tf.identity(x)`, as TF 1.15 builds it: the Assert has float data, so it sits in the false
// branch of an AssertGuard cond, and y reaches it only through the control edge on the
// guard's Merge.
std::string AssertGuardGraph() {
  const std::string a = "assert_non_negative/assert_less_equal";
  const std::string g = a + "/Assert/AssertGuard";
  auto string_const = [](const std::string& name, const std::string& s) {
    return "node { name: '" + name + "' op: 'Const' " + TypeAttr("dtype", "DT_STRING") +
           " attr { key: 'value' value { tensor { dtype: DT_STRING tensor_shape { } string_val: '" +
           s + "' } } } }\n";
  };
  return Node("x", "Placeholder", {},
              TypeAttr("dtype", "DT_FLOAT") +
                  " attr { key: 'shape' value { shape { dim { size: -1 } } } }") +
         ScalarConst("assert_non_negative/Const", 0) +
         Node(a + "/LessEqual", "LessEqual", {"assert_non_negative/Const", "x"}, kFloatT) +
         "node { name: '" + a + "/Const' op: 'Const' " + TypeAttr("dtype", "DT_INT32") +
         " attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 1 } } "
         "int_val: 0 } } } }\n" +
         Node(a + "/All", "All", {a + "/LessEqual", a + "/Const"},
              TypeAttr("Tidx", "DT_INT32") + " attr { key: 'keep_dims' value { b: false } }") +
         string_const(a + "/Assert/Const", "x (x:0) = ") + CondHead(g, a + "/All") +
         Node(g + "/NoOp", "NoOp", {"^" + g + "/switch_t"}) +
         Node(g + "/control_dependency", "Identity", {g + "/switch_t", "^" + g + "/NoOp"},
              kBoolT + " attr { key: '_class' value { list { s: 'loc:@" + g + "/switch_t' } } }") +
         string_const(g + "/Assert/data_0", "Condition x >= 0 did not hold element-wise:") +
         Node(g + "/Assert/Switch", "Switch", {a + "/All", g + "/pred_id"}, kBoolT) +
         Node(g + "/Assert/Switch_1", "Switch", {"x", g + "/pred_id"}, kFloatT) +
         Node(g + "/Assert", "Assert",
              {g + "/Assert/Switch", g + "/Assert/data_0", g + "/Assert/Switch_1"},
              "attr { key: 'T' value { list { type: DT_STRING type: DT_FLOAT } } } "
              "attr { key: 'summarize' value { i: 3 } }") +
         Node(g + "/control_dependency_1", "Identity", {g + "/switch_f", "^" + g + "/Assert"},
              kBoolT) +
         Node(g + "/Merge", "Merge", {g + "/control_dependency_1", g + "/control_dependency"},
              kBoolT + " attr { key: 'N' value { i: 2 } }") +
         Node("y", "Identity", {"x", "^" + g + "/Merge"}, kFloatT);
}

TEST(TfControlFlowTest, AnAssertBehindAControlEdgeRuns) {
  estimator_testing::TempDir dir;
  auto model = TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, AssertGuardGraph()),
                                        {{"x", "x"}}, {{"y", "y"}});
  const Tensor good = Tensor::FromVector<float>({0, 1.5f, 2});
  EXPECT_TRUE(model->Run("serving_default", {{"x", good}}).at("y").Equals(good));
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  model->Run("serving_default", {{"x", Tensor::FromVector<float>({1, -2, 3, 4})}});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("assert_non_negative/assert_less_equal/Assert/AssertGuard/Assert'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("assertion failed: "), std::string::npos) << message;
  EXPECT_NE(message.find("did not hold element-wise"), std::string::npos) << message;
  EXPECT_NE(message.find("[1 -2 3 ...]"), std::string::npos) << message;  // summarize: 3
}

// Merge(Switch(x, p):0, Switch(x, p):0): when p is true both inputs are dead, so (as in TF)
// the Merge is dead, and fetching it names the Switch.
TEST(TfControlFlowTest, AMergeOfDeadInputsIsDead) {
  estimator_testing::TempDir dir;
  const std::string text =
      Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT")) +
      Node("p", "Placeholder", {}, TypeAttr("dtype", "DT_BOOL")) +
      Node("s1", "Switch", {"x", "p"}, kFloatT) + Node("s2", "Switch", {"x", "p"}, kFloatT) +
      Node("m", "Merge", {"s1", "s2:0"}, kFloatT + " attr { key: 'N' value { i: 2 } }");
  auto model = TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, text), {},
                                        {{"m", "m"}, {"index", "m:1"}});
  const Tensor x = Tensor::FromVector<float>({3, 4});
  auto out = model->Run("serving_default", {{"x", x}, {"p", Tensor::Scalar<bool>(false)}});
  EXPECT_TRUE(out.at("m").Equals(x));
  EXPECT_EQ(out.at("index").scalar<int32_t>(), 0);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  model->Run("serving_default", {{"x", x}, {"p", Tensor::Scalar<bool>(true)}});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("has no value in this run"), std::string::npos) << message;
  EXPECT_NE(message.find("Switch 's"), std::string::npos) << message;
  EXPECT_NE(message.find("signature 'serving_default'"), std::string::npos) << message;
}

TEST(TfControlFlowTest, ANonScalarPredicateIsInvalidNamingTheSwitch) {
  estimator_testing::TempDir dir;
  // Declared [2]: refused at load.
  const std::string declared =
      Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT")) +
      Node("p", "Placeholder", {},
           TypeAttr("dtype", "DT_BOOL") +
               " attr { key: 'shape' value { shape { dim { size: 2 } } } }") +
      Node("cond/Switch", "Switch", {"x", "p"}, kFloatT);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, declared), {},
                                           {{"y", "cond/Switch:1"}});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'cond/Switch'"), std::string::npos) << message;
  EXPECT_NE(message.find("must be a scalar"), std::string::npos) << message;
  // Unknown shape: refused when a [2] predicate is fed.
  const std::string unknown = Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT")) +
                              Node("p", "Placeholder", {}, TypeAttr("dtype", "DT_BOOL")) +
                              Node("cond/Switch", "Switch", {"x", "p"}, kFloatT);
  auto model = TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, unknown), {},
                                        {{"y", "cond/Switch:1"}});
  EXPECT_EQ(
      CodeOf(
          [&] {
            Tensor p(kBool, Shape{2});
            p.data<bool>()[0] = true;
            p.data<bool>()[1] = false;
            model->Run("serving_default", {{"x", Tensor::FromVector<float>({1, 2})}, {"p", p}});
          },
          &message),
      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'cond/Switch'"), std::string::npos) << message;
  EXPECT_NE(message.find("must be a scalar"), std::string::npos) << message;
}

TEST(TfControlFlowTest, AControlInputNamingNoNodeIsInvalidNamingBoth) {
  estimator_testing::TempDir dir;
  const std::string text = Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT")) +
                           Node("y", "Identity", {"x", "^init_all_tables"}, kFloatT);
  const std::string path = WriteGraph(dir, text);
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "y"}});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("TF node 'y' (Identity) has control input '^init_all_tables'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("no node 'init_all_tables'"), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

// Control inputs are kept through a NoOp and on a fed placeholder: y = -x waits on `init`,
// a NoOp that waits on an Assert (x >= 0), so a negative x fails the Run.
TEST(TfControlFlowTest, ControlInputsAreFollowedThroughANoOp) {
  estimator_testing::TempDir dir;
  const std::string text =
      Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT")) + ScalarConst("zero", 0) +
      Node("ok", "LessEqual", {"zero", "x"}, kFloatT) +
      Node("check", "Assert", {"ok", "x"}, "attr { key: 'summarize' value { i: 3 } }") +
      Node("init", "NoOp", {"^check"}) + Node("y", "Neg", {"x", "^x", "^init"}, kFloatT);
  auto model =
      TfModel::LoadFrozenGraph(Env::Default(), WriteGraph(dir, text), {{"x", "x"}}, {{"y", "y"}});
  EXPECT_TRUE(model->Run("serving_default", {{"x", Tensor::Scalar<float>(2)}})
                  .at("y")
                  .Equals(Tensor::Scalar<float>(-2)));
  std::string message;
  EXPECT_EQ(CodeOf(
                [&] {
                  model->Run("serving_default", {{"x", Tensor::Scalar<float>(-2)}});
                },
                &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Assert 'check'"), std::string::npos) << message;
}

// A TF1 tf.while_loop's frame ops: Unimplemented naming the nodes, their ops, the file and
// what to do.
TEST(TfControlFlowTest, Tf1WhileLoopFramesAreUnimplementedNamingTheNodes) {
  estimator_testing::TempDir dir;
  const std::string text =
      Node("x", "Placeholder", {}, TypeAttr("dtype", "DT_FLOAT")) +
      Node("while/Enter", "Enter", {"x"},
           kFloatT + " attr { key: 'frame_name' value { s: 'while/while_context' } }") +
      Node("while/Merge", "Merge", {"while/Enter", "while/NextIteration"}, kFloatT) +
      ScalarConst("while/Less/y", 10, "while/Merge") +
      Node("while/Less", "Less", {"while/Merge", "while/Less/y"}, kFloatT) +
      Node("while/LoopCond", "LoopCond", {"while/Less"}) +
      Node("while/Switch", "Switch", {"while/Merge", "while/LoopCond"}, kFloatT) +
      Node("while/Identity", "Identity", {"while/Switch:1"}, kFloatT) +
      Node("while/add", "Add", {"while/Identity", "while/Identity"}, kFloatT) +
      Node("while/NextIteration", "NextIteration", {"while/add"}, kFloatT) +
      Node("while/Exit", "Exit", {"while/Switch"}, kFloatT);
  const std::string path = WriteGraph(dir, text);
  std::string message;
  EXPECT_EQ(
      CodeOf(
          [&] {
            TfModel::LoadFrozenGraph(Env::Default(), path, {{"x", "x"}}, {{"y", "while/Exit"}});
          },
          &message),
      ErrorCode::kUnimplemented);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("Enter x1, Exit x1, LoopCond x1, NextIteration x1"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'while/Exit' (Exit)"), std::string::npos) << message;
  EXPECT_NE(message.find("'while/Enter' (Enter)"), std::string::npos) << message;
  EXPECT_NE(message.find("TF1 while loop"), std::string::npos) << message;
  EXPECT_NE(message.find("loom::WhileLoop"), std::string::npos) << message;
}

}  // namespace
}  // namespace loom
