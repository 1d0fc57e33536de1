// The built-in hooks, the shared timer, and MonitoredTrainingSession's default hooks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "loom/base/logging.h"
#include "loom/io/event_file_proto.h"
#include "loom/ops/array.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/monitored_session.h"
#include "loom/train/runtime_test_util.h"
#include "loom/train/summary_proto.h"

namespace loom::train {
namespace {

using testing::FakeClockEnv;
using testing::TempDir;
using testing::TinyModel;

std::vector<std::string> CaptureLog(LogLevel min_level, const std::function<void()>& body) {
  std::vector<std::string> lines;
  ScopedLogSink sink([&](LogLevel level, const std::string& line) {
    if (level >= min_level) lines.push_back(line);
  });
  body();
  return lines;
}

bool AnyContains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::vector<proto::Event> ReadAllEvents(const std::string& dir) {
  std::vector<proto::Event> events;
  for (const auto& path : Env::Default()->Glob(JoinPath(dir, "events.out.tfevents.*"))) {
    auto reader = EventFileReader::Open(Env::Default(), path);
    while (auto e = reader->Next()) events.push_back(*e);
  }
  return events;
}

TEST(SecondOrStepTimer, StepsAndSeconds) {
  auto mem = NewMemEnv();
  FakeClockEnv env(mem.get());
  SecondOrStepTimer steps({.every_steps = 10, .env = &env});
  EXPECT_TRUE(steps.ShouldTriggerForStep(0));
  TimerElapsed first = steps.UpdateLastTriggeredStep(0);
  EXPECT_FALSE(first.secs.has_value());
  EXPECT_FALSE(steps.ShouldTriggerForStep(0));
  EXPECT_FALSE(steps.ShouldTriggerForStep(9));
  EXPECT_TRUE(steps.ShouldTriggerForStep(10));
  env.AdvanceSecs(2);
  TimerElapsed e = steps.UpdateLastTriggeredStep(12);
  EXPECT_DOUBLE_EQ(*e.secs, 2);
  EXPECT_EQ(*e.steps, 12);

  SecondOrStepTimer secs({.every_secs = 5, .env = &env});
  secs.UpdateLastTriggeredStep(1);
  EXPECT_FALSE(secs.ShouldTriggerForStep(100));
  env.AdvanceSecs(5);
  EXPECT_TRUE(secs.ShouldTriggerForStep(100));
  EXPECT_FALSE(secs.ShouldTriggerForStep(1));  // the same step never triggers twice

  EXPECT_THROW(SecondOrStepTimer({}), Error);
  EXPECT_THROW(SecondOrStepTimer({.every_secs = 1, .every_steps = 1}), Error);
  SecondOrStepTimer never({.never = true});
  EXPECT_FALSE(never.ShouldTriggerForStep(0));
}

TEST(Hooks, HooksNeedingAGlobalStepSayWhich) {
  Graph graph;
  Scope s(graph);
  Variable w(s.WithOpName("w"), 1.0f);
  auto hook = std::make_shared<StopAtStepHook>(StopAtStepOptions{.last_step = 1});
  try {
    SingularMonitoredSession(graph, {hook});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("StopAtStepHook"), std::string::npos);
  }
}

TEST(Hooks, LoggingTensorHookEveryNIterAndAtEnd) {
  TinyModel m;
  auto every2 = std::make_shared<LoggingTensorHook>(
      std::vector<std::pair<std::string, Output>>{{"step", m.step}},
      LoggingTensorOptions{.every_n_iter = 2});
  auto at_end = std::make_shared<LoggingTensorHook>(
      std::vector<Output>{m.w},
      LoggingTensorOptions{.at_end = true, .formatter = [](const std::map<std::string, Tensor>& v) {
                             return "final w " + v.at("w:0").DebugString();
                           }});
  auto lines = CaptureLog(LogLevel::kInfo, [&] {
    auto session = SingularMonitoredSession(m.graph, {every2, at_end});
    for (int i = 0; i < 5; ++i) session->RunTarget(m.train_op);
    session->Close();
  });
  // Iterations 0, 2, 4 log the step fetched before the increment.
  int logged = 0;
  for (const auto& l : lines) logged += l.find("step = ") != std::string::npos;
  EXPECT_EQ(logged, 3);
  EXPECT_TRUE(AnyContains(lines, "sec)"));
  EXPECT_TRUE(AnyContains(lines, "final w float32[3] [6 7 8]"));
}

// TF's LoggingTensorHook logs numpy values: "loss = 10.0, step = 1", not "float32[] [10]".
TEST(Hooks, LoggingTensorHookPrintsValuesAsNumpyDoes) {
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<float>(10.0f)), "10.0");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<float>(0.6931472f)), "0.6931472");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<double>(0.1 + 0.2)), "0.30000000000000004");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<float>(1e-5f)), "1e-05");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<double>(-2.5e20)), "-2.5e+20");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<float>(std::nanf(""))), "nan");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<int64_t>(1)), "1");
  EXPECT_EQ(FormatLikeNumpy(Tensor::Scalar<bool>(true)), "True");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<float>({1, 2, 3})), "[1. 2. 3.]");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<float>({1.5f, 2.25f})), "[1.5  2.25]");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<double>({-1.5, 2, 10})), "[-1.5  2.  10. ]");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<double>({1e-5, 1})), "[1.e-05 1.e+00]");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<int32_t>({1, 10, -3})), "[ 1 10 -3]");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<int64_t>({1, 2, 3, 4}, {2, 2})), "[[1 2]\n [3 4]]");
  EXPECT_EQ(FormatLikeNumpy(Tensor::FromVector<int64_t>({1, 2}, {1, 1, 2})), "[[[1 2]]]");

  TinyModel m;
  Scope s(m.graph);
  Output loss = Const(s, Tensor::Scalar<float>(10.0f));
  auto hook = std::make_shared<LoggingTensorHook>(
      std::vector<std::pair<std::string, Output>>{{"loss", loss}, {"step", m.step}},
      LoggingTensorOptions{.every_n_iter = 1});
  auto lines = CaptureLog(LogLevel::kInfo, [&] {
    auto session = SingularMonitoredSession(m.graph, {hook});
    session->RunTarget(m.train_op);
    session->Close();
  });
  EXPECT_TRUE(AnyContains(lines, "loss = 10.0, step = 1")) << ::testing::PrintToString(lines);
}

// TF 1.15's SummarySaverHook with save_steps = 100 writes at global steps 1, 101, 201
// (SecondOrStepTimer triggers at last + 100, and the step is read after the increment).
TEST(Hooks, SummarySaverWritesAtTheStepsTfWrites) {
  TempDir dir;
  TinyModel m;
  Scope s(m.graph);
  Output summary =
      ScalarSummary(s, "w0", Reshape(s, Slice(s, m.w, {0}, {1}), std::vector<int64_t>{}));
  auto saver = std::make_shared<SummarySaverHook>(
      SummarySaverOptions{.save_steps = 100, .output_dir = dir.path(), .summary_op = summary});
  {
    auto session = SingularMonitoredSession(m.graph, {saver});
    for (int i = 0; i < 250; ++i) session->RunTarget(m.train_op);
    session->Close();
  }
  std::vector<int64_t> steps;
  for (const auto& e : ReadAllEvents(dir.path())) {
    if (e.has_summary()) steps.push_back(e.step());
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 101, 201}));
}

// TF's SummaryWriterCache: hooks given the same output_dir share one event file.
TEST(Hooks, HooksGivenOneOutputDirShareOneEventFile) {
  TempDir dir;
  TinyModel m;
  Scope s(m.graph);
  Output summary =
      ScalarSummary(s, "w0", Reshape(s, Slice(s, m.w, {0}, {1}), std::vector<int64_t>{}));
  {
    auto counter = std::make_shared<StepCounterHook>(
        StepCounterOptions{.every_n_steps = 1, .output_dir = dir.path()});
    auto saver = std::make_shared<SummarySaverHook>(SummarySaverOptions{
        .save_steps = 1, .output_dir = dir.path() + "/", .summary_op = summary});
    EXPECT_EQ(SharedFileWriter(dir.path()), SharedFileWriter(dir.path() + "//"));
    auto session = SingularMonitoredSession(m.graph, {counter, saver});
    for (int i = 0; i < 3; ++i) session->RunTarget(m.train_op);
    session->Close();
  }
  EXPECT_EQ(Env::Default()->Glob(dir.Join("events.out.tfevents.*")).size(), 1u);
  // Released by every holder, the next writer is a new file.
  SharedFileWriter(dir.path());
  EXPECT_EQ(Env::Default()->Glob(dir.Join("events.out.tfevents.*")).size(), 2u);
}

TEST(Hooks, StepCounterWritesStepsPerSecond) {
  TempDir dir;
  TinyModel m;
  FakeClockEnv clock(Env::Default());
  auto writer = std::make_shared<FileWriter>(dir.path());
  auto counter = std::make_shared<StepCounterHook>(
      StepCounterOptions{.every_n_steps = 2, .summary_writer = writer, .env = &clock});
  auto session = SingularMonitoredSession(m.graph, {counter});
  for (int i = 0; i < 5; ++i) {
    clock.AdvanceSecs(0.5);
    session->RunTarget(m.train_op);
  }
  session->Close();
  writer->Close();
  std::vector<double> rates;
  for (const auto& e : ReadAllEvents(dir.path())) {
    for (const auto& v : e.summary().value()) {
      EXPECT_EQ(v.tag(), "global_step/sec");
      rates.push_back(v.simple_value());
    }
  }
  // Triggers at steps 1, 3, 5: two intervals of 2 steps in 1 s each.
  EXPECT_EQ(rates, (std::vector<double>{2.0, 2.0}));
}

// The summaries of a step counter reach the disk at End, and a failure to write them is
// the caller's error (it used to be a log line when the writer was destroyed).
TEST(Hooks, StepCounterEndFlushesAndReportsAFailedSync) {
  for (bool fail : {false, true}) {
    SCOPED_TRACE(fail ? "failing sync" : "no fault");
    TempDir dir;
    TinyModel m;
    FakeClockEnv env(Env::Default());
    auto writer =
        std::make_shared<FileWriter>(dir.path(), FileWriterOptions{.max_queue = 100, .env = &env});
    auto counter = std::make_shared<StepCounterHook>(
        StepCounterOptions{.every_n_steps = 1, .summary_writer = writer, .env = &env});
    auto session = SingularMonitoredSession(m.graph, {counter});
    for (int i = 0; i < 3; ++i) {
      env.AdvanceSecs(0.5);
      session->RunTarget(m.train_op);
    }
    const int64_t syncs = env.num_ops(FaultOp::kSync);
    if (fail) env.FailNth(FaultOp::kSync, 1);
    if (fail) {
      try {
        session->Close();
        ADD_FAILURE() << "the failed flush of the summaries was swallowed";
      } catch (const Error& e) {
        EXPECT_NE(e.message().find("injected"), std::string::npos) << e.what();
      }
    } else {
      session->Close();
      EXPECT_GT(env.num_ops(FaultOp::kSync), syncs);  // End flushed, durably
      // In the file before the writer is closed: max_queue and flush_secs were not reached.
      int summaries = 0;
      for (const auto& e : ReadAllEvents(dir.path())) summaries += e.has_summary();
      EXPECT_GE(summaries, 1);
    }
    env.ClearFaults();
  }
}

TEST(Hooks, NanTensorHookFailsOrStops) {
  for (bool fail : {true, false}) {
    TinyModel m;
    Scope s(m.graph);
    Output loss = Placeholder(s.WithOpName("loss"), kFloat32, Shape{});
    auto nan_hook = std::make_shared<NanTensorHook>(loss, fail);
    auto session = SingularMonitoredSession(m.graph, {nan_hook});
    session->Run({{loss, Tensor::Scalar<float>(1)}}, {});
    EXPECT_FALSE(session->ShouldStop());
    if (fail) {
      EXPECT_THROW(session->Run({{loss, Tensor::Scalar<float>(NAN)}}, {}), Error);
    } else {
      session->Run({{loss, Tensor::Scalar<float>(NAN)}}, {});
      EXPECT_TRUE(session->ShouldStop());
    }
  }
}

TEST(Hooks, FeedFnAndFinalOps) {
  TinyModel m;
  Scope s(m.graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Variable acc(s.WithOpName("acc"), 0.0f);
  Output add = AssignAdd(s, acc, x);
  int calls = 0;
  auto feed = std::make_shared<FeedFnHook>([&] {
    ++calls;
    return FeedList{{x, Tensor::Scalar<float>(static_cast<float>(calls))}};
  });
  auto final_ops = std::make_shared<FinalOpsHook>(std::vector<Output>{acc, m.step});
  auto session = SingularMonitoredSession(m.graph, {feed, final_ops});
  for (int i = 0; i < 3; ++i) session->Run({}, {}, {add, m.train_op});
  EXPECT_TRUE(final_ops->final_ops_values().empty());
  session->Close();
  ASSERT_EQ(final_ops->final_ops_values().size(), 2u);
  EXPECT_EQ(final_ops->final_ops_values()[0].scalar<float>(), 6);  // 1 + 2 + 3
  EXPECT_EQ(StepValue(final_ops->final_ops_values()[1]), 3);
}

TEST(Hooks, GlobalStepWaiterBlocksUntilTheStepArrives) {
  TinyModel m;
  auto waiter = std::make_shared<GlobalStepWaiterHook>(5, /*poll_secs=*/0.005);
  auto session = SingularMonitoredSession(m.graph, {waiter});
  Session& raw = session->raw_session();
  std::thread chief([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    raw.WriteVariable("global_step", Tensor::Scalar<int64_t>(7));
  });
  session->RunTarget(m.train_op);  // blocks in BeforeRun until the "chief" moved the step
  chief.join();
  EXPECT_EQ(StepValue(raw.Eval(m.step)), 8);
}

TEST(Hooks, ProfilerWritesChromeTrace) {
  TempDir dir;
  TinyModel m;
  auto profiler =
      std::make_shared<ProfilerHook>(ProfilerOptions{.save_steps = 2, .output_dir = dir.path()});
  auto session = SingularMonitoredSession(m.graph, {profiler});
  for (int i = 0; i < 5; ++i) session->RunTarget(m.train_op);
  session->Close();
  auto files = Env::Default()->Glob(dir.Join("timeline-*.json"));
  ASSERT_EQ(files.size(), 2u);  // steps 2 and 4 (the first step only arms the timer)
  EXPECT_EQ(Basename(files[0]), "timeline-2.json");
  auto trace = nlohmann::json::parse(ReadFileToString(Env::Default(), files[0]));
  bool saw_assign = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_GE(e["ts"].get<int64_t>(), 0);
    EXPECT_GE(e["dur"].get<int64_t>(), 0);
    saw_assign = saw_assign || e["cat"] == "AssignAdd";
  }
  EXPECT_TRUE(saw_assign) << trace.dump();
}

TEST(Hooks, EarlyStoppingOnAMetricThatStopsImproving) {
  TinyModel m;
  // Loss by eval step: best at step 20, no decrease afterwards.
  std::map<int64_t, double> metrics = {{10, 0.5}, {20, 0.3}, {30, 0.35}};
  auto hook = std::make_shared<EarlyStoppingHook>(
      EarlyStoppingOptions{.metric_name = "loss",
                           .read_metrics = [&] { return metrics; },
                           .max_steps_without_improvement = 20,
                           .run_every_steps = 1});
  auto session = SingularMonitoredSession(m.graph, {hook});
  session->RunTarget(m.train_op);
  EXPECT_FALSE(session->ShouldStop());  // the best is only 10 steps old
  metrics[40] = 0.31;
  session->RunTarget(m.train_op);
  EXPECT_TRUE(session->ShouldStop());
}

TEST(Hooks, EarlyStoppingReadsEvalEventFiles) {
  TempDir dir;
  {
    FileWriter writer(dir.path());
    for (auto [step, acc] : std::vector<std::pair<int64_t, double>>{{1, 0.5}, {2, 0.9}, {3, 0.8}}) {
      writer.AddSummary(ScalarSummaryProto("accuracy", acc), step);
    }
  }
  auto values = EarlyStoppingHook::ReadEvalMetric(Env::Default(), dir.path(), "accuracy");
  ASSERT_EQ(values.size(), 3u);
  EXPECT_NEAR(values[2], 0.9, 1e-6);
}

class StopAfterSecondSave : public CheckpointSaverListener {
 public:
  explicit StopAfterSecondSave(std::vector<std::string>* log) : log_(log) {}
  void Begin() override { log_->push_back("Begin"); }
  void BeforeSave(Session&, int64_t step) override {
    log_->push_back("BeforeSave " + std::to_string(step));
  }
  bool AfterSave(Session&, int64_t step) override {
    log_->push_back("AfterSave " + std::to_string(step));
    return step == 2;
  }
  void End(Session&, int64_t step) override { log_->push_back("End " + std::to_string(step)); }

 private:
  std::vector<std::string>* log_;
};

TEST(Hooks, CheckpointSaverListenerOrderAndStopRequest) {
  TempDir dir;
  TinyModel m;
  std::vector<std::string> log;
  auto saver_hook = std::make_shared<CheckpointSaverHook>(
      dir.path(), CheckpointSaverOptions{
                      .save_steps = 2, .listeners = {std::make_shared<StopAfterSecondSave>(&log)}});
  auto session = SingularMonitoredSession(m.graph, {saver_hook});
  while (!session->ShouldStop()) session->RunTarget(m.train_op);
  session->Close();
  EXPECT_EQ(log, (std::vector<std::string>{"Begin", "BeforeSave 0", "AfterSave 0", "BeforeSave 2",
                                           "AfterSave 2", "End 2"}));
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("model.ckpt-2.safetensors")));
  EXPECT_TRUE(Env::Default()->FileExists(dir.Join("graph.pbtxt")));
}

TEST(MonitoredTrainingSession, DefaultChiefHooksWriteCheckpointsSummariesAndResume) {
  TempDir dir;
  for (int run = 0; run < 2; ++run) {
    TinyModel m;
    Scope s(m.graph);
    HistogramSummary(s, "w", m.w);  // found by the Scaffold's MergeAllSummaries
    auto stop = std::make_shared<StopAtStepHook>(StopAtStepOptions{.num_steps = 3});
    auto session = MonitoredTrainingSession(m.graph, {.checkpoint_dir = dir.path(),
                                                      .hooks = {stop},
                                                      .save_checkpoint_steps = 2,
                                                      .save_summaries_steps = 1,
                                                      .log_step_count_steps = 1});
    while (!session->ShouldStop()) session->RunTarget(m.train_op);
    // The second run resumed from step 3's checkpoint (saved by End).
    EXPECT_EQ(StepValue(session->raw_session().Eval(m.step)), 3 * (run + 1));
    session->Close();
  }
  auto state = ReadCheckpointState(Env::Default(), dir.path());
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path, dir.Join("model.ckpt-6"));
  int histograms = 0, starts = 0, checkpoints = 0, graphs = 0, rates = 0;
  for (const auto& e : ReadAllEvents(dir.path())) {
    if (e.has_graph_def()) ++graphs;
    if (e.has_session_log() && e.session_log().status() == proto::SessionLog::START) ++starts;
    if (e.has_session_log() && e.session_log().status() == proto::SessionLog::CHECKPOINT)
      ++checkpoints;
    for (const auto& v : e.summary().value()) {
      histograms += v.has_histo();
      rates += v.tag() == "global_step/sec";
    }
  }
  EXPECT_EQ(graphs, 2);  // once per writer (one per session)
  EXPECT_EQ(starts, 2);
  EXPECT_EQ(histograms, 6);
  EXPECT_GE(rates, 2);
  EXPECT_GE(checkpoints, 4);
}

}  // namespace
}  // namespace loom::train
