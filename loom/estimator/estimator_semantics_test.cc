// Estimator edge semantics pinned against TF 1.15 (each test says what TF does): warm
// starts that name missing variables, train(steps=0) and an already reached max_steps,
// invalid losses, a NaN loss, keep_checkpoint_max = 0 and evaluate(steps=0).
#include <gtest/gtest.h>

#include "loom/base/logging.h"
#include "loom/data/dataset.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/warm_start.h"
#include "loom/ops/array.h"
#include "loom/testing/error_of.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

using estimator_testing::EvalInput;
using estimator_testing::LinearData;
using estimator_testing::LinearModelFn;
using estimator_testing::MakeLinearData;
using estimator_testing::TempDir;
using estimator_testing::TrainInput;
using testing::ErrorOf;

RunConfig Config(const std::string& dir, int keep = 5) {
  return {.model_dir = dir,
          .tf_random_seed = 1,
          .save_checkpoints_steps = 5,
          .keep_checkpoint_max = keep,
          .log_step_count_steps = 0};
}

// LinearModelFn with one more variable, "extra", that no checkpoint of LinearModelFn has.
EstimatorSpec ExtraVariableModelFn(Scope& s, const Features& f, Output labels, Mode mode) {
  Variable w(s.WithOpName("w"), RandomNormal(s, {2, 1}, kFloat32, 0.0, 0.1));
  Variable b(s.WithOpName("b"), Const(s, Tensor::FromVector<float>({0.f}, {1})));
  Variable extra(s.WithOpName("extra"), Const(s, Tensor::FromVector<float>({0.f}, {1})));
  Output prediction = Add(s, Add(s, MatMul(s, f.at("x"), w), b), extra);
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = {{"predictions", prediction}}};
  Output loss = Mean(s, Square(s, Sub(s, prediction, labels)));
  return {
      .mode = mode,
      .loss = loss,
      .train_op =
          train::GradientDescent({.learning_rate = 0.1}).Minimize(s, loss, train::GlobalStep(s))};
}

std::string TrainedSource(const TempDir& dir, const LinearData& data) {
  Estimator source(LinearModelFn, Config(dir.path()));
  source.Train(TrainInput(data), {.steps = 5});
  return dir.path();
}

// TF: warm_start's init_from_checkpoint raises ValueError "Tensor extra is not found in
// ... checkpoint" for a selected variable the checkpoint lacks; a vars_to_warm_start
// pattern that selects nothing warm-starts nothing and trains.
TEST(EstimatorSemanticsTest, WarmStartOfAVariableMissingFromTheCheckpoint) {
  TempDir source_dir, target_dir, narrow_dir, none_dir;
  LinearData data = MakeLinearData(64, 1);
  const std::string source = TrainedSource(source_dir, data);

  Estimator all(ExtraVariableModelFn, Config(target_dir.path()), {},
                WarmStartSettings{.ckpt_to_initialize_from = source});
  const std::string message =
      ErrorOf([&] { all.Train(TrainInput(data), {.steps = 1}); }, ErrorCode::kNotFound);
  // It names the warm start, the variable and both settings that fix it (it used to name
  // only the Saver's RestoreOptions::name_map).
  EXPECT_NE(message.find("warm start from '" + source + "'"), std::string::npos) << message;
  EXPECT_NE(message.find("no tensor 'extra' for variable 'extra'"), std::string::npos) << message;
  EXPECT_NE(message.find("vars_to_warm_start '.*' selects 3 variable(s)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("var_name_to_prev_var_name"), std::string::npos) << message;
  EXPECT_EQ(message.find("RestoreOptions::name_map if"), std::string::npos) << message;
  EXPECT_FALSE(train::ScanCheckpoints(Env::Default(), target_dir.path()).latest);

  // A pattern that leaves "extra" out warm-starts the rest.
  Estimator narrow(
      ExtraVariableModelFn, Config(narrow_dir.path()), {},
      WarmStartSettings{.ckpt_to_initialize_from = source, .vars_to_warm_start = "(w|b)$"});
  narrow.Train(TrainInput(data), {.steps = 1});
  // A pattern that matches nothing trains from the initializers.
  Estimator none(ExtraVariableModelFn, Config(none_dir.path()), {},
                 WarmStartSettings{.ckpt_to_initialize_from = source,
                                   .vars_to_warm_start = "nothing_matches"});
  EXPECT_EQ(none.Train(TrainInput(data), {.steps = 1}).global_step, 1);
}

// TF: train(steps=0) and train(max_steps=0) raise ValueError ("Must specify steps > 0");
// train(max_steps=N) with a checkpoint at N or later returns at once ("Skipping training
// since max_steps has already saved") and writes nothing.
TEST(EstimatorSemanticsTest, StepsZeroIsAnErrorAndAReachedMaxStepsWritesNothing) {
  TempDir dir;
  LinearData data = MakeLinearData(64, 1);
  Estimator estimator(LinearModelFn, Config(dir.path()));
  EXPECT_NE(
      ErrorOf([&] { estimator.Train(TrainInput(data), {.steps = 0}); }, ErrorCode::kInvalidArgument)
          .find("steps must be > 0"),
      std::string::npos);
  EXPECT_NE(ErrorOf([&] { estimator.Train(TrainInput(data), {.max_steps = 0}); },
                    ErrorCode::kInvalidArgument)
                .find("max_steps must be > 0"),
            std::string::npos);
  EXPECT_EQ(estimator.Train(TrainInput(data), {.max_steps = 10}).global_step, 10);
  Env* env = Env::Default();
  std::vector<std::string> before = env->GetChildren(dir.path());
  bool input_called = false;
  InputFn counting = [&](Scope& s) {
    input_called = true;
    return TrainInput(data)(s);
  };
  TrainResult again = estimator.Train(counting, {.max_steps = 10});
  EXPECT_EQ(again.global_step, 10);
  EXPECT_EQ(again.steps_run, 0);
  EXPECT_FALSE(input_called);
  EXPECT_EQ(env->GetChildren(dir.path()), before);
  EXPECT_EQ(estimator.Train(counting, {.max_steps = 7}).global_step, 10);
}

EstimatorSpec LossModelFn(Scope& s, const Features& f, Output labels, Mode mode,
                          const Params& params, const RunConfig&) {
  Variable w(s.WithOpName("w"), Const(s, Tensor::FromVector<float>({0.f, 0.f}, {2, 1})));
  Output prediction = MatMul(s, f.at("x"), w);
  Output squared = Square(s, Sub(s, prediction, labels));
  const std::string kind = GetParam<std::string>(params, "loss");
  Output loss = kind == "vector"  ? Output(squared)
                : kind == "int"   ? Cast(s, Mean(s, squared), kInt32)
                : kind == "nan"   ? Add(s, Mean(s, squared), Mean(s, Log(s, Neg(s, labels))))
                : kind == "[1,1]" ? Reshape(s, Mean(s, squared), std::vector<int64_t>{1, 1})
                                  : Mean(s, squared);
  Operation train_op = train::GradientDescent({.learning_rate = 0.01})
                           .Minimize(s, Mean(s, squared), train::GlobalStep(s));
  return {.mode = mode, .loss = loss, .train_op = train_op};
}

// TF: EstimatorSpec raises ValueError "Loss must be scalar, given: ..." for a loss whose
// element count is known and not 1, and reshapes a one-element loss ([1, 1]) to a scalar.
// (A loss with unknown dims, which TF accepts and fails at run time once a batch has two
// examples, is rejected when the graph is built; an integer loss is rejected too.)
TEST(EstimatorSemanticsTest, NonScalarOrIntegerLossIsAClearErrorAndOneElementTrains) {
  LinearData data = MakeLinearData(64, 1);
  auto train = [&](const std::string& kind, const std::string& dir) {
    Estimator estimator(LossModelFn, Config(dir), {{"loss", kind}});
    return estimator.Train(TrainInput(data), {.steps = 2});
  };
  TempDir vector_dir, int_dir, one_dir;
  std::string message =
      ErrorOf([&] { train("vector", vector_dir.path()); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("loss must be a scalar, given Square:0 of shape [?,1]"), std::string::npos)
      << message;
  message = ErrorOf([&] { train("int", int_dir.path()); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("must be float32 or float64, given int32"), std::string::npos) << message;
  // It used to be "loss must be a scalar, given Reshape:0 of shape [1,1]".
  TrainResult one = train("[1,1]", one_dir.path());
  EXPECT_EQ(one.global_step, 2);
  ASSERT_TRUE(one.final_loss);
  EXPECT_GT(*one.final_loss, 0);
}

// TF: the Estimator's NanTensorHook (fail_on_nan_loss=True) raises NanLossDuringTrainingError
// at the first NaN loss; the checkpoints before it stay, no final one is written.
TEST(EstimatorSemanticsTest, NanLossStopsTraining) {
  TempDir dir;
  LinearData data = MakeLinearData(64, 1);  // labels of either sign: log(-label) is NaN
  Estimator estimator(LossModelFn, Config(dir.path()), {{"loss", std::string("nan")}});
  const std::string message = ErrorOf([&] { estimator.Train(TrainInput(data), {.steps = 20}); },
                                      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Model diverged with loss = NaN"), std::string::npos) << message;
  EXPECT_NE(message.find("(at step "), std::string::npos) << message;
  auto latest = train::ScanCheckpoints(Env::Default(), dir.path()).latest;
  ASSERT_TRUE(latest);
  EXPECT_TRUE(latest->ends_with("model.ckpt-0")) << *latest;
}

// TF: an error in the input's map function stops training with that error (the step that
// read the element fails; end() does not run, so no final checkpoint).
TEST(EstimatorSemanticsTest, AMapThatFailsOnOneElementStopsTraining) {
  TempDir dir;
  LinearData data = MakeLinearData(64, 1);
  InputFn failing = [&](Scope&) -> InputFnResult {
    int64_t seen = 0;
    return data::FromTensorSlices({{"x", data.x}, {"label", data.y}})
        .Map([seen](data::Element e) mutable {
          if (++seen == 50) throw InvalidArgument("cannot decode example 50");
          return e;
        })
        .Batch(8);
  };
  Estimator estimator(LinearModelFn, Config(dir.path()));
  const std::string message =
      ErrorOf([&] { estimator.Train(failing, {.steps = 20}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("cannot decode example 50"), std::string::npos) << message;
  EXPECT_NE(message.find("(at step 7, "), std::string::npos) << message;  // examples 49..56
  auto latest = train::ScanCheckpoints(Env::Default(), dir.path()).latest;
  ASSERT_TRUE(latest);
  EXPECT_TRUE(latest->ends_with("model.ckpt-5")) << *latest;
}

// TF: keep_checkpoint_max=0 (or None) keeps every checkpoint.
TEST(EstimatorSemanticsTest, KeepCheckpointMaxZeroKeepsAll) {
  TempDir dir;
  LinearData data = MakeLinearData(64, 1);
  Estimator estimator(LinearModelFn, Config(dir.path(), /*keep=*/0));
  estimator.Train(TrainInput(data), {.steps = 40});
  int n = 0;
  for (const std::string& f : Env::Default()->GetChildren(dir.path())) {
    n += f.ends_with(".safetensors");
  }
  EXPECT_EQ(n, 9);  // steps 0, 5, ..., 40
}

// TF: evaluate(steps=0) raises ValueError "Must specify steps > 0".
TEST(EstimatorSemanticsTest, EvaluateStepsZeroIsAnError) {
  TempDir dir;
  LinearData data = MakeLinearData(64, 1);
  Estimator estimator(LinearModelFn, Config(dir.path()));
  estimator.Train(TrainInput(data), {.steps = 5});
  EXPECT_NE(ErrorOf([&] { estimator.Evaluate(EvalInput(data), {.steps = 0}); },
                    ErrorCode::kInvalidArgument)
                .find("steps must be > 0"),
            std::string::npos);
}

// An eval set that yields no batch gives metrics over zero examples, all 0 (TF 1.15 returns
// them silently); Loom warns, once per evaluation, and not when a batch was read.
TEST(EstimatorSemanticsTest, EvaluatingNoBatchWarns) {
  TempDir dir;
  LinearData data = MakeLinearData(16, 1);
  Estimator estimator(LinearModelFn, Config(dir.path()));
  estimator.Train(TrainInput(data), {.steps = 2});
  std::vector<std::string> warnings;
  ScopedLogSink sink([&](LogLevel level, const std::string& line) {
    if (level == LogLevel::kWarning) warnings.push_back(line);
  });
  InputFn empty = [&](Scope&) {
    return data::FromTensorSlices({{"x", data.x}, {"label", data.y}}).Take(0).Batch(4);
  };
  std::map<std::string, double> metrics = estimator.Evaluate(empty);
  EXPECT_EQ(metrics["loss"], 0);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("Evaluate read no batch from its input_fn (an empty eval set?): "
                             "every metric is over zero examples"),
            std::string::npos)
      << warnings[0];
  warnings.clear();
  estimator.Evaluate(EvalInput(data));
  EXPECT_TRUE(warnings.empty()) << warnings[0];
}

// Evaluate / Predict / export without a checkpoint is FailedPrecondition (a choice:
// docs/estimator.md), saying why the model_dir has none: the usual mistakes are a path that
// does not exist, a checkpoint file or an export given as the model_dir.
TEST(EstimatorSemanticsTest, NoCheckpointSaysWhatTheModelDirIs) {
  TempDir dir;
  Env* env = Env::Default();
  const std::string file = JoinPath(dir.path(), "model.ckpt-5.safetensors");
  WriteFileAtomically(env, file, "x");
  const std::string export_dir = JoinPath(dir.path(), "export/1700000000");
  env->CreateDirs(export_dir);
  WriteFileAtomically(env, JoinPath(export_dir, "saved_model.json"), "{}");
  const std::string empty = JoinPath(dir.path(), "empty");
  env->CreateDirs(empty);
  LinearData data = MakeLinearData(16, 1);
  const std::pair<std::string, std::string> cases[] = {
      {JoinPath(dir.path(), "typo"), "': it does not exist; train into it first"},
      {file, "': it is a file, not a directory (a checkpoint file is passed as checkpoint_path)"},
      {export_dir, "': it is a SavedModel (an export), not a model_dir"},
      {empty,
       "': it holds no checkpoint (model.ckpt-N.safetensors); train into it first "
       "(Train, loom train JOB) or pass checkpoint_path"},
  };
  for (const auto& c : cases) {  // not a structured binding: the lambda captures the dir
    const std::string& model_dir = c.first;
    Estimator estimator(LinearModelFn, {.model_dir = model_dir, .log_step_count_steps = 0});
    const std::string message =
        ErrorOf([&] { estimator.Evaluate(EvalInput(data)); }, ErrorCode::kFailedPrecondition);
    EXPECT_NE(message.find("Evaluate: could not find a trained model in model_dir '" + model_dir +
                           c.second),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace loom
