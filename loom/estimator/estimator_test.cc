// Estimator: spec validation, Train (hooks, steps / max_steps / resume), Evaluate
// (metrics, summaries, caching), Predict (lazy, single examples / batches) and the TF1
// placeholder + IteratorInitializerHook workaround.
#include "loom/estimator/estimator.h"

#include <gtest/gtest.h>

#include <typeinfo>

#include "loom/base/logging.h"
#include "loom/estimator/estimator_internal.h"
#include "loom/estimator/estimator_test_util.h"
#include "loom/graph/collections.h"
#include "loom/io/event_file_proto.h"
#include "loom/testing/error_of.h"
#include "loom/train/saver.h"

namespace loom {
namespace {

using testing::ErrorOf;

using estimator_testing::LinearData;
using estimator_testing::LinearModelFn;
using estimator_testing::MakeLinearData;
using estimator_testing::TempDir;

RunConfig QuietConfig(const std::string& dir) {
  return {.model_dir = dir,
          .tf_random_seed = 1,
          .save_checkpoints_steps = 10,
          .log_step_count_steps = 0};
}

// ---------------------------------------------------------------- spec and config

TEST(EstimatorSpecTest, ValidationNamesWhatIsMissing) {
  Graph graph;
  Scope s(graph);
  Output x = Placeholder(s, kFloat32, {4, 1});
  Output loss = Mean(s, x);
  Operation op = NoOp(s);
  auto check = [&](const EstimatorSpec& spec, Mode mode) {
    return ErrorOf([&] { ValidateEstimatorSpec(spec, mode, graph); }, ErrorCode::kInvalidArgument);
  };
  EXPECT_NE(check({.mode = Mode::kTrain, .train_op = op}, Mode::kTrain).find("missing loss"),
            std::string::npos);
  EXPECT_NE(check({.mode = Mode::kTrain, .loss = loss}, Mode::kTrain).find("missing train_op"),
            std::string::npos);
  EXPECT_NE(check({.mode = Mode::kEval}, Mode::kEval).find("missing loss"), std::string::npos);
  EXPECT_NE(check({.mode = Mode::kPredict}, Mode::kPredict).find("missing predictions"),
            std::string::npos);
  EXPECT_NE(check({.mode = Mode::kEval, .loss = x}, Mode::kEval).find("must be a scalar"),
            std::string::npos);
  EXPECT_NE(check({.mode = Mode::kEval, .loss = loss}, Mode::kTrain).find("mode 'train'"),
            std::string::npos);
  Graph other;
  Scope o(other);
  EXPECT_NE(
      check({.mode = Mode::kEval, .loss = Mean(o, Placeholder(o, kFloat32, {2}))}, Mode::kEval)
          .find("another graph"),
      std::string::npos);
  // Valid specs pass.
  ValidateEstimatorSpec({.mode = Mode::kTrain, .loss = loss, .train_op = op}, Mode::kTrain, graph);
  ValidateEstimatorSpec({.mode = Mode::kPredict, .predictions = {{"y", x}}}, Mode::kPredict, graph);
}

TEST(EstimatorSpecTest, TrainReportsAnInvalidSpec) {
  TempDir dir;
  LinearData d = MakeLinearData(32);
  Estimator estimator(
      [](Scope& s, const Features& f, Output labels, Mode mode) -> EstimatorSpec {
        return {.mode = mode, .loss = Mean(s, Square(s, Sub(s, f.at("x"), labels)))};
      },
      QuietConfig(dir.path()));
  std::string message =
      ErrorOf([&] { estimator.Train(TrainInput(d), {.steps = 1}); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("missing train_op"), std::string::npos) << message;
}

TEST(RunConfigTest, CheckpointScheduleAndValidation) {
  EXPECT_EQ(EffectiveCheckpointSchedule({}).secs, 600.0);
  EXPECT_EQ(EffectiveCheckpointSchedule({.save_checkpoints_steps = 5}).steps, 5);
  EXPECT_FALSE(EffectiveCheckpointSchedule({.save_checkpoints_steps = 0}).enabled());
  std::string message =
      ErrorOf([] { ValidateRunConfig({.save_checkpoints_steps = 5, .save_checkpoints_secs = 10}); },
              ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("mutually exclusive"), std::string::npos);
  EXPECT_THROW(Estimator(LinearModelFn, RunConfig{.model_dir = "/tmp/x",
                                                  .save_checkpoints_steps = 5,
                                                  .save_checkpoints_secs = 10}),
               Error);
}

TEST(ArrayInputFnTest, ValidatesArraysAndIsZeroCopy) {
  LinearData d = MakeLinearData(10);
  EXPECT_NE(ErrorOf(
                [&] {
                  ArrayInputFn({.x = {{"x", d.x}}, .y = d.y});
                },
                ErrorCode::kInvalidArgument)
                .find("shuffle must be set"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(
          [&] {
            ArrayInputFn({.x = {{"x", d.x}}, .y = Tensor(kFloat32, {9, 1}), .shuffle = false});
          },
          ErrorCode::kInvalidArgument)
          .find("'x' has 10 examples but 'label' has 9"),
      std::string::npos);
  InputFn fn = ArrayInputFn({.x = {{"x", d.x}}, .y = d.y, .batch_size = 4, .shuffle = false});
  Graph g;
  Scope s(g);
  InputFnResult result = fn(s);
  ASSERT_TRUE(result.is_dataset());
  auto it = result.dataset().MakeIterator();
  auto first = it->GetNext();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->at("x").shape(), Shape({4, 2}));
  EXPECT_EQ(first->at("label").data<float>()[3], d.y.data<float>()[3]);
  int batches = 1;
  while (it->GetNext()) ++batches;
  EXPECT_EQ(batches, 3);  // 4 + 4 + 2, one epoch
}

// ---------------------------------------------------------------- Train

// Records hook calls into a shared log.
class RecordingHook : public train::SessionRunHook {
 public:
  RecordingHook(std::string name, std::vector<std::string>* log, std::string iterator_resource = "")
      : name_(std::move(name)), log_(log), iterator_resource_(std::move(iterator_resource)) {}
  void Begin(Graph&) override { log_->push_back(name_ + ".Begin"); }
  void AfterCreateSession(Session& session) override {
    std::string note;
    if (!iterator_resource_.empty()) {
      auto* it = session.resources().Lookup<data::IteratorResource>(iterator_resource_);
      note = it != nullptr && it->initialized() ? "(iterator ready)" : "(iterator missing)";
    }
    log_->push_back(name_ + ".AfterCreateSession" + note);
  }
  train::SessionRunArgs BeforeRun(train::SessionRunContext&) override {
    log_->push_back(name_ + ".BeforeRun");
    return {};
  }
  void AfterRun(train::SessionRunContext&, const train::SessionRunValues&) override {
    log_->push_back(name_ + ".AfterRun");
  }
  void End(Session&) override { log_->push_back(name_ + ".End"); }

 private:
  std::string name_;
  std::vector<std::string>* log_;
  std::string iterator_resource_;
};

class RecordingListener : public train::CheckpointSaverListener {
 public:
  explicit RecordingListener(std::vector<std::string>* log) : log_(log) {}
  void Begin() override { log_->push_back("L.Begin"); }
  void BeforeSave(Session&, int64_t step) override {
    log_->push_back("L.BeforeSave" + std::to_string(step));
  }
  bool AfterSave(Session&, int64_t step) override {
    log_->push_back("L.AfterSave" + std::to_string(step));
    return false;
  }
  void End(Session&, int64_t step) override { log_->push_back("L.End" + std::to_string(step)); }

 private:
  std::vector<std::string>* log_;
};

TEST(EstimatorTrainTest, HooksRunInTheDocumentedOrder) {
  TempDir dir;
  LinearData d = MakeLinearData(64);
  std::vector<std::string> log;
  auto spec_hook = std::make_shared<RecordingHook>("C", &log);
  auto chief_hook = std::make_shared<RecordingHook>("D", &log);
  Estimator estimator(
      [&](Scope& s, const Features& f, Output labels, Mode mode, const Params& p,
          const RunConfig& c) {
        EstimatorSpec spec = LinearModelFn(s, f, labels, mode, p, c);
        spec.training_hooks = {spec_hook};
        spec.training_chief_hooks = {chief_hook};
        return spec;
      },
      QuietConfig(dir.path()));
  auto a = std::make_shared<RecordingHook>("A", &log, "iterator:Iterator");
  auto b = std::make_shared<RecordingHook>("B", &log);
  TrainResult result = estimator.Train(
      TrainInput(d), {.hooks = {a, b},
                      .steps = 2,
                      .saving_listeners = {std::make_shared<RecordingListener>(&log)}});
  EXPECT_EQ(result.global_step, 2);
  EXPECT_EQ(result.steps_run, 2);
  const std::vector<std::string> expected = {
      // Begin: user hooks, spec hooks, then the checkpoint saver (its listeners), chief hooks.
      "A.Begin", "B.Begin", "C.Begin", "L.Begin", "D.Begin",
      // The dataset initializer ran before the user hooks; the saver's first checkpoint
      // comes after them.
      "A.AfterCreateSession(iterator ready)", "B.AfterCreateSession", "C.AfterCreateSession",
      "L.BeforeSave0", "L.AfterSave0", "D.AfterCreateSession", "A.BeforeRun", "B.BeforeRun",
      "C.BeforeRun", "D.BeforeRun", "A.AfterRun", "B.AfterRun", "C.AfterRun", "D.AfterRun",
      "A.BeforeRun", "B.BeforeRun", "C.BeforeRun", "D.BeforeRun", "A.AfterRun", "B.AfterRun",
      "C.AfterRun", "D.AfterRun", "A.End", "B.End", "C.End", "L.BeforeSave2", "L.AfterSave2",
      "L.End2", "D.End"};
  EXPECT_EQ(log, expected);
}

TEST(EstimatorTrainTest, DefaultHooksAreBuiltInTfOrder) {
  TempDir dir;
  LinearData d = MakeLinearData(16);
  RunConfig config = QuietConfig(dir.path());
  config.log_step_count_steps = 100;
  Estimator estimator(LinearModelFn, config);
  ModelGraph model = EstimatorInternals::BuildModelGraph(estimator, TrainInput(d), Mode::kTrain);
  auto user = std::make_shared<train::FeedFnHook>([] { return FeedList{}; });
  auto scaffold = std::make_shared<train::Scaffold>();
  std::shared_ptr<train::FileWriter> writer;
  train::HookList hooks = EstimatorInternals::TrainingHooks(
      estimator, model, {.hooks = {user}, .max_steps = 5}, scaffold, &writer);
  EXPECT_NE(writer, nullptr);  // the one the checkpoint saver and the summary hooks share
  std::vector<std::string> names;
  for (const auto& hook : hooks) {
    const train::SessionRunHook& h = *hook;
    names.push_back(typeid(h).name());
  }
  const std::vector<std::string> expected = {
      typeid(DatasetInitializerHook).name(),   typeid(train::FeedFnHook).name(),
      typeid(train::StopAtStepHook).name(),    typeid(train::NanTensorHook).name(),
      typeid(train::LoggingTensorHook).name(), typeid(train::CheckpointSaverHook).name(),
      typeid(train::StepCounterHook).name(),   typeid(train::SummarySaverHook).name()};
  EXPECT_EQ(names, expected);
}

TEST(EstimatorTrainTest, StepsAreRelativeMaxStepsAbsoluteAndTrainingResumes) {
  TempDir dir;
  LinearData d = MakeLinearData(64);
  std::vector<std::string> lines;
  ScopedLogSink sink([&](LogLevel, const std::string& line) { lines.push_back(line); });
  {
    Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
    EXPECT_EQ(estimator.Train(TrainInput(d), {.steps = 10}).global_step, 10);
    EXPECT_EQ(estimator.Train(TrainInput(d), {.steps = 5}).global_step, 15);
    TrainResult r = estimator.Train(TrainInput(d), {.max_steps = 25});
    EXPECT_EQ(r.global_step, 25);
    EXPECT_EQ(r.steps_run, 10);
    ASSERT_TRUE(r.final_loss.has_value());
  }
  // A new Estimator on the same model_dir resumes from its checkpoint.
  Estimator resumed(LinearModelFn, QuietConfig(dir.path()));
  lines.clear();
  TrainResult skipped = resumed.Train(TrainInput(d), {.max_steps = 20});
  EXPECT_EQ(skipped.steps_run, 0);
  EXPECT_EQ(skipped.global_step, 25);
  bool logged = false;
  for (const auto& line : lines) {
    logged = logged ||
             (line.find("max_steps") != std::string::npos && line.find("25") != std::string::npos);
  }
  EXPECT_TRUE(logged) << "training silently skipped";
  EXPECT_EQ(resumed.model_fn_calls(), 0);  // nothing built
  TrainResult more = resumed.Train(TrainInput(d), {.max_steps = 30});
  EXPECT_EQ(more.global_step, 30);
  EXPECT_EQ(more.steps_run, 5);
  bool final_loss_logged = false;
  for (const auto& line : lines)
    final_loss_logged |= line.find("Loss for final step") != std::string::npos;
  EXPECT_TRUE(final_loss_logged);
  EXPECT_THROW(resumed.Train(TrainInput(d), {.steps = 1, .max_steps = 40}), Error);
  EXPECT_THROW(resumed.Train(TrainInput(d), {.steps = 0}), Error);
}

// Issue 9 item 7: resuming with another batch size does not restore the old input
// position into the new pipeline (nor silently start over): the error names the
// checkpoint and the change; TrainOptions::restart_input starts the input over.
TEST(EstimatorTrainTest, ResumingWithAnotherBatchSizeIsAnErrorUnlessTheInputRestarts) {
  TempDir dir;
  LinearData d = MakeLinearData(64);
  Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  EXPECT_EQ(estimator.Train(TrainInput(d, 8), {.steps = 10}).global_step, 10);
  const std::string message = ErrorOf([&] { estimator.Train(TrainInput(d, 16), {.steps = 5}); },
                                      ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find(dir.Join("model.ckpt-10.safetensors")), std::string::npos) << message;
  EXPECT_NE(message.find("'Batch batch_size=8 drop_remainder=false'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("'Batch batch_size=16 drop_remainder=false'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("restart_input"), std::string::npos) << message;
  EXPECT_EQ(train::StepValue(estimator.GetVariableValue("global_step")), 10);  // nothing trained
  // The same pipeline resumes; a changed one starts over when asked to.
  EXPECT_EQ(estimator.Train(TrainInput(d, 8), {.steps = 5}).global_step, 15);
  EXPECT_EQ(estimator.Train(TrainInput(d, 16), {.steps = 5, .restart_input = true}).global_step,
            20);
  EXPECT_EQ(estimator.Train(TrainInput(d, 16), {.steps = 5}).global_step, 25);
}

// The training graph declares its loss (GraphKeys::kLoss) for hooks that report it.
class LossCollectionHook : public train::SessionRunHook {
 public:
  // Names, not Outputs: the training graph (and its nodes) is gone after Train returns.
  void Begin(Graph& graph) override {
    for (const Output& loss : graph.collections().Get(GraphKeys::kLoss)) {
      losses.push_back(loss.name());
    }
  }
  std::vector<std::string> losses;
};

TEST(EstimatorTrainTest, TheTrainingGraphDeclaresTheSpecsLoss) {
  TempDir dir;
  LinearData d = MakeLinearData(16);
  std::string loss_name;
  Estimator estimator(
      [&](Scope& s, const Features& f, Output labels, Mode mode, const Params& p,
          const RunConfig& c) {
        EstimatorSpec spec = LinearModelFn(s, f, labels, mode, p, c);
        loss_name = spec.loss.name();
        return spec;
      },
      QuietConfig(dir.path()));
  auto hook = std::make_shared<LossCollectionHook>();
  estimator.Train(TrainInput(d), {.hooks = {hook}, .steps = 1});
  ASSERT_EQ(hook->losses.size(), 1u);
  EXPECT_EQ(hook->losses[0], loss_name);
}

TEST(EstimatorTrainTest, TrainsUntilInputEndsWithoutSteps) {
  TempDir dir;
  LinearData d = MakeLinearData(40);
  Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  // 2 epochs of 40 examples in batches of 8: 10 steps, then end of input stops cleanly.
  InputFn two_epochs = ArrayInputFn(
      {.x = {{"x", d.x}}, .y = d.y, .batch_size = 8, .num_epochs = 2, .shuffle = true, .seed = 1});
  TrainResult r = estimator.Train(two_epochs);
  EXPECT_EQ(r.global_step, 10);
  EXPECT_EQ(*estimator.LatestCheckpoint(), dir.Join("model.ckpt-10"));
}

// ---------------------------------------------------------------- Evaluate

std::map<std::string, std::map<int64_t, double>> ReadScalars(const std::string& eval_dir) {
  std::map<std::string, std::map<int64_t, double>> out;
  Env* env = Env::Default();
  for (const std::string& path : env->Glob(JoinPath(eval_dir, "events.out.tfevents.*"))) {
    auto reader = EventFileReader::Open(env, path);
    while (auto event = reader->Next()) {
      if (!event->has_summary()) continue;
      for (const auto& v : event->summary().value()) out[v.tag()][event->step()] = v.simple_value();
    }
  }
  return out;
}

TEST(EstimatorEvaluateTest, NoCheckpointIsAClearError) {
  TempDir dir;
  LinearData d = MakeLinearData(16);
  Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  std::string message =
      ErrorOf([&] { estimator.Evaluate(EvalInput(d)); }, ErrorCode::kFailedPrecondition);
  EXPECT_NE(message.find("no checkpoint"), std::string::npos) << message;
  EXPECT_NE(message.find(dir.path()), std::string::npos) << message;
  PredictionRange lazy = estimator.Predict(EvalInput(d));  // nothing runs yet (TF's generator)
  EXPECT_THROW(lazy.Next(), Error);
}

TEST(EstimatorEvaluateTest, MetricsLossMeanAndSummaries) {
  TempDir dir;
  LinearData train = MakeLinearData(256, 1);
  LinearData eval = MakeLinearData(40, 2);
  Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  estimator.Train(TrainInput(train), {.steps = 30});
  std::map<std::string, double> m = estimator.Evaluate(EvalInput(eval, 16));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m["global_step"], 30);
  EXPECT_GT(m["mae"], 0);

  // "loss" is the mean over batches (16, 16, 8 examples) of each batch's loss.
  Tensor w = estimator.GetVariableValue("w");
  Tensor b = estimator.GetVariableValue("b");
  double sum_of_batch_losses = 0;
  for (int64_t begin = 0; begin < 40; begin += 16) {
    const int64_t end = std::min<int64_t>(begin + 16, 40);
    double sq = 0;
    for (int64_t i = begin; i < end; ++i) {
      const float* x = eval.x.data<float>() + 2 * i;
      double p = x[0] * w.data<float>()[0] + x[1] * w.data<float>()[1] + b.data<float>()[0];
      sq += (p - eval.y.data<float>()[i]) * (p - eval.y.data<float>()[i]);
    }
    sum_of_batch_losses += sq / (end - begin);
  }
  EXPECT_NEAR(m["loss"], sum_of_batch_losses / 3, 1e-5);

  // steps limits the batches.
  std::map<std::string, double> two =
      estimator.Evaluate(EvalInput(eval, 16), {.steps = 1, .name = "one"});
  EXPECT_NE(two["loss"], m["loss"]);

  auto scalars = ReadScalars(dir.Join("eval"));
  ASSERT_TRUE(scalars.count("loss"));
  EXPECT_FLOAT_EQ(scalars["loss"][30], static_cast<float>(m["loss"]));
  EXPECT_FLOAT_EQ(scalars["mae"][30], static_cast<float>(m["mae"]));
  EXPECT_FALSE(scalars.count("global_step"));
  EXPECT_FLOAT_EQ(ReadScalars(dir.Join("eval_one"))["loss"][30], static_cast<float>(two["loss"]));
}

TEST(EstimatorEvaluateTest, GraphIsCachedAndNewCheckpointsAreRestored) {
  TempDir dir;
  LinearData train = MakeLinearData(128, 1);
  LinearData eval = MakeLinearData(32, 2);
  Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  estimator.Train(TrainInput(train), {.steps = 10});
  ASSERT_EQ(estimator.model_fn_calls(), 1);
  auto first = estimator.Evaluate(EvalInput(eval));
  EXPECT_EQ(estimator.model_fn_calls(), 2);
  auto second = estimator.Evaluate(EvalInput(eval));
  EXPECT_EQ(estimator.model_fn_calls(), 2) << "the eval graph was rebuilt";
  EXPECT_EQ(first, second);  // the metrics were reset, the iterator restarted

  estimator.Train(TrainInput(train), {.steps = 20});
  ASSERT_EQ(estimator.model_fn_calls(), 3);
  auto third = estimator.Evaluate(EvalInput(eval));
  EXPECT_EQ(estimator.model_fn_calls(), 3) << "a new checkpoint should not rebuild the graph";
  EXPECT_EQ(third["global_step"], 30);
  EXPECT_LT(third["loss"], first["loss"]);
  // An older checkpoint by path is restored into the same session.
  auto old = estimator.Evaluate(EvalInput(eval), {.checkpoint_path = dir.Join("model.ckpt-10")});
  EXPECT_EQ(old, first);
  EXPECT_EQ(estimator.model_fn_calls(), 3);

  // Hooks make the call uncached (TF's behavior), with the same results.
  std::vector<std::string> log;
  auto with_hooks =
      estimator.Evaluate(EvalInput(eval), {.hooks = {std::make_shared<RecordingHook>("E", &log)}});
  EXPECT_EQ(estimator.model_fn_calls(), 4);
  EXPECT_EQ(with_hooks, third);
  EXPECT_EQ(log.front(), "E.Begin");
  EXPECT_EQ(log.back(), "E.End");
  // A dataset of another structure rebuilds.
  auto other_batch =
      ArrayInputFn({.x = {{"x", eval.x}}, .y = eval.y, .batch_size = 32, .shuffle = false});
  estimator.Evaluate(other_batch);
  EXPECT_EQ(estimator.model_fn_calls(), 4);  // same spec ([?,2], [?,1]): still cached
}

// ---------------------------------------------------------------- Predict

TEST(EstimatorPredictTest, LazySingleExamplesAndBatches) {
  TempDir dir;
  LinearData train = MakeLinearData(128, 1);
  LinearData inputs = MakeLinearData(10, 5);
  Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  estimator.Train(TrainInput(train), {.steps = 20});
  Tensor w = estimator.GetVariableValue("w");
  Tensor b = estimator.GetVariableValue("b");

  // Count the examples the input pipeline produced, to see that Predict is lazy.
  auto pulled = std::make_shared<std::atomic<int>>(0);
  InputFn counting = [&, pulled](Scope&) {
    return data::FromTensorSlices({{"x", inputs.x}})
        .Map([pulled](data::Element e) {
          ++*pulled;
          return e;
        })
        .Batch(4);
  };
  int64_t i = 0;
  {
    PredictionRange range = estimator.Predict(counting);
    EXPECT_EQ(*pulled, 0);
    for (const Prediction& p : range) {
      if (i == 0) {
        EXPECT_EQ(*pulled, 4) << "more than one batch was pulled for one example";
      }
      ASSERT_EQ(p.size(), 2u);
      const Tensor& y = p.at("predictions");
      ASSERT_EQ(y.shape(), Shape({1}));
      const float* x = inputs.x.data<float>() + 2 * i;
      EXPECT_NEAR(y.data<float>()[0],
                  x[0] * w.data<float>()[0] + x[1] * w.data<float>()[1] + b.data<float>()[0], 1e-5);
      EXPECT_FLOAT_EQ(p.at("double").data<float>()[0], 2 * y.data<float>()[0]);
      ++i;
    }
  }  // the range releases the cached session here
  EXPECT_EQ(i, 10);

  std::vector<Prediction> batches =
      estimator.Predict(counting, {.predict_keys = {"double"}, .yield_single_examples = false})
          .ToVector();
  ASSERT_EQ(batches.size(), 3u);  // 4 + 4 + 2
  EXPECT_EQ(batches[0].size(), 1u);
  EXPECT_EQ(batches[0].at("double").shape(), Shape({4, 1}));
  EXPECT_EQ(batches[2].at("double").shape(), Shape({2, 1}));
  EXPECT_EQ(estimator.model_fn_calls(), 2) << "the predict graph was rebuilt";

  EXPECT_NE(ErrorOf([&] { estimator.Predict(counting, {.predict_keys = {"nope"}}).Next(); },
                    ErrorCode::kInvalidArgument)
                .find("'nope'"),
            std::string::npos);
  // Two live ranges do not share a session.
  PredictionRange r1 = estimator.Predict(counting);
  PredictionRange r2 = estimator.Predict(counting);
  EXPECT_EQ(r1.ToVector().size(), 10u);
  EXPECT_EQ(r2.ToVector().size(), 10u);
}

// ---------------------------------------------------------------- the TF1 workaround

// As in docs/porting_from_tf1.md: a dataset over placeholders, an initializable iterator, and a
// hook that feeds the placeholders once the session exists.
class IteratorInitializerHook : public loom::SessionRunHook {
 public:
  std::function<void(loom::Session&)> initialize;
  void AfterCreateSession(loom::Session& session) override { initialize(session); }
};

struct InputFnAndHook {
  loom::InputFn input_fn;
  std::shared_ptr<IteratorInitializerHook> hook;
};

InputFnAndHook MakeInputFn(loom::Tensor features, loom::Tensor labels, int batch_size) {
  auto hook = std::make_shared<IteratorInitializerHook>();
  auto input_fn = [=](loom::Scope& scope) {
    auto x = loom::Placeholder(scope, loom::kFloat32, {-1, 2});
    auto y = loom::Placeholder(scope, loom::kFloat32, {-1, 1});
    auto dataset = loom::data::FromTensorSlices({{"x", x}, {"label", y}})
                       .Shuffle(100000, {.seed = 5})
                       .Repeat()
                       .Batch(batch_size);
    auto iterator = dataset.MakeInitializableIterator(scope);
    hook->initialize = [=](loom::Session& session) {
      session.Run({{x, features}, {y, labels}}, /*fetches=*/{},
                  /*targets=*/{iterator.initializer()});
    };
    return iterator.GetNext();
  };
  return {input_fn, hook};
}

TEST(EstimatorWorkaroundTest, PlaceholderDatasetWithIteratorInitializerHook) {
  TempDir dir;
  LinearData d = MakeLinearData(200, 9);
  loom::Estimator estimator(LinearModelFn, QuietConfig(dir.path()));
  auto [input_fn, hook] = MakeInputFn(d.x, d.y, /*batch_size=*/16);
  TrainResult first = estimator.Train(input_fn, {.hooks = {hook}, .max_steps = 5});
  TrainResult last = estimator.Train(input_fn, {.hooks = {hook}, .max_steps = 200});
  EXPECT_EQ(last.global_step, 200);
  ASSERT_TRUE(first.final_loss && last.final_loss);
  EXPECT_LT(*last.final_loss, *first.final_loss);
  EXPECT_LT(*last.final_loss, 0.05);
  auto metrics = estimator.Evaluate(input_fn, {.steps = 5, .hooks = {hook}});
  EXPECT_EQ(metrics["global_step"], 200);
  EXPECT_LT(metrics["loss"], 0.05);
}

// Regression test for a fix in train/saver.cc found here: a checkpoint saved after a
// restore but before a one-shot iterator's first GetNext (what CheckpointSaverHook does in
// AfterCreateSession) kept no input position, so a crash before the next checkpoint
// restarted the epoch.
TEST(SaverIteratorStateTest, SaveBeforeFirstGetNextKeepsTheRestoredPosition) {
  TempDir dir;
  Graph graph;
  Scope s(graph);
  auto iterator = data::Range(10).MakeOneShotIterator(s);
  Output next = iterator.GetNext().at("x");
  train::Saver saver(graph, {.save_iterators = true});
  std::string first;
  {
    Session session(graph);
    session.Eval(next);
    session.Eval(next);
    first = saver.Save(session, dir.Join("model.ckpt"), 1);
  }
  std::string second;
  {
    Session session(graph);
    saver.Restore(session, first);
    second = saver.Save(session, dir.Join("model.ckpt"), 2);  // before any GetNext
  }
  Session session(graph);
  saver.Restore(session, second);
  EXPECT_EQ(session.Eval(next).scalar<int64_t>(), 2);
}

}  // namespace
}  // namespace loom
