// ONNX export (onnx_export.h), checked by a real runtime: models trained a few steps are
// exported and run by ONNX Runtime (npm's onnxruntime-node) on test rows, which must give
// Loom's predictions within 1e-5; python3-onnx's checker (full_check) must accept every
// file. Plus the encoding's golden bytes, reading a file python3-onnx wrote, external data
// and the error for ops that do not map.
#include <gtest/gtest.h>

#include <random>

#include "loom/estimator/all_ops.h"
#include "loom/estimator/canned.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/feature_column_ops.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/estimator/onnx_export_proto.h"
#include "loom/estimator/onnx_test_util.h"
#include "loom/ops/array.h"
#include "loom/ops/control.h"
#include "loom/ops/math.h"
#include "loom/ops/math_trig.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_conv_transpose.h"
#include "loom/ops/nn_depthwise.h"
#include "loom/ops/nn_pool_argmax.h"
#include "loom/ops/reduce.h"
#include "loom/ops/scatter.h"
#include "loom/ops/space_batch.h"
#include "loom/ops/state.h"
#include "loom/ops/topk.h"
#include "loom/ops/unique.h"
#include "loom/runtime/session.h"
#include "loom/runtime/while_loop.h"
#include "loom/testing/error_of.h"
#include "loom/train/adam.h"
#include "loom/train/global_step.h"

namespace loom {
namespace {

namespace fc = feature_column;
using estimator_testing::TempDir;
using onnx_testing::ExpectNear;
using onnx_testing::ExpectOnnxCheckerPasses;
using onnx_testing::RunOnnxRuntime;

RunConfig Config(const TempDir& dir) {
  return {.model_dir = dir.Join("model"),
          .tf_random_seed = 3,
          .save_summary_steps = 0,
          .save_checkpoints_steps = 1000,
          .log_step_count_steps = 0};
}

// Every prediction of `estimator` on `x` (one batch) against ONNX Runtime's, key by key.
void ExpectOnnxMatchesLoom(Estimator& estimator, const std::map<std::string, Tensor>& x,
                           const std::string& model, const TempDir& dir) {
  std::map<std::string, Tensor> loom;
  const int64_t rows = x.begin()->second.shape().dim(0);
  for (const Prediction& batch :
       estimator.Predict(ArrayInputFn({.x = x, .batch_size = rows, .shuffle = false}),
                         {.yield_single_examples = false})) {
    loom = batch;
  }
  ASSERT_FALSE(loom.empty());
  std::map<std::string, Tensor> ort = RunOnnxRuntime(model, x, dir.path());
  ASSERT_FALSE(ort.empty());
  for (const auto& [key, value] : loom) {
    ASSERT_TRUE(ort.count(key)) << "ONNX output '" << key << "' missing";
    ExpectNear(value, ort.at(key), key);
  }
  ExpectOnnxCheckerPasses(model, dir.path());
}

std::map<std::string, data::TensorSpec> SpecsOf(const std::map<std::string, Tensor>& x) {
  std::map<std::string, data::TensorSpec> specs;
  for (const auto& [key, t] : x) {
    std::vector<int64_t> dims = t.shape().dims();
    dims.erase(dims.begin());
    specs[key] = {.dtype = t.dtype(), .shape = Shape(dims)};
  }
  return specs;
}

// Wide & deep on mixed columns: numeric, bucketized, a string vocabulary (linear ids and a
// DNN embedding), an integer identity column one-hot in the DNN and an int vocabulary.
std::map<std::string, Tensor> MixedRows(int64_t n, uint32_t seed) {
  static const std::vector<std::string> kColors = {"red", "green", "blue", "mauve", ""};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  Tensor a(kFloat32, {n}), b(kFloat32, {n, 2}), color(kString, {n}), id(kInt64, {n}),
      code(kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = u(rng);
    b.data<float>()[2 * i] = u(rng);
    b.data<float>()[2 * i + 1] = u(rng);
    color.data<std::string>()[i] = kColors[rng() % kColors.size()];   // "mauve": OOV; "": absent
    id.data<int64_t>()[i] = static_cast<int64_t>(rng() % 6) - 1;      // -1: absent
    code.data<int64_t>()[i] = 100 + static_cast<int64_t>(rng() % 4);  // 103: OOV
  }
  return {{"a", a}, {"b", b}, {"color", color}, {"id", id}, {"code", code}};
}

Tensor MixedLabels(const std::map<std::string, Tensor>& x, int64_t n_classes) {
  const int64_t n = x.at("a").shape().dim(0);
  Tensor y(kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    const float s = x.at("a").data<float>()[i] + x.at("b").data<float>()[2 * i] +
                    (x.at("color").data<std::string>()[i] == "red" ? 1.f : 0.f);
    y.data<int64_t>()[i] = s > 0.5f ? n_classes - 1 : s > -0.5f ? (n_classes > 2 ? 1 : 0) : 0;
  }
  return y;
}

TEST(OnnxExportTest, WideAndDeepMatchesOnnxRuntime) {
  TempDir dir;
  auto color = fc::CategoricalColumnWithVocabularyList("color", {"red", "green", "blue"});
  auto id = fc::CategoricalColumnWithIdentity("id", 5, /*default_value=*/0);
  auto code = fc::CategoricalColumnWithVocabularyList("code", std::vector<int64_t>{100, 101, 102},
                                                      {.default_value = 1});
  auto a = fc::NumericColumn("a");
  DNNLinearCombinedClassifier estimator(
      {.linear_feature_columns = {fc::BucketizedColumn(a, {-1, 0, 1}), color, code},
       .dnn_feature_columns = {a, fc::NumericColumn("b", {.shape = {2}}),
                               fc::EmbeddingColumn(color, {.dimension = 3}),
                               fc::IndicatorColumn(id)},
       .dnn_hidden_units = {8, 4},
       .batch_norm = true,
       .n_classes = 3},
      Config(dir));
  auto train = MixedRows(256, 1);
  estimator.Train(ArrayInputFn({.x = train,
                                .y = MixedLabels(train, 3),
                                .batch_size = 32,
                                .num_epochs = std::nullopt,
                                .shuffle = true,
                                .seed = 1}),
                  {.steps = 30});
  auto test = MixedRows(40, 2);
  const std::string model = dir.Join("wide_deep.onnx");
  OnnxExportResult r = ExportOnnx(estimator, RawServingInputReceiverFn(SpecsOf(test)), model);
  EXPECT_EQ(r.signature, "predict");
  EXPECT_TRUE(r.external_data_path.empty());
  ExpectOnnxMatchesLoom(estimator, test, model, dir);
}

TEST(OnnxExportTest, RegressorFromSavedModelMatchesOnnxRuntime) {
  TempDir dir;
  DNNRegressor estimator({.hidden_units = {6},
                          .feature_columns = {fc::NumericColumn("b", {.shape = {2}})},
                          .label_dimension = 2,
                          .activation_fn = Tanh},
                         Config(dir));
  auto train = MixedRows(128, 3);
  Tensor y(kFloat32, {128, 2});
  for (int64_t i = 0; i < 256; ++i) y.data<float>()[i] = train.at("b").data<float>()[i ^ 1];
  estimator.Train(ArrayInputFn({.x = {{"b", train.at("b")}},
                                .y = y,
                                .batch_size = 16,
                                .num_epochs = std::nullopt,
                                .shuffle = true,
                                .seed = 1}),
                  {.steps = 20});
  std::map<std::string, Tensor> test = {{"b", MixedRows(10, 4).at("b")}};
  const std::string saved =
      estimator.ExportSavedModel(dir.Join("export"), RawServingInputReceiverFn(SpecsOf(test)));
  const std::string model = dir.Join("regressor.onnx");
  ExportSavedModelToOnnx(saved, model);
  ExpectOnnxMatchesLoom(estimator, test, model, dir);
}

// A convnet on NHWC images: same and valid convolutions, max and average pooling, batch
// norm, dense layers and a softmax.
EstimatorSpec ConvNetFn(Scope& s, const Features& f, Output labels, Mode mode) {
  namespace L = layers;
  Output x = f.at("image");
  Output h =
      L::Conv2D(s, x, {.filters = 4, .kernel_size = 3, .padding = "same", .activation = Relu});
  h = L::MaxPooling2D(s, h, {.pool_size = 2});
  h = L::Conv2D(s, h,
                {.filters = 6, .kernel_size = {2, 3}, .strides = {1, 2}, .activation = Relu6});
  h = L::BatchNormalization(s, h, {.training = mode == Mode::kTrain});
  h = L::AveragePooling2D(s, h, {.pool_size = 2, .strides = 1, .padding = "same"});
  h = L::Dense(s, L::Flatten(s, h), {.units = 8, .activation = Elu});
  Output logits = L::Dense(s, h, {.units = 3});
  Output probabilities = Softmax(s.WithOpName("probabilities"), logits);
  Predictions predictions = {{"logits", logits},
                             {"probabilities", probabilities},
                             {"class_ids", ArgMax(s.WithOpName("class_ids"), logits, 1)}};
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = predictions};
  Output loss = losses::SparseSoftmaxCrossEntropy(s, labels, logits);
  Operation train_op = train::Adam({.learning_rate = 0.01}).Minimize(s, loss, train::GlobalStep(s));
  return {.mode = mode,
          .predictions = predictions,
          .loss = loss,
          .train_op = Group(s, {train_op, layers::UpdateOp(s)})};
}

TEST(OnnxExportTest, ConvNetMatchesOnnxRuntime) {
  TempDir dir;
  auto images = [](int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0, 1);
    Tensor x(kFloat32, {n, 8, 7, 2});
    for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = u(rng);
    return x;
  };
  Tensor train = images(64, 1);
  Tensor y(kInt64, {64});
  for (int64_t i = 0; i < 64; ++i)
    y.data<int64_t>()[i] = train.data<float>()[i * 112] > 0.5f ? 2 : i % 2;
  Estimator estimator(ConvNetFn, Config(dir));
  estimator.Train(ArrayInputFn({.x = {{"image", train}},
                                .y = y,
                                .batch_size = 16,
                                .num_epochs = std::nullopt,
                                .shuffle = true,
                                .seed = 1}),
                  {.steps = 10});
  std::map<std::string, Tensor> test = {{"image", images(12, 2)}};
  const std::string model = dir.Join("convnet.onnx");
  ExportOnnx(estimator, RawServingInputReceiverFn(SpecsOf(test)), model);
  ExpectOnnxMatchesLoom(estimator, test, model, dir);
}

TEST(OnnxExportTest, WeightsPastTheThresholdGoToExternalData) {
  TempDir dir;
  // String labels: the "classes" prediction maps ids to the label vocabulary.
  DNNClassifier estimator({.hidden_units = {32, 16},
                           .feature_columns = {fc::NumericColumn("b", {.shape = {2}})},
                           .label_vocabulary = {"no", "yes"}},
                          Config(dir));
  auto train = MixedRows(64, 5);
  Tensor ids = MixedLabels(train, 2), labels(kString, ids.shape());
  for (int64_t i = 0; i < ids.NumElements(); ++i)
    labels.data<std::string>()[i] = ids.data<int64_t>()[i] ? "yes" : "no";
  estimator.Train(ArrayInputFn({.x = {{"b", train.at("b")}},
                                .y = labels,
                                .batch_size = 16,
                                .num_epochs = std::nullopt,
                                .shuffle = true}),
                  {.steps = 5});
  std::map<std::string, Tensor> test = {{"b", MixedRows(9, 6).at("b")}};
  const std::string model = dir.Join("sub/ext.onnx");
  Env::Default()->CreateDirs(dir.Join("sub"));
  // 2x32 + 32 + 32x16 + 16 + 16 + 1 floats; at 1 KiB the 2 KiB kernel must leave.
  OnnxExportResult r = ExportOnnx(estimator, RawServingInputReceiverFn(SpecsOf(test)), model,
                                  {.max_inline_weight_bytes = 1024});
  EXPECT_EQ(r.external_data_path, model + ".data");
  EXPECT_GE(r.num_external_tensors, 1);
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ReadFileToString(Env::Default(), model)));
  int64_t inline_bytes = 0, external = 0;
  for (const auto& t : proto.graph().initializer()) {
    inline_bytes += static_cast<int64_t>(t.raw_data().size());
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    ++external;
    ASSERT_EQ(t.external_data_size(), 3);
    EXPECT_EQ(t.external_data(0).key(), "location");
    EXPECT_EQ(t.external_data(0).value(), "ext.onnx.data");  // relative to the model
    EXPECT_EQ(std::stoll(t.external_data(1).value()) % 4096, 0);
  }
  EXPECT_EQ(external, r.num_external_tensors);
  EXPECT_LE(inline_bytes, 1024);
  ExpectOnnxMatchesLoom(estimator, test, model, dir);
}

TEST(OnnxExportTest, UnsupportedOpsAreListedWithCountsAndNothingIsWritten) {
  TempDir dir;
  auto job = fc::CategoricalColumnWithHashBucket("job", 10);
  auto city = fc::CategoricalColumnWithVocabularyList("city", std::vector<std::string>{"a", "b"},
                                                      {.num_oov_buckets = 2});
  LinearClassifier estimator(
      {.feature_columns = {job, fc::CategoricalColumnWithHashBucket("team", 4), city,
                           fc::CrossedColumn({fc::CrossKey("job"), fc::CrossKey(city)}, 20)}},
      Config(dir));
  Tensor s(kString, {4});
  for (int i = 0; i < 4; ++i) s.data<std::string>()[i] = i % 2 ? "a" : "b";
  std::map<std::string, Tensor> x = {{"job", s}, {"team", s}, {"city", s}};
  Tensor y = Tensor::FromVector<int64_t>({0, 1, 0, 1});
  estimator.Train(ArrayInputFn({.x = x, .y = y, .batch_size = 4, .shuffle = false}), {.steps = 1});
  const std::string model = dir.Join("no.onnx");
  try {
    ExportOnnx(estimator, RawServingInputReceiverFn(SpecsOf(x)), model);
    FAIL() << "exported a model with hash buckets";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    const std::string m = e.what();
    EXPECT_NE(m.find("HashBucket x2"), std::string::npos) << m;
    EXPECT_NE(m.find("column 'job'"), std::string::npos) << m;
    EXPECT_NE(m.find("column 'city'"), std::string::npos) << m;
    EXPECT_NE(m.find("VocabularyLookup x1"), std::string::npos) << m;
    EXPECT_NE(m.find("num_oov_buckets"), std::string::npos) << m;
    EXPECT_NE(m.find("CrossIds x1"), std::string::npos) << m;
    EXPECT_NE(m.find("vocabulary column"), std::string::npos) << m;  // what to do
  }
  EXPECT_FALSE(Env::Default()->FileExists(model));
}

TEST(OnnxExportTest, ACondIsRefusedNamingItsNodes) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape({kUnknownDim, 2}));
  Output p = Placeholder(s.WithOpName("p"), kBool, Shape{});
  Output y = Cond(
      s, p, [&](const Scope& b) { return std::vector<Output>{Mul(b, x, 2.0f)}; },
      [&](const Scope& b) { return std::vector<Output>{Identity(b, x)}; })[0];
  SignatureDef sig{.method_name = "tensorflow/serving/predict"};
  sig.inputs = {{"x", {.name = "x:0", .dtype = kFloat32, .shape = x.shape()}},
                {"p", {.name = "p:0", .dtype = kBool, .shape = Shape{}}}};
  sig.outputs["y"] = {.name = y.name(), .dtype = kFloat32, .shape = y.shape()};
  const std::string model = dir.Join("cond.onnx");
  try {
    ExportOnnx(Env::Default(), model, graph, {}, {{"predict", sig}});
    FAIL() << "exported a cond";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    const std::string m = e.what();
    EXPECT_NE(m.find("Merge x1 (node 'cond/Merge')"), std::string::npos) << m;
    EXPECT_NE(m.find("Switch x"), std::string::npos) << m;
    EXPECT_NE(m.find("not exported as an ONNX If"), std::string::npos) << m;
  }
  EXPECT_FALSE(Env::Default()->FileExists(model));
}

// What the composed rules (onnx_ops_composed.cc) cannot build is refused naming the node and
// what would make it exportable: SpaceToBatchND / BatchToSpaceND and MaxPoolWithArgmax on
// unknown spatial dims, a Cumprod along an unknown or too long axis.
TEST(OnnxExportTest, UnmappedOpsAreRefusedNamingThem) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape({kUnknownDim, kUnknownDim, 4, 1}));
  Output y =
      BatchToSpaceND(s, SpaceToBatchND(s, x, {2, 2}, {{0, 0}, {0, 0}}), {2, 2}, {{0, 0}, {0, 0}});
  Output long_axis = Placeholder(s.WithOpName("long"), kFloat32, Shape({2, 2000}));
  // The long Cumprod first (the refusal names the first node of each op): in one call's
  // arguments the order would be the compiler's (g++ and clang differ).
  Output long_sum = Sum(s, Cumprod(s, long_axis, 1));
  Output unknown_axis =
      Cumprod(s, Atan2(s, y, MaxPoolWithArgmax(s, x, {1, 1}, {1, 1}, "SAME").output), 1);
  Output z = Add(s, unknown_axis, long_sum);
  SignatureDef sig{.method_name = "tensorflow/serving/predict"};
  sig.inputs = {{"x", {.name = "x:0", .dtype = kFloat32, .shape = x.shape()}},
                {"long", {.name = "long:0", .dtype = kFloat32, .shape = long_axis.shape()}}};
  sig.outputs["z"] = {.name = z.name(), .dtype = kFloat32, .shape = z.shape()};
  const std::string model = dir.Join("unmapped.onnx");
  const std::string m = testing::ErrorOf(
      [&] {
        ExportOnnx(Env::Default(), model, graph, {}, {{"predict", sig}});
      },
      ErrorCode::kUnimplemented);
  for (const char* want :
       {"SpaceToBatchND x1", "BatchToSpaceND x1", "dims after the batch must be known",
        "MaxPoolWithArgmax x1", "convert ONNX MaxPool's NCHW Indices", "Cumprod x2",
        "at most 1024 (it is 2000)"}) {
    EXPECT_NE(m.find(want), std::string::npos) << want << " in " << m;
  }
  EXPECT_EQ(m.find("Atan2"), std::string::npos) << m;
  EXPECT_FALSE(Env::Default()->FileExists(model));
}

// A [2, 2, 2, 3] depthwise filter of distinct values.
Output DepthwiseFilter(const Scope& s) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = 0.1f * static_cast<float>(i % 7) - 0.25f;
  return Const(s, Tensor::FromVector<float>(v, {2, 2, 2, 3}));
}

// A [2, 2, 3, 2] transposed-convolution filter (3 output channels, 2 input ones).
Output TransposeFilter(const Scope& s) {
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = 0.05f * static_cast<float>(i % 11) - 0.2f;
  return Const(s, Tensor::FromVector<float>(v, {2, 2, 3, 2}));
}

// The op table beyond what the models above use: each output is one mapped op (or a few),
// run by Loom's Session and by ONNX Runtime on the same inputs.
TEST(OnnxExportTest, OpTableMatchesOnnxRuntime) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape({kUnknownDim, 3, 4}));
  Output ids = Placeholder(s.WithOpName("ids"), kInt64, Shape({kUnknownDim}));
  const TopK top = TopKV2(s, x, 2);
  std::map<std::string, Output> out = {
      {"top_values", top.values},
      {"top_indices", top.indices},
      // Python's // and % on negative operands (ids below: -1, 0, 2, 5, 3; -1 // 3 = -1 and
      // 5 // -2 = -3, where ONNX's integer Div truncates to 0 and -2), floats among x's.
      {"floordiv", FloorDiv(s, x, 0.3f)},
      {"floormod", FloorMod(s, x, -0.3f)},
      {"ifloordiv", FloorDiv(s, ids, int64_t{-2})},
      {"ifloordiv3", FloorDiv(s, ids, int64_t{3})},
      {"ifloormod", FloorMod(s, ids, int64_t{-3})},
      {"ifloormod3", FloorMod(s, ids, int64_t{3})},
      {"range", Range(s, int64_t{1}, int64_t{10}, int64_t{3})},
      {"frange", Range(s, 0.5f, 3.0f, 0.75f)},
      {"cumsum", Cumsum(s, x, 1, {.exclusive = true, .reverse = true})},
      {"icumsum", Cumsum(s, ids)},
      {"where", Where(s, Greater(s, x, 0.f))},
      {"trig", Add(s, Add(s, Sin(s, x), Cos(s, x)), Add(s, Tan(s, x), Atan(s, x)))},
      {"arc", Add(s, Asin(s, Mul(s, x, 0.9f)), Acos(s, Mul(s, x, 0.9f)))},
      {"hyperbolic", Add(s, Add(s, Sinh(s, x), Cosh(s, x)), Add(s, Expm1(s, x), Erf(s, x)))},
      {"ceil", Ceil(s, Mul(s, x, 4.f))},
      // x as [?, 3, 2, 2] images (2 channels), a channel multiplier of 3: ONNX's group = 2.
      {"depthwise",
       DepthwiseConv2dNative(s, Reshape(s, x, {-1, 3, 2, 2}), DepthwiseFilter(s), {1, 1}, "SAME")},
      // [?, 3, 2, 2] -> [5, 5, 2, 3] (SAME at strides 2 x 1: one padded row and column at
      // the end) and [5, 7, 5, 3] (VALID at stride 2: the last row and column are
      // output_padding, reached by no window).
      {"transposed_same",
       Conv2DTranspose(s, Reshape(s, x, {-1, 3, 2, 2}), TransposeFilter(s),
                       Const(s, Tensor::FromVector<int64_t>({5, 5, 2, 3})), {2, 1}, "SAME")},
      {"transposed_valid",
       Conv2DTranspose(s, Reshape(s, x, {-1, 3, 2, 2}), TransposeFilter(s),
                       Const(s, Tensor::FromVector<int32_t>({5, 7, 5, 3})), {2, 2}, "VALID")},
      {"depthwise_strided",
       DepthwiseConv2dNative(s, Reshape(s, x, {-1, 3, 2, 2}), DepthwiseFilter(s), {2, 1}, "VALID")},
      // Dilated (ONNX's dilations): the 2x2 filter spans 3 rows at a rate of 2, SAME; the
      // transposed one from [?, 3, 2, 2] to [5, 5, 4, 3] spans 3 x 3 (rates 2 x 2), VALID.
      {"depthwise_dilated", DepthwiseConv2dNative(s, Reshape(s, x, {-1, 3, 2, 2}),
                                                  DepthwiseFilter(s), {1, 1}, "SAME", {2, 1})},
      {"transposed_dilated", Conv2DTranspose(s, Reshape(s, x, {-1, 3, 2, 2}), TransposeFilter(s),
                                             Const(s, Tensor::FromVector<int64_t>({5, 5, 4, 3})),
                                             {1, 1}, "VALID", {2, 2})},
      // atan2 in every quadrant and on both axes: x against round(2 sin(7x)) (-2 .. 2, zeros
      // where |sin| < 1/4), and a broadcast [4] y of 0.5, -0.5, 0, 0 against x.
      {"atan2", Atan2(s, x, Round(s, Mul(s, Sin(s, Mul(s, x, 7.f)), 2.f)))},
      {"atan2_broadcast",
       Atan2(s, Const(s, Tensor::FromVector<float>({0.5f, -0.5f, 0.f, 0.f})), x)},
      {"cumprod", Cumprod(s, x, 2)},
      {"cumprod_exclusive_reverse", Cumprod(s, x, 1, {.exclusive = true, .reverse = true})},
      {"cumprod_int",
       Cumprod(s, Cast(s, Add(s, Round(s, Mul(s, x, 2.f)), 3.f), kInt64), 2, {.exclusive = true})},
      // [5, 3, 2, 2] padded to [5, 4, 4, 2] and blocked 1 x 2: [10, 4, 2, 2]; and back.
      {"space_to_batch", SpaceToBatchND(s, Reshape(s, x, {-1, 3, 2, 2}), {1, 2}, {{1, 0}, {0, 2}})},
      {"batch_to_space",
       BatchToSpaceND(s, SpaceToBatchND(s, Reshape(s, x, {-1, 3, 2, 2}), {1, 2}, {{1, 0}, {0, 2}}),
                      {1, 2}, {{1, 0}, {0, 2}})},
      // Ties (x rounded to halves) go to a window's first maximum in both.
      {"argmax_values",
       MaxPoolWithArgmax(s, Reshape(s, x, {-1, 3, 2, 2}), {2, 2}, {1, 1}, "SAME").output},
      {"argmax_batch", MaxPoolWithArgmax(s, Reshape(s, x, {-1, 3, 2, 2}), {2, 2}, {1, 1}, "SAME",
                                         {.include_batch_in_index = true})
                           .argmax},
      {"argmax_ties", MaxPoolWithArgmax(s, Round(s, Mul(s, Reshape(s, x, {-1, 3, 2, 2}), 2.f)),
                                        {2, 1}, {1, 1}, "VALID", {.argmax_dtype = kInt32})
                          .argmax},
      {"unique", Unique(s, FloorMod(s, ids, int64_t{3})).y},
      {"unique_idx", Unique(s, FloorMod(s, ids, int64_t{3})).idx},
      {"gather_nd", GatherNd(s, x, Const(s, Tensor::FromVector<int64_t>({1, 2, 0, 0}, {2, 2})))},
      // The tuple (2, 1) twice: its rows add up; the shape is a computed [3, 4, 4].
      {"scatter_nd", ScatterNd(s, Const(s, Tensor::FromVector<int32_t>({2, 1, 0, 3, 2, 1}, {3, 2})),
                               Reshape(s, Slice(s, x, {0, 0, 0}, {3, 1, -1}), {3, 4}),
                               Concat(s,
                                      {Const(s, Tensor::FromVector<int64_t>({3, 4})),
                                       Slice(s, ShapeOf(s, x), {2}, {1})},
                                      0))},
      // Segment -1 drops its row; segment 3 stays empty.
      {"segment_sum",
       UnsortedSegmentSum(s, x, Const(s, Tensor::FromVector<int64_t>({2, -1, 0, 2, 1})), 4)},
      {"strided",
       StridedSlice(s, x, {0, 1, 0}, {0, 3, -1}, {1, 1, 2}, {.begin_mask = 1, .end_mask = 1})},
      {"last_row", StridedSlice(s, x, {0, -1}, {0, 0}, {1, 1},
                                {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 2})},
      {"new_axis",
       StridedSlice(s, x, {0, 0, 2}, {0, 0, 3}, {1, 1, 1},
                    {.begin_mask = 1, .end_mask = 1, .shrink_axis_mask = 4, .new_axis_mask = 2})},
      {"reversed",
       StridedSlice(s, x, {0, 0, 0}, {0, 0, 0}, {1, 1, -1}, {.begin_mask = 7, .end_mask = 7})},
      {"padded", Pad(s, x, {{0, 0}, {1, 2}, {0, 1}}, 0.5)},
      {"tiled", Tile(s, x, {1, 2, 1})},
      {"split", Split(s, x, 2, 2)[1]},
      {"transposed", Transpose(s, x, {0, 2, 1})},
      {"sliced", Slice(s, x, {0, 1, 1}, {-1, 2, -1})},
      {"squeezed", Squeeze(s, Mean(s, x, {2}, {.keep_dims = true}), {2})},
      {"expanded", ExpandDims(s, Max(s, x, {1, 2}), -1)},
      {"prod", Prod(s, x, {1})},
      {"min_all", Min(s, x)},
      {"clipped", ClipByValue(s, x, -0.5f, 0.5f)},
      {"select", Select(s, Greater(s, x, 0.f), x, Neg(s, x))},
      {"math", Add(s, Log1p(s, Abs(s, x)), Rsqrt(s, Add(s, Square(s, x), 1.f)))},
      // x * 4 puts halves in (0.5 / 4 is x's first element below): Round takes them to even.
      {"rounded", Round(s, Mul(s, x, 4.f))},
      {"leaky", LeakyRelu(s, x, 0.1)},
      {"log_softmax", LogSoftmax(s, x, 1)},
      {"argmin", ArgMin(s, x, 2)},
      {"batch_matmul", BatchMatMul(s, x, x, {.transpose_b = true})},
      {"concat", Concat(s, {x, Relu6(s, Mul(s, x, 4.f))}, 1)},
      {"bucket", feature_column::Bucketize(s, x, {-0.5, 0, 0.5})},
      {"one_hot", OneHot(s, ids, 4, 2.0, -1.0, 0)},
      {"classes", feature_column::IdsToStrings(s, ids)},
      {"not_two", Cast(s, NotEqual(s, ids, int64_t{2}), kFloat32)},
      {"lookup", feature_column::VocabularyLookup(s, ids, std::vector<int64_t>{2, 3, 0},
                                                  {.default_value = 7})},
      {"checked", feature_column::CheckIds(s, ids, 4, 1, "ids")},
      // What the Python front end's set_shape builds.
      {"ensured", s.AddNode(AllOps().Get("EnsureShape"), {x},
                            {{"shape", AttrValue(Shape({kUnknownDim, 3, 4}))}}, "EnsureShape")
                      ->output(0)},
  };
  SignatureDef sig{.method_name = "tensorflow/serving/predict"};
  sig.inputs = {{"x", {.name = "x:0", .dtype = kFloat32, .shape = x.shape()}},
                {"ids", {.name = "ids:0", .dtype = kInt64, .shape = ids.shape()}}};
  for (const auto& [key, o] : out)
    sig.outputs[key] = {.name = o.name(), .dtype = o.dtype(), .shape = o.shape()};
  const std::string model = dir.Join("ops.onnx");
  ExportOnnx(Env::Default(), model, graph, {}, {{"predict", sig}}, {.opset = 17});

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor xv(kFloat32, {5, 3, 4});
  for (int64_t i = 0; i < xv.NumElements(); ++i) xv.data<float>()[i] = u(rng);
  xv.data<float>()[0] = 0.5f;     // on a bucket boundary
  xv.data<float>()[1] = 0.625f;   // x * 4 = 2.5: Round gives 2
  xv.data<float>()[2] = -0.375f;  // x * 4 = -1.5: Round gives -2
  Tensor idv = Tensor::FromVector<int64_t>({-1, 0, 2, 5, 3});
  graph.Finalize();
  Session session(graph);
  std::vector<Output> fetches;
  for (const auto& [key, o] : out) fetches.push_back(o);
  std::vector<Tensor> loom = session.Run({{x, xv}, {ids, idv}}, fetches);
  auto ort = RunOnnxRuntime(model, {{"x", xv}, {"ids", idv}}, dir.path());
  ASSERT_EQ(ort.size(), out.size());
  size_t i = 0;
  for (const auto& [key, o] : out) {
    ASSERT_TRUE(ort.count(key)) << key;
    EXPECT_EQ(ort.at(key).shape(), loom[i].shape()) << key;
    ExpectNear(loom[i++], ort.at(key), key);
  }
  ExpectOnnxCheckerPasses(model, dir.path());
  EXPECT_THROW(ExportOnnx(Env::Default(), model, graph, {}, {{"predict", sig}}, {.opset = 18}),
               Error);
}

// protoc --decode=loom.onnx.ModelProto loom/io/proto/onnx.proto shows it as text.
constexpr const char* kTinyGolden =
    "080812046c6f6f6d32407369676e617475726520277072656469637427202874656e736f72666c6f772f7365"
    "7276696e672f7072656469637429206f662061204c6f6f6d206d6f64656c3af6010a220a01780a017712084d"
    "61744d756c3a301a084d61744d756c3a3022064d61744d756c0a300a084d61744d756c3a300a09436f6e7374"
    "5f313a301209426961734164643a301a09426961734164643a3022034164640a1e0a09426961734164643a30"
    "1203793a301a03793a3022075369676d6f69640a150a03793a301201791a017922084964656e746974791207"
    "707265646963742a130802080110014201774a080000003f000080bf2a15080110014209436f6e73745f313a"
    "304a040000803e5a180a017812130a110801120d0a07120562617463680a02080262180a017912130a110801"
    "120d0a07120562617463680a02080142040a00100d72140a097369676e6174757265120770726564696374";

// y = sigmoid(x W + b): the encoding of a tiny graph, byte for byte.
TEST(OnnxExportTest, GoldenBytesOfATinyGraph) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape({kUnknownDim, 2}));
  Variable w(s.WithOpName("w"), Const(s, Tensor::FromVector<float>({0.5f, -1.f}, {2, 1})));
  Output y = Sigmoid(s.WithOpName("y"),
                     BiasAdd(s, MatMul(s, x, w), Const(s, Tensor::FromVector<float>({0.25f}))));
  SignatureDef sig{.method_name = "tensorflow/serving/predict",
                   .inputs = {{"x", {.name = "x:0", .dtype = kFloat32, .shape = x.shape()}}},
                   .outputs = {{"y", {.name = "y:0", .dtype = kFloat32, .shape = y.shape()}}}};
  onnx::ModelProto model =
      ToOnnxModel(graph, {{"w", Tensor::FromVector<float>({0.5f, -1.f}, {2, 1})}}, "predict", sig);
  std::string bytes;
  ASSERT_TRUE(model.SerializeToString(&bytes));
  std::string hex;
  for (unsigned char c : bytes) {
    static const char* digits = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  EXPECT_EQ(hex, kTinyGolden) << "decode with: protoc --decode=loom.onnx.ModelProto "
                                 "loom/io/proto/onnx.proto";
}

// A while loop has no ONNX translation: the export fails naming the While node and why.
TEST(OnnxExportTest, AWhileLoopIsAClearError) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape({2}));
  Output y = WhileLoop(
      s, [](const Scope& b, const std::vector<Output>& v) { return Less(b, Sum(b, v[0]), 10.f); },
      [](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{Mul(b, v[0], 2.f)};
      },
      {x})[0];
  SignatureDef sig{.method_name = "tensorflow/serving/predict",
                   .inputs = {{"x", {.name = "x:0", .dtype = kFloat32, .shape = x.shape()}}},
                   .outputs = {{"y", {.name = y.name(), .dtype = kFloat32, .shape = y.shape()}}}};
  try {
    ToOnnxModel(graph, {}, "predict", sig);
    FAIL() << "exported a while loop";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented);
    const std::string m = e.what();
    EXPECT_NE(m.find("While x1 (node 'while/While')"), std::string::npos) << m;
    EXPECT_NE(m.find("no ONNX Loop translation"), std::string::npos) << m;
  }
}

// Our onnx.proto reads what python3-onnx 1.12 wrote (testdata/onnx/tiny_ext.onnx): the
// field numbers agree, external data entries included.
TEST(OnnxExportTest, ReadsAFileWrittenByPythonOnnx) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(
      ReadFileToString(Env::Default(), std::string(LOOM_SHARED_TESTDATA) + "/onnx/tiny_ext.onnx")));
  EXPECT_EQ(model.ir_version(), 8);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).version(), 13);
  const onnx::GraphProto& g = model.graph();
  ASSERT_EQ(g.node_size(), 3);
  EXPECT_EQ(g.node(0).op_type(), "MatMul");
  EXPECT_EQ(g.node(2).op_type(), "Relu");
  ASSERT_EQ(g.initializer_size(), 2);
  EXPECT_EQ(g.initializer(0).name(), "W");
  EXPECT_EQ(g.initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(g.initializer(1).external_data(1).value(), "24");  // offset
  EXPECT_EQ(g.input(0).type().tensor_type().shape().dim(1).dim_value(), 3);
  EXPECT_TRUE(model.unknown_fields().empty() && g.unknown_fields().empty());
}

}  // namespace
}  // namespace loom
