// Guards against silent wrong results, end to end through an Estimator (issue 9): a NaN
// feature stops training naming the variable, out-of-range labels are rejected by every
// classifier head, losses reject label/prediction shapes that would broadcast, missing
// labels and wrong feature keys are clear errors, and the TF 1.15 fidelity points
// (lazy Predict, summaries at TF's steps, one event file per directory).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/estimator/canned.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/losses.h"
#include "loom/io/event_file_proto.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/state.h"
#include "loom/testing/error_of.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"

namespace loom {
namespace {

using testing::ErrorOf;

namespace fc = feature_column;
using estimator_testing::TempDir;

RunConfig Quiet(const TempDir& dir) {
  return {.model_dir = dir.path(),
          .tf_random_seed = 1,
          .save_summary_steps = 0,
          .log_step_count_steps = 0};
}

#define EXPECT_HAS(message, part)                    \
  EXPECT_NE((message).find(part), std::string::npos) \
      << "missing \"" << (part) << "\" in: " << (message)

// x in [n, 2] with one NaN in row 9; labels 0/1.
std::map<std::string, Tensor> TwoFeatures(int64_t n, bool with_nan) {
  Tensor a(kFloat32, {n}), b(kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = static_cast<float>(i % 5) - 2;
    b.data<float>()[i] = static_cast<float>(i % 3);
  }
  if (with_nan) a.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
  return {{"a", a}, {"b", b}};
}

Tensor Labels(std::vector<int64_t> v) { return Tensor::FromVector(v); }

InputFn MakeInput(std::map<std::string, Tensor> x, Tensor y, int64_t batch = 16) {
  return ArrayInputFn({.x = std::move(x),
                       .y = std::move(y),
                       .batch_size = batch,
                       .num_epochs = std::nullopt,
                       .shuffle = false});
}

// ---- item 3: a NaN feature stops a DNN, naming the first layer's kernel --------------------

TEST(EstimatorGuardsTest, NaNFeatureStopsDnnTrainingNamingTheVariableAndStep) {
  TempDir dir;
  DNNClassifier dnn(
      {.hidden_units = {8}, .feature_columns = {fc::NumericColumn("a"), fc::NumericColumn("b")}},
      Quiet(dir));
  std::vector<int64_t> y(32);
  for (int64_t i = 0; i < 32; ++i) y[i] = i % 2;
  // Batches of 16, no shuffle: the NaN (row 9) is in the first batch.
  std::string message = ErrorOf(
      [&] { dnn.Train(MakeInput(TwoFeatures(32, /*with_nan=*/true), Labels(y)), {.steps = 5}); },
      ErrorCode::kInvalidArgument);
  // Every gradient is NaN once the loss is; the first update kernel to run names its variable.
  EXPECT_HAS(message, "NaN or Inf in the update of variable 'dnn/");
  EXPECT_HAS(message, "from its gradient");
  EXPECT_HAS(message, "Check the input data");
  EXPECT_HAS(message, "at step 1,");
  // The same data without the NaN trains.
  TempDir clean;
  DNNClassifier ok(
      {.hidden_units = {8}, .feature_columns = {fc::NumericColumn("a"), fc::NumericColumn("b")}},
      Quiet(clean));
  EXPECT_EQ(ok.Train(MakeInput(TwoFeatures(32, false), Labels(y)), {.steps = 5}).global_step, 5);
}

// ---- item 4: out-of-range labels in the binary head ------------------------------------------

TEST(EstimatorGuardsTest, BinaryAndLinearClassifiersRejectLabelsOutsideZeroOne) {
  for (std::vector<int64_t> bad : {std::vector<int64_t>{0, 5}, std::vector<int64_t>{-1, 0}}) {
    std::vector<int64_t> y(32);
    for (int64_t i = 0; i < 32; ++i) y[i] = bad[i % 2];
    const std::string shown = std::to_string(bad[0] == 0 ? bad[1] : bad[0]);
    const std::string position = bad[0] == 0 ? "position 1 " : "position 0 ";
    TempDir dir;
    LinearClassifier linear({.feature_columns = {fc::NumericColumn("a")}}, Quiet(dir));
    std::string message =
        ErrorOf([&] { linear.Train(MakeInput(TwoFeatures(32, false), Labels(y)), {.steps = 2}); },
                ErrorCode::kInvalidArgument);
    EXPECT_HAS(message, "binary_classification_head");
    EXPECT_HAS(message, "label " + shown + " at " + position);
    EXPECT_HAS(message, "outside the valid range [0, 1]");
    TempDir dnn_dir;
    DNNClassifier dnn({.hidden_units = {4}, .feature_columns = {fc::NumericColumn("a")}},
                      Quiet(dnn_dir));
    message =
        ErrorOf([&] { dnn.Train(MakeInput(TwoFeatures(32, false), Labels(y)), {.steps = 2}); },
                ErrorCode::kInvalidArgument);
    EXPECT_HAS(message, "label " + shown);
  }
  // Evaluation checks too (a model trained on good labels, evaluated on bad ones).
  TempDir dir;
  LinearClassifier linear({.feature_columns = {fc::NumericColumn("a")}}, Quiet(dir));
  std::vector<int64_t> good(32), bad(32, 0);
  for (int64_t i = 0; i < 32; ++i) good[i] = i % 2;
  bad[20] = 2;
  linear.Train(MakeInput(TwoFeatures(32, false), Labels(good)), {.steps = 2});
  std::string message = ErrorOf(
      [&] {
        linear.Evaluate(ArrayInputFn(
            {.x = TwoFeatures(32, false), .y = Labels(bad), .batch_size = 32, .shuffle = false}));
      },
      ErrorCode::kInvalidArgument);
  EXPECT_HAS(message, "label 2 at position 20 is outside the valid range [0, 1]");
}

// ---- item 9: y = 2x + 1 with 1-D labels --------------------------------------------------------

EstimatorSpec LineModelFn(Scope& s, const Features& features, Output labels, Mode mode,
                          const Params&, const RunConfig&) {
  Output x = Reshape(s, features.at("x"), std::vector<int64_t>{-1, 1});
  Variable w(s.WithOpName("kernel"), Const(s, Tensor::FromVector<float>({0.f}, {1, 1})));
  Variable b(s.WithOpName("bias"), Const(s, Tensor::FromVector<float>({0.f}, {1})));
  Output prediction = Add(s, MatMul(s, x, w), b);
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = {{"y", prediction}}};
  Output loss = losses::MeanSquaredError(s, labels, prediction);
  Operation train_op =
      train::GradientDescent({.learning_rate = 0.1}).Minimize(s, loss, train::GlobalStep(s));
  return {.mode = mode, .predictions = {{"y", prediction}}, .loss = loss, .train_op = train_op};
}

TEST(EstimatorGuardsTest, MeanSquaredErrorRejectsFlatLabelsAgainstColumnPredictions) {
  const int64_t n = 64;
  Tensor x(kFloat32, {n}), y(kFloat32, {n}), y_column(kFloat32, {n, 1});
  for (int64_t i = 0; i < n; ++i) {
    x.data<float>()[i] = static_cast<float>(i % 8) / 4 - 1;
    y.data<float>()[i] = y_column.data<float>()[i] = 2 * x.data<float>()[i] + 1;
  }
  TempDir dir;
  Estimator flat(LineModelFn, Quiet(dir));
  // TF 1.15: mean_squared_error asserts compatible shapes (a ValueError), no squeeze.
  std::string message = ErrorOf(
      [&] {
        flat.Train(MakeInput({{"x", x}}, y), {.steps = 10});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_HAS(message, "mean_squared_error");
  EXPECT_HAS(message, "labels [?]");
  EXPECT_HAS(message, "predictions [?,1]");
  EXPECT_HAS(message, "Reshape(labels, {-1, 1})");
  TempDir column_dir;
  Estimator column(LineModelFn, Quiet(column_dir));
  column.Train(MakeInput({{"x", x}}, y_column), {.steps = 300});
  EXPECT_NEAR(column.GetVariableValue("kernel").data<float>()[0], 2.0f, 1e-3);
  EXPECT_NEAR(column.GetVariableValue("bias").data<float>()[0], 1.0f, 1e-3);
}

// ---- item 10: no labels, wrong feature key
// -------------------------------------------------------

TEST(EstimatorGuardsTest, MissingLabelsAndWrongFeatureKeysAreClearErrors) {
  TempDir dir;
  Estimator est(LineModelFn, Quiet(dir));
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4});
  std::string message = ErrorOf(
      [&] {
        est.Train(ArrayInputFn({.x = {{"x", x}}, .batch_size = 2, .shuffle = false}), {.steps = 1});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_HAS(message, "empty Output");
  EXPECT_HAS(message, "got no labels");
  EXPECT_HAS(message, "\"label\"");
  message = ErrorOf(
      [&] {
        est.Train(
            ArrayInputFn(
                {.x = {{"inputs", x}, {"other", x}}, .y = x, .batch_size = 2, .shuffle = false}),
            {.steps = 1});
      },
      ErrorCode::kInvalidArgument);
  EXPECT_HAS(message, "no feature named 'x'");
  EXPECT_HAS(message, "'inputs', 'other'");
  // Features::at on its own, const and not.
  Graph graph;
  Scope s(graph);
  Features features = {{"a", Placeholder(s, kFloat32, {1})}};
  EXPECT_HAS(ErrorOf([&] { features.at("b"); }, ErrorCode::kInvalidArgument),
             "no feature named 'b'");
  const Features& cf = features;
  EXPECT_EQ(cf.at("a"), features["a"]);
}

// ---- TF 1.15 audit: Predict is fully lazy ------------------------------------------------------

class CountingHook : public train::SessionRunHook {
 public:
  int begins = 0, sessions = 0;
  void Begin(Graph&) override { ++begins; }
  void AfterCreateSession(Session&) override { ++sessions; }
};

TEST(EstimatorGuardsTest, PredictRunsNothingUntilTheFirstElement) {
  TempDir dir;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4});
  Tensor y = Tensor::FromVector<float>({3, 5, 7, 9}, {4, 1});
  {
    auto owned = std::make_unique<Estimator>(LineModelFn, Quiet(dir));
    Estimator& est = *owned;
    est.Train(MakeInput({{"x", x}}, y, 4), {.steps = 3});
    for (bool with_hook : {false, true}) {
      int input_fn_calls = 0;
      InputFn counting = [&](Scope& s) {
        ++input_fn_calls;
        return ArrayInputFn({.x = {{"x", x}}, .batch_size = 2, .shuffle = false})(s);
      };
      auto hook = std::make_shared<CountingHook>();
      const int64_t model_fn_calls = est.model_fn_calls();
      PredictOptions options;
      if (with_hook) options.hooks = {hook};
      PredictionRange range = est.Predict(counting, options);
      EXPECT_EQ(input_fn_calls, 0);
      EXPECT_EQ(est.model_fn_calls(), model_fn_calls);
      EXPECT_EQ(hook->begins + hook->sessions, 0);
      ASSERT_TRUE(range.Next().has_value());
      EXPECT_GE(input_fn_calls, 1);
      EXPECT_EQ(est.model_fn_calls(), model_fn_calls + 1);
      if (with_hook) {
        EXPECT_EQ(hook->begins * 10 + hook->sessions, 11);
      }
      EXPECT_EQ(range.ToVector().size(), 3u);
    }
    // Errors come with the first element too, as from TF's next().
    InputFn plain = ArrayInputFn({.x = {{"x", x}}, .batch_size = 2, .shuffle = false});
    PredictionRange bad = est.Predict(plain, {.predict_keys = {"nope"}});
    EXPECT_HAS(ErrorOf([&] { bad.Next(); }, ErrorCode::kInvalidArgument), "'nope'");
    // A range started before its Estimator goes keeps working; one never started says why.
    PredictionRange started = est.Predict(plain);
    ASSERT_TRUE(started.Next().has_value());
    PredictionRange unstarted = est.Predict(plain);
    owned.reset();
    EXPECT_EQ(started.ToVector().size(), 3u);
    EXPECT_HAS(ErrorOf([&] { unstarted.Next(); }, ErrorCode::kFailedPrecondition),
               "destroyed before the first prediction");
  }
}

// ---- TF 1.15 audit: a [1]-shaped loss trains
// ------------------------------------------------------

TEST(EstimatorGuardsTest, ALossOfShapeOneTrains) {
  TempDir dir;
  Estimator est(
      [](Scope& s, const Features& features, Output labels, Mode mode, const Params& p,
         const RunConfig& c) {
        EstimatorSpec spec = LineModelFn(s, features, labels, mode, p, c);
        if (mode != Mode::kTrain) return spec;
        Output loss = Reshape(s, spec.loss, std::vector<int64_t>{1});
        spec.loss = loss;
        spec.train_op = train::GradientDescent({.learning_rate = 0.1})
                            .Minimize(s.NewSubScope("one"), loss, train::GlobalStep(s));
        return spec;
      },
      Quiet(dir));
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4});
  Tensor y = Tensor::FromVector<float>({3, 5, 7, 9}, {4, 1});
  EXPECT_EQ(est.Train(MakeInput({{"x", x}}, y, 4), {.steps = 3}).global_step, 3);
}

// ---- item 13: summaries at TF's steps, one event file in model_dir ----------------------------

TEST(EstimatorGuardsTest, SummariesAtTfStepsInOneEventFile) {
  TempDir dir;
  RunConfig config = Quiet(dir);
  config.save_summary_steps = 100;
  config.log_step_count_steps = 100;
  Estimator est(LineModelFn, config);
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4});
  Tensor y = Tensor::FromVector<float>({3, 5, 7, 9}, {4, 1});
  // User hooks writing to model_dir too share the Estimator's writer.
  auto counter = std::make_shared<train::StepCounterHook>(
      train::StepCounterOptions{.every_n_steps = 50, .output_dir = dir.path()});
  est.Train(MakeInput({{"x", x}}, y, 4), {.hooks = {counter}, .steps = 250});
  counter.reset();
  std::vector<std::string> files = Env::Default()->Glob(dir.Join("events.out.tfevents.*"));
  ASSERT_EQ(files.size(), 1u);
  std::vector<int64_t> loss_steps;
  auto reader = EventFileReader::Open(Env::Default(), files[0]);
  while (auto e = reader->Next()) {
    for (const auto& v : e->summary().value()) {
      if (v.tag() == "loss") loss_steps.push_back(e->step());
    }
  }
  EXPECT_EQ(loss_steps, (std::vector<int64_t>{1, 101, 201}));
}

}  // namespace
}  // namespace loom
