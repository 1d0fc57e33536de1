// Canned estimators trained on a generated tabular dataset with known structure: the label
// depends on a categorical feature crossed with a bucketized numeric one (an XOR a linear
// model can only learn through the cross), plus an identity-column effect. Each estimator
// must beat the trivial baseline (majority class / mean) by a clear margin.
#include "loom/estimator/canned.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>

#include "loom/estimator/estimator_test_util.h"
#include "loom/ops/math.h"
#include "loom/testing/sanitizers.h"
#include "loom/train/adam.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/learning_rate.h"

namespace loom {
namespace {

namespace fc = feature_column;
using estimator_testing::TempDir;

struct Tabular {
  std::map<std::string, Tensor> x;
  Tensor binary;      // int64 [n]: Bernoulli(sigmoid(4 z + 2 [job < 5] - 1))
  Tensor multiclass;  // int64 [n]: 2 if job < 5, else 1 if z > 0, else 0
  Tensor value;       // float32 [n]: 3 z + 2 [job < 5] + 0.2 (age - 50) / 10 + N(0, 0.5)
};

// z = +1 when (city in {paris, lima}) == (age >= 45), else -1.
Tabular MakeTabular(int64_t n, uint32_t seed) {
  static const std::vector<std::string> kCities = {"paris", "tokyo", "lima", "oslo"};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> age_dist(18, 80), unit(0, 1);
  std::uniform_int_distribution<int> city_dist(0, 3), job_dist(0, 19);
  std::normal_distribution<float> noise(0, 0.5f);
  Tensor age(kFloat32, {n}), city(kString, {n}), job(kInt64, {n});
  Tabular t{{}, Tensor(kInt64, {n}), Tensor(kInt64, {n}), Tensor(kFloat32, {n})};
  for (int64_t i = 0; i < n; ++i) {
    const float a = age_dist(rng);
    const int c = city_dist(rng);
    const int64_t j = job_dist(rng);
    age.data<float>()[i] = a;
    city.data<std::string>()[i] = kCities[c];
    job.data<int64_t>()[i] = j;
    const bool group = c == 0 || c == 2;
    const float z = group == (a >= 45) ? 1.f : -1.f;
    const float job_effect = j < 5 ? 2.f : 0.f;
    const float logit = 4 * z + job_effect - 1;
    t.binary.data<int64_t>()[i] = unit(rng) < 1 / (1 + std::exp(-logit)) ? 1 : 0;
    t.multiclass.data<int64_t>()[i] = j < 5 ? 2 : (z > 0 ? 1 : 0);
    t.value.data<float>()[i] = 3 * z + job_effect + 0.2f * (a - 50) / 10 + noise(rng);
  }
  t.x = {{"age", age}, {"city", city}, {"job", job}};
  return t;
}

const Tabular& TrainData() {
  static const Tabular t = MakeTabular(4000, 1);
  return t;
}
const Tabular& TestData() {
  static const Tabular t = MakeTabular(1000, 2);
  return t;
}

InputFn TrainInput(const Tensor& y) {
  return ArrayInputFn({.x = TrainData().x,
                       .y = y,
                       .batch_size = 64,
                       .num_epochs = std::nullopt,
                       .shuffle = true,
                       .seed = 7});
}
InputFn TestInput(const Tensor& y) {
  return ArrayInputFn({.x = TestData().x, .y = y, .batch_size = 500, .shuffle = false});
}

double MajorityBaseline(const Tensor& labels, int64_t n_classes) {
  std::vector<int64_t> counts(n_classes);
  for (int64_t v : labels.flat<int64_t>()) ++counts[v];
  return static_cast<double>(*std::max_element(counts.begin(), counts.end())) /
         labels.NumElements();
}

// Mean squared error of predicting the training mean.
double MeanBaselineMse(const Tensor& test, const Tensor& train) {
  double mean = 0;
  for (float v : train.flat<float>()) mean += v / train.NumElements();
  double mse = 0;
  for (float v : test.flat<float>()) mse += (v - mean) * (v - mean) / test.NumElements();
  return mse;
}

RunConfig Config(const TempDir& dir) {
  return {.model_dir = dir.path(),
          .tf_random_seed = 42,
          .save_summary_steps = 0,
          .log_step_count_steps = 0};
}

// The columns of each model family.
auto AgeBuckets() { return fc::BucketizedColumn(fc::NumericColumn("age"), {30, 45, 60}); }
auto City() {
  return fc::CategoricalColumnWithVocabularyList("city", {"paris", "tokyo", "lima", "oslo"});
}
auto Job() { return fc::CategoricalColumnWithIdentity("job", 20); }
std::vector<fc::FeatureColumnPtr> LinearColumns() {
  auto age = AgeBuckets();
  auto city = City();
  return {age, city, Job(), fc::CrossedColumn({city, age}, 64)};
}
std::vector<fc::DenseColumnPtr> DnnColumns() {
  return {fc::NumericColumn(
              "age", {.normalizer_fn = [](const Scope& s,
                                          Output x) { return Div(s, Sub(s, x, 50.0f), 20.0f); }}),
          fc::IndicatorColumn(City()), fc::EmbeddingColumn(Job(), {.dimension = 4})};
}

bool HasVariable(const Estimator& e, const std::string& name) {
  auto names = e.GetVariableNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(CannedEstimatorTest, LinearClassifierLearnsTheCross) {
  TempDir dir;
  LinearClassifier classifier({.feature_columns = LinearColumns()}, Config(dir));
  classifier.Train(TrainInput(TrainData().binary), {.max_steps = 600});
  auto m = classifier.Evaluate(TestInput(TestData().binary));
  const double baseline = MajorityBaseline(TestData().binary, 2);
  std::printf("LinearClassifier: accuracy %.3f auc %.3f (majority baseline %.3f)\n", m["accuracy"],
              m["auc"], baseline);
  EXPECT_GT(m["accuracy"], 0.88);
  EXPECT_GT(m["accuracy"], baseline + 0.3);
  EXPECT_GT(m["auc"], 0.9);
  EXPECT_NEAR(m["accuracy_baseline"], baseline, 1e-3);
  EXPECT_EQ(m["global_step"], 600);
  EXPECT_TRUE(HasVariable(classifier, "linear/linear_model/age_bucketized_X_city/weights"));
  EXPECT_TRUE(HasVariable(classifier, "linear/linear_model/bias_weights"));

  // Predictions: one example at a time, with TF's keys.
  int64_t count = 0, correct = 0;
  for (const auto& p : classifier.Predict(TestInput(Tensor()))) {
    ASSERT_EQ(p.at("probabilities").NumElements(), 2);
    const int64_t id = p.at("class_ids").flat<int64_t>()[0];
    EXPECT_EQ(p.at("classes").flat<std::string>()[0], std::to_string(id));
    correct += id == TestData().binary.flat<int64_t>()[count];
    ++count;
  }
  EXPECT_EQ(count, 1000);
  EXPECT_NEAR(static_cast<double>(correct) / count, m["accuracy"], 1e-6);

  // Exported and served without the model function: the vocabulary lookup, bucketize and
  // cross ops load from the registry, and the classification signature is the default.
  std::string exported = classifier.ExportSavedModel(
      dir.Join("export"), RawServingInputReceiverFn({{"age", {kFloat32, Shape{}}},
                                                     {"city", {kString, Shape{}}},
                                                     {"job", {kInt64, Shape{}}}}));
  auto predictor = SavedModelPredictor::Load(exported);
  auto served = predictor->Predict({{"age", TestData().x.at("age").Slice(0, 3)},
                                    {"city", TestData().x.at("city").Slice(0, 3)},
                                    {"job", TestData().x.at("job").Slice(0, 3)}});
  ASSERT_EQ(served.at("scores").shape(), (Shape{3, 2}));
  ASSERT_EQ(served.at("classes").dtype(), kString);
  int row = 0;
  for (const auto& p : classifier.Predict(TestInput(Tensor()))) {
    EXPECT_EQ(served.at("classes").flat<std::string>()[row],
              p.at("classes").flat<std::string>()[0]);
    EXPECT_NEAR(served.at("scores").flat<float>()[2 * row + 1],
                p.at("probabilities").flat<float>()[1], 1e-6);
    if (++row == 3) break;
  }
}

TEST(CannedEstimatorTest, LinearRegressorBeatsTheMean) {
  TempDir dir;
  LinearRegressor regressor({.feature_columns = LinearColumns()}, Config(dir));
  regressor.Train(TrainInput(TrainData().value), {.max_steps = 600});
  auto m = regressor.Evaluate(TestInput(TestData().value));
  const double baseline = MeanBaselineMse(TestData().value, TrainData().value);
  std::printf("LinearRegressor: mse %.3f (mean baseline %.3f)\n", m["average_loss"], baseline);
  EXPECT_LT(m["average_loss"], 0.15 * baseline);
}

TEST(CannedEstimatorTest, DNNClassifierMultiClass) {
  TempDir dir;
  DNNClassifier classifier({.hidden_units = {32, 16},
                            .feature_columns = DnnColumns(),
                            .n_classes = 3,
                            .optimizer = OptimizerSpec("Adam", 0.01)},
                           Config(dir));
  classifier.Train(TrainInput(TrainData().multiclass), {.max_steps = 600});
  auto m = classifier.Evaluate(TestInput(TestData().multiclass));
  const double baseline = MajorityBaseline(TestData().multiclass, 3);
  std::printf("DNNClassifier (3 classes): accuracy %.3f (majority baseline %.3f)\n", m["accuracy"],
              baseline);
  EXPECT_GT(m["accuracy"], 0.9);
  EXPECT_GT(m["accuracy"], baseline + 0.4);
  EXPECT_TRUE(HasVariable(classifier, "dnn/hiddenlayer_1/kernel"));
  EXPECT_TRUE(HasVariable(classifier, "dnn/logits/bias"));
  EXPECT_TRUE(HasVariable(
      classifier, "dnn/input_from_feature_columns/input_layer/job_embedding/embedding_weights"));
}

TEST(CannedEstimatorTest, DNNRegressorWithDropoutAndAnOptimizerFactory) {
  TempDir dir;
  DNNRegressor regressor(
      {.hidden_units = {32, 16},
       .feature_columns = DnnColumns(),
       .optimizer =
           [] { return std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = 0.01}); },
       .dropout = 0.1},
      Config(dir));
  regressor.Train(TrainInput(TrainData().value), {.max_steps = 600});
  auto m = regressor.Evaluate(TestInput(TestData().value));
  const double baseline = MeanBaselineMse(TestData().value, TrainData().value);
  std::printf("DNNRegressor: mse %.3f (mean baseline %.3f)\n", m["average_loss"], baseline);
  EXPECT_LT(m["average_loss"], 0.1 * baseline);
  EXPECT_NEAR(m["label/mean"], 0.48, 0.3);  // E[y] = 0 + 2 * 0.25 + 0.2 * (49 - 50) / 10
}

TEST(CannedEstimatorTest, DNNRegressorWithBatchNormAndTheDefaultOptimizer) {
  TempDir dir;
  DNNRegressor regressor(
      {.hidden_units = {32, 16}, .feature_columns = DnnColumns(), .batch_norm = true}, Config(dir));
  // Evaluation normalizes with the moving statistics, which move with momentum 0.999 (as
  // TF's) and lag behind the growing activations while training, so they need a few
  // thousand steps to settle (at 2000 steps the evaluation loss is still about 6).
  // Under a sanitizer (100x slower here) 400 steps run the same code paths; the quality
  // bar needs the 4000 and is checked by the Release build.
  const int64_t steps = testing::kSanitizerBuild ? 400 : 4000;
  regressor.Train(TrainInput(TrainData().value), {.max_steps = steps});
  auto m = regressor.Evaluate(TestInput(TestData().value));
  const double baseline = MeanBaselineMse(TestData().value, TrainData().value);
  std::printf("DNNRegressor with batch norm: mse %.3f (mean baseline %.3f)\n", m["average_loss"],
              baseline);
  EXPECT_TRUE(std::isfinite(m["average_loss"]));
  if (!testing::kSanitizerBuild) {
    EXPECT_LT(m["average_loss"], 0.25 * baseline);
  }
  Tensor moving_mean = regressor.GetVariableValue("dnn/batchnorm_0/moving_mean");
  double total = 0;
  for (float v : moving_mean.flat<float>()) total += std::abs(v);
  EXPECT_GT(total, 0);  // the moving statistics were updated while training
}

TEST(CannedEstimatorTest, DNNLinearCombinedClassifierWithDefaultOptimizers) {
  TempDir dir;
  DNNLinearCombinedClassifier classifier({.linear_feature_columns = LinearColumns(),
                                          .dnn_feature_columns = DnnColumns(),
                                          .dnn_hidden_units = {16}},
                                         Config(dir));
  auto result = classifier.Train(TrainInput(TrainData().binary), {.max_steps = 600});
  EXPECT_EQ(result.global_step, 600);  // one global step per step, not one per optimizer
  auto m = classifier.Evaluate(TestInput(TestData().binary));
  const double baseline = MajorityBaseline(TestData().binary, 2);
  std::printf("DNNLinearCombinedClassifier: accuracy %.3f auc %.3f (majority baseline %.3f)\n",
              m["accuracy"], m["auc"], baseline);
  EXPECT_GT(m["accuracy"], 0.88);
  EXPECT_GT(m["accuracy"], baseline + 0.3);
  // Both parts trained, each with its default optimizer: the slots of FTRL (linear) and
  // Adagrad (dnn) moved from their initial accumulator value 0.1.
  EXPECT_GT(classifier.GetVariableValue("linear/linear_model/bias_weights/Ftrl").scalar<float>(),
            0.2f);
  EXPECT_GT(classifier.GetVariableValue("dnn/logits/bias/Adagrad").scalar<float>(), 0.2f);
  EXPECT_TRUE(HasVariable(classifier, "dnn/hiddenlayer_0/kernel"));
}

TEST(CannedEstimatorTest, DNNLinearCombinedRegressorBeatsTheMean) {
  TempDir dir;
  DNNLinearCombinedRegressor regressor({.linear_feature_columns = LinearColumns(),
                                        .dnn_feature_columns = DnnColumns(),
                                        .dnn_optimizer = OptimizerSpec("Adam", 0.01),
                                        .dnn_hidden_units = {16}},
                                       Config(dir));
  regressor.Train(TrainInput(TrainData().value), {.max_steps = 600});
  auto m = regressor.Evaluate(TestInput(TestData().value));
  const double baseline = MeanBaselineMse(TestData().value, TrainData().value);
  std::printf("DNNLinearCombinedRegressor: mse %.3f (mean baseline %.3f)\n", m["average_loss"],
              baseline);
  EXPECT_LT(m["average_loss"], 0.15 * baseline);
}

// A learning-rate schedule given through either form that builds it in the model's graph
// (a name with a learning-rate function, or a factory taking the Scope) is followed: the
// rate is 0.05 up to step 99 and 0 after (PiecewiseConstant gives values[0] while the step
// <= boundaries[0], and the update of step t reads t), so plain SGD moves the weights in the
// first 100 steps and leaves them exactly as they are in the next 100.
TEST(CannedEstimatorTest, ScheduledOptimizerFollowsTheSchedule) {
  auto schedule = [](const Scope& s) {
    return train::PiecewiseConstant(s, train::GlobalStep(s), {99}, {0.05, 0.0});
  };
  const std::vector<std::pair<std::string, OptimizerSpec>> cases = {
      {"name and learning-rate function", OptimizerSpec("SGD", schedule)},
      {"factory taking the Scope", [schedule](const Scope& s) {
         return std::make_unique<train::GradientDescent>(
             train::GradientDescentOptions{.learning_rate = schedule(s)});
       }}};
  for (const auto& [name, optimizer] : cases) {
    SCOPED_TRACE(name);
    TempDir dir;
    LinearRegressor regressor({.feature_columns = LinearColumns(), .optimizer = optimizer},
                              Config(dir));
    regressor.Train(TrainInput(TrainData().value), {.max_steps = 100});
    std::map<std::string, Tensor> at_100;
    double total = 0;
    for (const std::string& var : regressor.GetVariableNames()) {
      if (!var.starts_with("linear/linear_model/")) continue;
      at_100[var] = regressor.GetVariableValue(var);
      for (float v : at_100[var].flat<float>()) total += std::abs(v);
    }
    ASSERT_EQ(at_100.size(), 5u);  // four columns' weights and the bias, no slots
    EXPECT_GT(total, 0.5);         // trained from zeros at rate 0.05
    EXPECT_EQ(regressor.Train(TrainInput(TrainData().value), {.max_steps = 200}).global_step, 200);
    for (const auto& [var, before] : at_100) {
      Tensor after = regressor.GetVariableValue(var);
      ASSERT_EQ(after.NumElements(), before.NumElements()) << var;
      for (int64_t i = 0; i < after.NumElements(); ++i) {
        ASSERT_EQ(after.data<float>()[i], before.data<float>()[i]) << var << "[" << i << "]";
      }
    }
  }
}

TEST(CannedEstimatorTest, ConfigurationErrorsAreClear) {
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  Graph graph;
  Scope s(graph);
  EXPECT_NE(
      message([&] { OptimizerSpec("Adamax").Make(s, "Adagrad", 0.05); }).find("Adagrad, Adam"),
      std::string::npos);
  auto invalid_rate = [](const Scope&) { return Output(); };
  EXPECT_NE(message([&] {
              OptimizerSpec("SGD", invalid_rate).Make(s, "", 0);
            }).find("learning-rate function of optimizer 'SGD'"),
            std::string::npos);
  EXPECT_NE(message([] { DNNClassifier({.feature_columns = DnnColumns()}); }).find("hidden_units"),
            std::string::npos);
  EXPECT_NE(message([] {
              LinearClassifier({.feature_columns = LinearColumns(), .n_classes = 1});
            }).find("n_classes"),
            std::string::npos);
  EXPECT_NE(message([] { DNNLinearCombinedRegressor({}); }).find("both empty"), std::string::npos);
  // A feature the input lacks is named with its column when the graph is built.
  TempDir dir;
  LinearClassifier classifier({.feature_columns = {fc::NumericColumn("income")}}, Config(dir));
  std::string err =
      message([&] { classifier.Train(TrainInput(TrainData().binary), {.steps = 1}); });
  EXPECT_NE(err.find("feature column 'income'"), std::string::npos) << err;
}

}  // namespace
}  // namespace loom
