// ExportSavedModel + SavedModelPredictor, warm start, TrainAndEvaluate with exporters.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <nlohmann/json.hpp>

#include "loom/base/fault_injection_env.h"
#include "loom/estimator/child_trainer.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/estimator/tf_saved_model.h"
#include "loom/estimator/train_and_evaluate.h"
#include "loom/testing/error_of.h"
#include "loom/train/basic_hooks.h"

namespace loom {
namespace {

using estimator_testing::LinearData;
using estimator_testing::LinearModelFn;
using estimator_testing::MakeLinearData;
using estimator_testing::TempDir;

RunConfig Config(const std::string& dir) {
  return {.model_dir = dir,
          .tf_random_seed = 1,
          .save_checkpoints_steps = 20,
          .log_step_count_steps = 0};
}

ServingInputReceiverFn Serving() {
  return RawServingInputReceiverFn({{"x", {kFloat32, Shape({2})}}});
}

TEST(SavedModelTest, ExportLoadPredictMatchesEstimator) {
  TempDir dir;
  LinearData train = MakeLinearData(128, 1);
  LinearData data = MakeLinearData(12, 4);
  Estimator estimator(LinearModelFn, Config(dir.path()));
  EXPECT_THROW(estimator.ExportSavedModel(dir.Join("export"), Serving()), Error);  // no checkpoint
  estimator.Train(TrainInput(train), {.steps = 25});

  const std::string export_dir = estimator.ExportSavedModel(dir.Join("export"), Serving());
  EXPECT_EQ(Dirname(export_dir), dir.Join("export"));
  Env* env = Env::Default();
  EXPECT_TRUE(env->FileExists(JoinPath(export_dir, "graph.pb")));
  EXPECT_TRUE(env->FileExists(JoinPath(export_dir, "variables/variables.safetensors")));
  auto doc = nlohmann::json::parse(ReadFileToString(env, JoinPath(export_dir, "saved_model.json")));
  EXPECT_EQ(doc["format"], "loom-saved-model-1");
  EXPECT_EQ(doc["global_step"], "25");
  const auto& sig = doc["signatures"]["serving_default"];
  EXPECT_EQ(sig["method_name"], "tensorflow/serving/predict");
  EXPECT_EQ(sig["inputs"]["x"]["name"], "x:0");
  EXPECT_EQ(sig["inputs"]["x"]["shape"], nlohmann::json({-1, 2}));
  EXPECT_TRUE(sig["outputs"].contains("predictions"));

  // A second export in the same second gets its own directory.
  const std::string second = estimator.ExportSavedModel(dir.Join("export"), Serving());
  EXPECT_NE(second, export_dir);

  auto predictor = SavedModelPredictor::Load(export_dir);
  EXPECT_EQ(predictor->global_step(), 25);
  std::map<std::string, Tensor> served = predictor->Predict({{"x", data.x}});
  InputFn predict_fn = ArrayInputFn({.x = {{"x", data.x}}, .batch_size = 12, .shuffle = false});
  std::vector<Prediction> batches =
      estimator.Predict(predict_fn, {.yield_single_examples = false}).ToVector();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_TRUE(served.at("predictions").Equals(batches[0].at("predictions")));
  EXPECT_TRUE(served.at("double").Equals(batches[0].at("double")));

  EXPECT_THROW(predictor->Predict({}), Error);
  EXPECT_THROW(predictor->Predict({{"x", data.x}, {"z", data.x}}), Error);
  EXPECT_THROW(predictor->Predict({{"x", data.x}}, "nope"), Error);
}

// saved_model.json is a file: a global_step that is not an int64 is DataLoss naming it,
// not a std::invalid_argument / std::out_of_range escaping from std::stoll.
TEST(SavedModelTest, BadGlobalStepIsDataLoss) {
  auto env = NewMemEnv();
  env->CreateDirs("/export/1");
  for (const char* step : {"abc", "99999999999999999999", "12x", ""}) {
    const nlohmann::json doc = {{"format", "loom-saved-model-1"},
                                {"signatures", nlohmann::json::object()},
                                {"global_step", step}};
    WriteFileAtomically(env.get(), "/export/1/saved_model.json", doc.dump());
    try {
      SavedModelPredictor::Load("/export/1", {}, env.get());
      ADD_FAILURE() << "loaded global_step '" << step << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      EXPECT_NE(e.message().find("saved_model.json"), std::string::npos) << e.what();
      EXPECT_NE(e.message().find("global_step"), std::string::npos) << e.what();
    }
  }
}

// A SavedModel copied without graph.pb or its variables: DataLoss naming the missing file
// and what a SavedModel holds (graph.pb used to be "cannot stat '.../graph.pb'"). Handed to
// the TF loader (loom predict --saved-model), a Loom SavedModel says what it is.
TEST(SavedModelTest, IncompleteCopiesNameTheMissingFile) {
  auto env = NewMemEnv();
  const std::string good = "/export/1";
  env->CreateDirs(good);
  const nlohmann::json doc = {{"format", "loom-saved-model-1"},
                              {"signatures", nlohmann::json::object()}};
  WriteFileAtomically(env.get(), good + "/saved_model.json", doc.dump());
  for (const std::string missing : {"graph.pb", "variables/variables.safetensors"}) {
    if (missing != "graph.pb") WriteFileAtomically(env.get(), good + "/graph.pb", "");
    const std::string message = testing::ErrorOf(
        [&] { SavedModelPredictor::Load(good, {}, env.get()); }, ErrorCode::kDataLoss);
    EXPECT_NE(message.find("SavedModel '/export/1' has no " + missing), std::string::npos)
        << message;
    EXPECT_NE(message.find("copy the whole directory"), std::string::npos) << message;
  }
  const std::string message =
      testing::ErrorOf([&] { LoadTFSavedModel(env.get(), good); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("'/export/1' is a Loom SavedModel (saved_model.json"), std::string::npos)
      << message;
}

TEST(SavedModelTest, ExportOutputsBecomeSignatures) {
  TempDir dir;
  LinearData train = MakeLinearData(64, 1);
  Estimator estimator(
      [](Scope& s, const Features& f, Output labels, Mode mode, const Params& p,
         const RunConfig& c) {
        EstimatorSpec spec = estimator_testing::LinearModelFn(s, f, labels, mode, p, c);
        if (mode == Mode::kPredict) {
          spec.export_outputs = {{"regress", RegressionOutput(spec.predictions.at("predictions"))}};
        }
        return spec;
      },
      Config(dir.path()));
  estimator.Train(TrainInput(train), {.steps = 3});
  auto predictor =
      SavedModelPredictor::Load(estimator.ExportSavedModel(dir.Join("export"), Serving()));
  ASSERT_EQ(predictor->signatures().size(), 2u);  // "regress" and its copy as the default
  EXPECT_EQ(predictor->signatures().at("serving_default").method_name,
            "tensorflow/serving/regress");
  auto out = predictor->Predict({{"x", MakeLinearData(3).x}}, "regress");
  EXPECT_EQ(out.at("outputs").shape(), Shape({3, 1}));
}

// A failed export (a full disk at any of its files, a rename that fails) throws and leaves
// nothing in export_dir_base: no temp-<ts> directory, no half-written export. The next
// export, on a disk with room again, succeeds.
TEST(SavedModelTest, FailedExportLeavesNoTempDirectory) {
  TempDir dir;
  FaultInjectionEnv env(Env::Default());
  RunConfig config = Config(dir.path());
  config.env = &env;
  Estimator estimator(LinearModelFn, config);
  estimator.Train(TrainInput(MakeLinearData(64, 1)), {.steps = 3});
  // A good export first, to know the size of each file: with free space for none, for
  // graph.pb only, and for graph.pb and the variables, each of the three writes fails.
  const std::string good = estimator.ExportSavedModel(dir.Join("good"), Serving());
  const uint64_t graph_bytes = env.GetFileSize(JoinPath(good, "graph.pb"));
  const uint64_t variable_bytes =
      env.GetFileSize(JoinPath(good, "variables/variables.safetensors"));
  const std::string base = dir.Join("export");
  for (uint64_t free_bytes : {uint64_t{0}, graph_bytes, graph_bytes + variable_bytes}) {
    SCOPED_TRACE(free_bytes);
    env.SetFreeSpace(free_bytes);
    try {
      estimator.ExportSavedModel(base, Serving());
      ADD_FAILURE() << "the export succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
    }
    env.ClearFaults();
    EXPECT_EQ(env.GetChildren(base), std::vector<std::string>{});
  }
  env.SetRenameFails(true);
  EXPECT_THROW(estimator.ExportSavedModel(base, Serving()), Error);
  env.ClearFaults();
  EXPECT_EQ(env.GetChildren(base), std::vector<std::string>{});

  const std::string exported = estimator.ExportSavedModel(base, Serving());
  EXPECT_EQ(env.GetChildren(base), std::vector<std::string>{Basename(exported)});
  EXPECT_EQ(SavedModelPredictor::Load(exported)->global_step(), 3);
}

// Exports taken faster than one a second get the seconds after the clock, and stay above
// every export already there even once the older ones are pruned: with exports_to_keep = 2,
// a LatestExporter kept the exports of steps 15 and 20 of a 40-step run, since the later
// ones were named from the clock again, below the kept ones, and pruned at once.
TEST(SavedModelTest, NewExportDirIsAboveEveryExportAlreadyThere) {
  std::unique_ptr<Env> env = NewMemEnv();
  const int64_t now = static_cast<int64_t>(env->NowMicros() / 1000000);
  const std::string base = "/export/latest";
  EXPECT_EQ(NewExportDir(env.get(), base), JoinPath(base, std::to_string(now)));
  env->CreateDirs(JoinPath(base, std::to_string(now + 3)));  // ahead of the clock
  env->CreateDirs(JoinPath(base, std::to_string(now + 4)));
  env->CreateDirs(JoinPath(base, "temp-" + std::to_string(now + 6)));  // an export under way
  env->CreateDirs(JoinPath(base, "not-an-export"));
  env->CreateDirs(JoinPath(base, "99999999999999999999999"));  // no int64: ignored
  EXPECT_EQ(NewExportDir(env.get(), base), JoinPath(base, std::to_string(now + 7)));
}

TEST(TrainAndEvaluateTest, ALatestExporterKeepsTheNewestExportsAndRemovesAKilledOnesTemp) {
  TempDir dir;
  RunConfig config = Config(dir.path());
  config.save_checkpoints_steps = 2;
  Estimator estimator(LinearModelFn, config);
  LinearData data = MakeLinearData(64, 1);
  auto exporter = std::make_shared<LatestExporter>("latest", Serving(), /*exports_to_keep=*/2);
  InputFn eval_fn =
      ArrayInputFn({.x = {{"x", data.x}}, .y = data.y, .batch_size = 16, .shuffle = false});
  // A killed run's unfinished export, which the first export removes.
  Env::Default()->CreateDirs(dir.Join("export/latest/temp-1000/variables"));
  // Eight evaluations and exports, several a second.
  TrainAndEvaluate(estimator, {.input_fn = TrainInput(data), .max_steps = 16},
                   {.input_fn = eval_fn,
                    .steps = std::nullopt,
                    .exporters = {exporter},
                    .start_delay_secs = 0,
                    .throttle_secs = 1e-6});
  const std::string base = dir.Join("export/latest");
  std::vector<int64_t> steps;
  for (const std::string& child : Env::Default()->GetChildren(base)) {
    steps.push_back(SavedModelPredictor::Load(JoinPath(base, child))->global_step());
  }
  std::sort(steps.begin(), steps.end());
  EXPECT_EQ(steps, (std::vector<int64_t>{14, 16}));  // temp-1000 would fail to load
}

// The same model with its weight renamed.
EstimatorSpec RenamedModelFn(Scope& s, const Features& f, Output labels, Mode mode) {
  Variable w(s.WithOpName("new_w"), RandomNormal(s, {2, 1}, kFloat32, 0.0, 0.1));
  Variable b(s.WithOpName("b"), Const(s, Tensor::FromVector<float>({0.f}, {1})));
  Output prediction = Add(s, MatMul(s, f.at("x"), w), b);
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = {{"predictions", prediction}}};
  Output loss = Mean(s, Square(s, Sub(s, prediction, labels)));
  return {
      .mode = mode,
      .loss = loss,
      .train_op =
          train::GradientDescent({.learning_rate = 0.0}).Minimize(s, loss, train::GlobalStep(s))};
}

TEST(WarmStartTest, MapsNamesAndOnlyAppliesWithoutACheckpoint) {
  TempDir source_dir, target_dir, plain_dir;
  LinearData train = MakeLinearData(128, 1);
  Estimator source(LinearModelFn, Config(source_dir.path()));
  source.Train(TrainInput(train), {.steps = 40});
  Tensor w = source.GetVariableValue("w");
  Tensor b = source.GetVariableValue("b");

  // Only "new_w" (from "w"); b keeps its initial zero. The learning rate is 0, so the
  // checkpoint after one step shows the warm-started values.
  Estimator target(RenamedModelFn, Config(target_dir.path()), {},
                   WarmStartSettings{.ckpt_to_initialize_from = source_dir.path(),
                                     .vars_to_warm_start = "new_",
                                     .var_name_to_prev_var_name = {{"new_w", "w"}}});
  target.Train(TrainInput(train), {.steps = 1});
  EXPECT_TRUE(target.GetVariableValue("new_w").Equals(w));
  EXPECT_EQ(target.GetVariableValue("b").data<float>()[0], 0.f);
  EXPECT_NE(b.data<float>()[0], 0.f);

  // Without the map the checkpoint lacks "new_w": a clear error.
  Estimator unmapped(RenamedModelFn, Config(plain_dir.path()), {},
                     WarmStartSettings{.ckpt_to_initialize_from = source_dir.path()});
  try {
    unmapped.Train(TrainInput(train), {.steps = 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("new_w"), std::string::npos) << e.what();
  }

  // Once the target has a checkpoint, training resumes from it, not from the warm start.
  Estimator source2(LinearModelFn, Config(source_dir.path()));
  source2.Train(TrainInput(train), {.steps = 40});
  target.Train(TrainInput(train), {.steps = 1});
  EXPECT_TRUE(target.GetVariableValue("new_w").Equals(w));
  EXPECT_FALSE(source2.GetVariableValue("w").Equals(w));
}

TEST(TrainAndEvaluateTest, EvaluatesAfterCheckpointsAndExports) {
  TempDir dir;
  LinearData train = MakeLinearData(256, 1);
  LinearData eval = MakeLinearData(32, 2);
  // A small learning rate keeps the eval loss falling through step 60.
  Estimator estimator(LinearModelFn, Config(dir.path()), {{"learning_rate", 0.02}});
  auto latest = std::make_shared<LatestExporter>("latest", Serving(), /*exports_to_keep=*/2);
  auto best = std::make_shared<BestExporter>("best", Serving());
  auto final_exporter = std::make_shared<FinalExporter>("final", Serving());
  InputFn eval_fn =
      ArrayInputFn({.x = {{"x", eval.x}}, .y = eval.y, .batch_size = 16, .shuffle = false});
  TrainAndEvaluateResult result =
      TrainAndEvaluate(estimator, {.input_fn = TrainInput(train), .max_steps = 60},
                       {.input_fn = eval_fn,
                        .steps = std::nullopt,
                        .exporters = {latest, best, final_exporter},
                        .start_delay_secs = 0,
                        .throttle_secs = 1e-6});
  // Checkpoints at 20, 40, 60 are evaluated (the one at 0 is skipped).
  EXPECT_EQ(result.evaluations, 3);
  EXPECT_EQ(result.eval_result.at("global_step"), 60);
  Env* env = Env::Default();
  EXPECT_EQ(env->GetChildren(dir.Join("export/latest")).size(), 2u);
  EXPECT_EQ(env->GetChildren(dir.Join("export/final")).size(), 1u);
  ASSERT_TRUE(best->best().has_value());
  EXPECT_EQ(best->best()->at("global_step"), 60);  // the loss kept falling
  // 3 latest + 3 best + 1 final.
  EXPECT_EQ(result.export_results.size(), 7u);
  EXPECT_EQ(estimator.model_fn_calls(), 1 + 1 + 7) << "eval graph built once, one per export";

  // Run again: max_steps reached, nothing trained; one evaluation of what is there.
  TrainAndEvaluateResult again =
      TrainAndEvaluate(estimator, {.input_fn = TrainInput(train), .max_steps = 60},
                       {.input_fn = eval_fn, .start_delay_secs = 0, .throttle_secs = 1});
  EXPECT_EQ(again.evaluations, 1);
  EXPECT_THROW(TrainAndEvaluate(estimator, {.input_fn = TrainInput(train)},
                                {.input_fn = eval_fn, .throttle_secs = 0}),
               Error);
}

// TF 1.15's stop_if_no_decrease_hook in train_and_evaluate: the chief's checkpoint saver
// (and its evaluation) runs before the user's hooks, so the hook sees the evaluation of
// the step just saved and training stops at that step. Loom runs the saver after user
// hooks; the hook must still stop at the step evaluated, not one step later.
TEST(TrainAndEvaluateTest, EarlyStoppingStopsAtTheStepEvaluatedAsTF) {
  TempDir dir;
  LinearData train = MakeLinearData(64, 1);
  LinearData eval = MakeLinearData(16, 2);
  // Learning rate 0: the eval loss never decreases; its best is the first, at step 1.
  RunConfig config = Config(dir.path());
  config.save_checkpoints_steps = 1;
  Estimator estimator(LinearModelFn, config, {{"learning_rate", 0.0}});
  auto stop = std::make_shared<train::EarlyStoppingHook>(
      train::EarlyStoppingOptions{.metric_name = "loss",
                                  .eval_dir = dir.Join("eval"),
                                  .max_steps_without_improvement = 2,
                                  .run_every_steps = 1});
  TrainAndEvaluateResult result = TrainAndEvaluate(
      estimator, {.input_fn = TrainInput(train), .max_steps = 50, .hooks = {stop}},
      {.input_fn =
           ArrayInputFn({.x = {{"x", eval.x}}, .y = eval.y, .batch_size = 16, .shuffle = false}),
       .steps = std::nullopt,
       .start_delay_secs = 0,
       .throttle_secs = 1e-6});
  // Evaluations at steps 1, 2, 3; at 3 the best (step 1) is 2 steps old: stop there.
  EXPECT_EQ(result.global_step, 3);
  EXPECT_EQ(result.evaluations, 3);
  EXPECT_EQ(result.eval_result.at("global_step"), 3);
  EXPECT_EQ(result.stop_signal, 0);
  EXPECT_EQ(*estimator.LatestCheckpoint(), dir.Join("model.ckpt-3"));
}

// A hook that sends this process SIGTERM once the global step is 5.
class SigtermAtStep5 : public SessionRunHook {
 public:
  void Begin(Graph& graph) override { step_ = train::RequireGlobalStep(graph, "SigtermAtStep5"); }
  void AfterRun(train::SessionRunContext& context, const train::SessionRunValues&) override {
    if (train::StepValue(context.session().Eval(step_)) == 5) std::raise(SIGTERM);
  }

 private:
  Output step_;
};

// SIGTERM during TrainAndEvaluate: training stops after the step in flight with its final
// checkpoint, the result says which signal, and the final evaluation and exports are
// skipped (a preempted job has no time for them); running it again resumes and finishes.
TEST(TrainAndEvaluateTest, StopSignalIsReportedAndSkipsTheFinalEvaluation) {
  if (estimator_testing::kSkipSignalTests) GTEST_SKIP() << "signals under ThreadSanitizer";
  TempDir dir;
  LinearData train = MakeLinearData(64, 1);
  LinearData eval = MakeLinearData(16, 2);
  Estimator estimator(LinearModelFn, Config(dir.path()));
  auto final_exporter = std::make_shared<FinalExporter>("final", Serving());
  EvalSpec eval_spec{.input_fn = ArrayInputFn(
                         {.x = {{"x", eval.x}}, .y = eval.y, .batch_size = 16, .shuffle = false}),
                     .steps = std::nullopt,
                     .exporters = {final_exporter},
                     .start_delay_secs = 0,
                     .throttle_secs = 1e-6};
  TrainAndEvaluateResult result = TrainAndEvaluate(estimator,
                                                   {.input_fn = TrainInput(train),
                                                    .max_steps = 30,
                                                    .hooks = {std::make_shared<SigtermAtStep5>()}},
                                                   eval_spec);
  EXPECT_EQ(result.stop_signal, SIGTERM);
  EXPECT_EQ(result.global_step, 5);
  EXPECT_EQ(result.evaluations, 0);
  EXPECT_TRUE(result.export_results.empty());
  EXPECT_EQ(*estimator.LatestCheckpoint(), dir.Join("model.ckpt-5"));
  EXPECT_FALSE(Env::Default()->IsDirectory(dir.Join("eval")));

  TrainAndEvaluateResult resumed =
      TrainAndEvaluate(estimator, {.input_fn = TrainInput(train), .max_steps = 30}, eval_spec);
  EXPECT_EQ(resumed.stop_signal, 0);
  EXPECT_EQ(resumed.global_step, 30);
  EXPECT_EQ(resumed.evaluations, 2);  // the checkpoints at 25 (20 steps after 5) and 30
  EXPECT_EQ(resumed.export_results.size(), 1u);
}

}  // namespace
}  // namespace loom
