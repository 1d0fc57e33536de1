// TF checkpoints in the Estimator: GetVariableNames / GetVariableValue on a model_dir that
// holds the real TF 2.9 estimator checkpoint (model.ckpt-999, with TF's own state file),
// and warm start from it: a canned wide & deep model by TF's variable names, and a model
// function by var_name_to_prev_var_name.
#include "loom/estimator/tf_checkpoints.h"

#include <gtest/gtest.h>

#include "loom/estimator/canned.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/io/tf_checkpoint.h"
#include "loom/io/tf_checkpoint_test_util.h"
#include "loom/ops/array.h"
#include "loom/testing/error_of.h"

namespace loom {
namespace {

namespace fc = feature_column;
using estimator_testing::TempDir;

const std::string kTfDir = JoinPath(LOOM_SHARED_TESTDATA, "tf/tfx_estimator_ckpt");

// A model_dir as TF left it: the bundle of step 999 and TF's state file, which also names
// model.ckpt-0 and model.ckpt-1000 (deleted, as TF's Saver often leaves them listed).
void CopyTfModelDir(const std::string& dir) {
  Env* env = Env::Default();
  auto copy = [&](const std::string& from, const std::string& to) {
    ASSERT_TRUE(env->FileExists(from)) << "missing test file " << from;
    auto f = env->NewWritableFile(to);
    f->Append(ReadFileToString(env, from));
    f->Close();
  };
  copy(JoinPath(kTfDir, "model.ckpt-999.index"), JoinPath(dir, "model.ckpt-999.index"));
  copy(JoinPath(kTfDir, "model.ckpt-999.data-00000-of-00001"),
       JoinPath(dir, "model.ckpt-999.data-00000-of-00001"));
  copy(JoinPath(LOOM_SHARED_TESTDATA, "tfevents/tfx_estimator_model_dir/checkpoint"),
       JoinPath(dir, "checkpoint"));
}

RunConfig Config(const std::string& dir) {
  return {
      .model_dir = dir, .tf_random_seed = 1, .save_summary_steps = 0, .log_step_count_steps = 0};
}

using testing::ErrorOf;

TEST(TfCheckpointEstimatorTest, VariablesOfATfModelDir) {
  TempDir dir;
  CopyTfModelDir(dir.path());
  EXPECT_EQ(LatestTfCheckpoint(Env::Default(), dir.path()), dir.Join("model.ckpt-999"));
  Estimator estimator(estimator_testing::LinearModelFn, Config(dir.path()));
  std::vector<std::string> names = estimator.GetVariableNames();
  ASSERT_EQ(names.size(), 60u);
  EXPECT_EQ(names.front(), "dnn/hiddenlayer_0/bias");
  EXPECT_EQ(estimator.GetVariableValue("global_step").scalar<int64_t>(), 999);
  const Tensor bias = estimator.GetVariableValue("dnn/logits/bias");
  EXPECT_EQ(bias.shape(), Shape({1}));
  EXPECT_FLOAT_EQ(bias.scalar<float>(), -0.06890949606895447f);  // expected_tf.json's sum
  EXPECT_NE(ErrorOf([&] { estimator.GetVariableValue("nope"); }).find("'nope'"), std::string::npos);

  // Training there stops before anything is written: TF's state file stays as it was.
  const std::string state = ReadFileToString(Env::Default(), dir.Join("checkpoint"));
  Tensor x(kFloat32, {4, 2}), y(kFloat32, {4, 1});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = 0.1f * i;
  for (int i = 0; i < 4; ++i) y.data<float>()[i] = 1.f;
  const std::string err = ErrorOf([&] {
    estimator.Train(ArrayInputFn({.x = {{"x", x}}, .y = y, .batch_size = 4, .shuffle = false}),
                    {.steps = 1});
  });
  EXPECT_NE(err.find("holds TensorFlow checkpoints"), std::string::npos) << err;
  EXPECT_NE(err.find("ckpt_to_initialize_from"), std::string::npos) << err;
  EXPECT_EQ(ReadFileToString(Env::Default(), dir.Join("checkpoint")), state);
  EXPECT_EQ(Env::Default()->Glob(dir.Join("*.safetensors")).size(), 0u);

  // Without a state file the highest-step .index is found.
  Env::Default()->DeleteFile(dir.Join("checkpoint"));
  EXPECT_EQ(LatestTfCheckpoint(Env::Default(), dir.path()), dir.Join("model.ckpt-999"));
}

// The TFX taxi model's columns: nine identity columns in the linear part, three numbers
// in the DNN; TF 1.15 names, so every trainable variable is found by its own name. Both
// optimizers have learning rate 0, so the checkpoint after one step holds the warm-started
// values unchanged.
TEST(TfCheckpointEstimatorTest, CannedWideAndDeepWarmStartsFromTfByName) {
  TempDir tf_dir, dir;
  CopyTfModelDir(tf_dir.path());
  const std::vector<std::pair<std::string, int64_t>> identity = {
      {"company_xf", 1010},         {"payment_type_xf", 1010},  {"dropoff_latitude_xf", 10},
      {"dropoff_longitude_xf", 10}, {"pickup_latitude_xf", 10}, {"pickup_longitude_xf", 10},
      {"trip_start_day_xf", 31},    {"trip_start_hour_xf", 24}, {"trip_start_month_xf", 12}};
  std::vector<fc::FeatureColumnPtr> linear;
  const int64_t n = 8;
  std::map<std::string, Tensor> x;
  for (const auto& [key, buckets] : identity) {
    linear.push_back(fc::CategoricalColumnWithIdentity(key, buckets));
    Tensor ids(kInt64, {n});
    for (int64_t i = 0; i < n; ++i) ids.data<int64_t>()[i] = (3 * i + 1) % 10;
    x[key] = ids;
  }
  std::vector<fc::DenseColumnPtr> dnn;
  for (const std::string key : {"fare_xf", "trip_miles_xf", "trip_seconds_xf"}) {
    dnn.push_back(fc::NumericColumn(key));
    Tensor v(kFloat32, {n});
    for (int64_t i = 0; i < n; ++i) v.data<float>()[i] = 0.1f * i - 0.3f;
    x[key] = v;
  }
  Tensor y(kInt64, {n});
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = i % 2;

  // From the directory: its state file names model.ckpt-1000 first, which is gone.
  DNNLinearCombinedClassifier warm({.linear_feature_columns = linear,
                                    .linear_optimizer = OptimizerSpec("SGD", 0.0),
                                    .dnn_feature_columns = dnn,
                                    .dnn_optimizer = OptimizerSpec("SGD", 0.0),
                                    .dnn_hidden_units = {100, 70, 48, 34}},
                                   Config(dir.path()),
                                   WarmStartSettings{.ckpt_to_initialize_from = tf_dir.path()});
  warm.Train(ArrayInputFn({.x = x, .y = y, .batch_size = n, .shuffle = false}), {.steps = 1});

  auto tf = TfCheckpointReader::Open(Env::Default(), tf_dir.Join("model.ckpt-999"));
  int warmed = 0;
  for (const std::string& name : warm.GetVariableNames()) {
    if (!tf->Contains(name) || name == "global_step") continue;
    SCOPED_TRACE(name);
    EXPECT_TRUE(warm.GetVariableValue(name).Equals(tf->Get(name)));
    ++warmed;
  }
  EXPECT_EQ(warmed, 20);  // 10 DNN kernels and biases, 9 column weights, the bias weights
}

// A model function whose two variables have other names than in the checkpoint.
EstimatorSpec RenamedModelFn(Scope& s, const Features& f, Output labels, Mode mode) {
  Variable w(s.WithOpName("w"), Zeros(s, {3, 100}));
  Variable b(s.WithOpName("b"), Zeros(s, {100}));
  Variable out(s.WithOpName("out"), Ones(s, {100, 1}));
  Output prediction = MatMul(s, Add(s, MatMul(s, f.at("x"), w), b), out);
  Output loss = Mean(s, Square(s, Sub(s, prediction, labels)));
  return {
      .mode = mode,
      .predictions = {{"predictions", prediction}},
      .loss = loss,
      .train_op =
          train::GradientDescent({.learning_rate = 0.0}).Minimize(s, loss, train::GlobalStep(s))};
}

TEST(TfCheckpointEstimatorTest, ModelFnWarmStartsByNameMapping) {
  TempDir tf_dir;
  CopyTfModelDir(tf_dir.path());
  const std::string prefix = tf_dir.Join("model.ckpt-999");
  Tensor x(kFloat32, {4, 3}), y(kFloat32, {4, 1});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = 0.25f * i;
  for (int i = 0; i < 4; ++i) y.data<float>()[i] = 1.f;
  InputFn input = ArrayInputFn({.x = {{"x", x}}, .y = y, .batch_size = 4, .shuffle = false});
  auto tf = TfCheckpointReader::Open(Env::Default(), prefix);

  // The .index path works as well as the prefix.
  for (const std::string& from : {prefix, prefix + ".index"}) {
    TempDir dir;
    Estimator e(RenamedModelFn, Config(dir.path()), {},
                WarmStartSettings{.ckpt_to_initialize_from = from,
                                  .vars_to_warm_start = "(w|b)$",
                                  .var_name_to_prev_var_name = {{"w", "dnn/hiddenlayer_0/kernel"},
                                                                {"b", "dnn/hiddenlayer_0/bias"}}});
    e.Train(input, {.steps = 1});
    EXPECT_TRUE(e.GetVariableValue("w").Equals(tf->Get("dnn/hiddenlayer_0/kernel")));
    EXPECT_TRUE(e.GetVariableValue("b").Equals(tf->Get("dnn/hiddenlayer_0/bias")));
    EXPECT_TRUE(e.GetVariableValue("out").Equals(Tensor::FromVector<float>(
        std::vector<float>(100, 1.f), Shape{100, 1})));  // not selected: its initial value
  }

  // A name the checkpoint lacks, a shape mismatch, a checkpoint that does not exist.
  auto train_with = [&](WarmStartSettings settings) {
    TempDir dir;
    Estimator e(RenamedModelFn, Config(dir.path()), {}, std::move(settings));
    return ErrorOf([&] { e.Train(input, {.steps = 1}); });
  };
  std::string err = train_with({.ckpt_to_initialize_from = prefix, .vars_to_warm_start = "w$"});
  EXPECT_NE(err.find("no tensor 'w' for variable 'w'"), std::string::npos) << err;
  err = train_with({.ckpt_to_initialize_from = prefix,
                    .vars_to_warm_start = "w$",
                    .var_name_to_prev_var_name = {{"w", "dnn/hiddenlayer_1/kernel"}}});
  EXPECT_NE(err.find("'dnn/hiddenlayer_1/kernel' is float32[100,70] but variable 'w' is "
                     "float32[3,100]"),
            std::string::npos)
      << err;
  err = train_with({.ckpt_to_initialize_from = tf_dir.Join("model.ckpt-1000")});
  EXPECT_NE(err.find("model.ckpt-1000.index"), std::string::npos) << err;
  EXPECT_NE(err.find("does not exist"), std::string::npos) << err;
}

// A TF1 partitioned variable (graph "w/part_0", "w/part_1"; the checkpoint's full "w" in
// two slices on two shards) warm-starts Loom's unpartitioned "w" of the full shape.
TEST(TfCheckpointEstimatorTest, PartitionedTfVariableWarmStartsAFullVariable) {
  TempDir tf_dir;
  std::vector<float> w(300);
  for (int i = 0; i < 300; ++i) w[i] = 0.01f * i - 1.f;
  tf_testing::TestBundleWriter bundle(2);
  bundle.AddPartitioned(
      "w", Shape{3, 100},
      {{{{2, 1}, {0, -1}}, Tensor::FromVector<float>({w.begin() + 200, w.end()}, Shape{1, 100}), 0},
       {{{0, 2}, {0, -1}},
        Tensor::FromVector<float>({w.begin(), w.begin() + 200}, Shape{2, 100}),
        1}});
  bundle.Add("b", Tensor::FromVector<float>(std::vector<float>(100, 0.5f)), 0);
  bundle.Write(Env::Default(), tf_dir.Join("model.ckpt-5"), /*snappy=*/true);
  Tensor x(kFloat32, {4, 3}), y(kFloat32, {4, 1});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = 0.25f * i;
  for (int i = 0; i < 4; ++i) y.data<float>()[i] = 1.f;
  TempDir dir;
  Estimator e(RenamedModelFn, Config(dir.path()), {},
              WarmStartSettings{.ckpt_to_initialize_from = tf_dir.Join("model.ckpt-5"),
                                .vars_to_warm_start = "(w|b)$"});
  e.Train(ArrayInputFn({.x = {{"x", x}}, .y = y, .batch_size = 4, .shuffle = false}), {.steps = 1});
  EXPECT_TRUE(e.GetVariableValue("w").Equals(Tensor::FromVector<float>(w, Shape{3, 100})));
  EXPECT_TRUE(
      e.GetVariableValue("b").Equals(Tensor::FromVector<float>(std::vector<float>(100, 0.5f))));
}

}  // namespace
}  // namespace loom
