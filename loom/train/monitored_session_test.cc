// The hook lifecycle of MonitoredSession, pinned by recording the call order for a clean
// stop, end of input, an error and a recovery; plus feeds merging, RunStep and the
// default hooks of MonitoredTrainingSession.
#include "loom/train/monitored_session.h"

#include <gtest/gtest.h>

#include <atomic>

#include "loom/base/logging.h"
#include "loom/data/dataset.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/runtime_test_util.h"

namespace loom::train {
namespace {

using testing::RecordingHook;
using testing::TempDir;
using testing::TinyModel;
using Log = std::vector<std::string>;

std::vector<std::string> Repeat(const std::vector<std::string>& block, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.insert(out.end(), block.begin(), block.end());
  return out;
}

Log Concat(std::initializer_list<Log> parts) {
  Log out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const Log kStep = {"A.BeforeRun", "B.BeforeRun", "A.AfterRun", "B.AfterRun"};
const Log kStart = {"A.Begin", "B.Begin", "A.AfterCreateSession", "B.AfterCreateSession"};
const Log kEnd = {"A.End", "B.End"};

TEST(MonitoredSessionLifecycle, CleanStopAtStep) {
  TinyModel m;
  Log log;
  auto a = std::make_shared<RecordingHook>("A", &log);
  auto b = std::make_shared<RecordingHook>("B", &log);
  auto stop = std::make_shared<StopAtStepHook>(StopAtStepOptions{.last_step = 3});
  auto session = SingularMonitoredSession(m.graph, {a, stop, b});
  EXPECT_TRUE(m.graph.finalized());
  int steps = 0;
  while (!session->ShouldStop()) {
    session->RunTarget(m.train_op);
    ++steps;
  }
  EXPECT_EQ(steps, 3);
  EXPECT_FALSE(session->end_of_input());
  session->Close();
  EXPECT_EQ(log, Concat({kStart, Repeat(kStep, 3), kEnd}));
  EXPECT_THROW(session->RunTarget(m.train_op), Error);
}

TEST(MonitoredSessionLifecycle, StartingAtLastStepRunsNoStep) {
  TempDir dir;
  Log log;
  for (int run = 0; run < 2; ++run) {
    TinyModel m;
    auto a = std::make_shared<RecordingHook>("A", &log);
    auto stop = std::make_shared<StopAtStepHook>(StopAtStepOptions{.last_step = 2});
    auto b = std::make_shared<RecordingHook>("B", &log);
    auto session = SingularMonitoredSession(m.graph, {a, stop, b}, {.checkpoint_dir = dir.path()});
    log.clear();
    while (!session->ShouldStop()) session->RunTarget(m.train_op);
    EXPECT_EQ(StepValue(session->raw_session().Eval(m.step)), 2);
    Saver(m.graph).Save(session->raw_session(), dir.Join("model.ckpt"), 2);
    session->Close();
  }
  // The second session was restored at step 2: its only step is cancelled in BeforeRun.
  EXPECT_EQ(log, Concat({{"A.BeforeRun", "B.BeforeRun"}, kEnd}));
}

TEST(MonitoredSessionLifecycle, StopAtStepNumStepsCountsFromRestoredStep) {
  TinyModel m;
  auto stop = std::make_shared<StopAtStepHook>(StopAtStepOptions{.num_steps = 2});
  auto session = SingularMonitoredSession(m.graph, {stop});
  session->raw_session().WriteVariable("global_step", Tensor::Scalar<int64_t>(10));
  // AfterCreateSession already ran with step 0: last step is 2, reached at once.
  session->RunTarget(m.train_op);
  EXPECT_TRUE(session->ShouldStop());
}

TEST(MonitoredSessionLifecycle, EndOfInputIsACleanStop) {
  Graph graph;
  Scope s(graph);
  GlobalStep(s);
  auto it = data::FromTensorSlices(Tensor::FromVector<float>({1, 2, 3})).MakeOneShotIterator(s);
  Output next = it.GetNext().begin()->second;
  Log log;
  auto a = std::make_shared<RecordingHook>("A", &log);
  auto b = std::make_shared<RecordingHook>("B", &log);
  auto session = SingularMonitoredSession(graph, {a, b});
  std::vector<float> seen;
  while (!session->ShouldStop()) {
    auto values = session->Run({}, {next});
    if (values.empty()) break;  // end of input: no values, ShouldStop() is now true
    seen.push_back(values[0].scalar<float>());
  }
  EXPECT_EQ(seen, (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(session->ShouldStop());
  EXPECT_TRUE(session->end_of_input());
  session.reset();  // the destructor closes cleanly: End runs
  // The fourth step's BeforeRun ran; its run threw OutOfRange, so no AfterRun.
  EXPECT_EQ(log, Concat({kStart, Repeat(kStep, 3), {"A.BeforeRun", "B.BeforeRun"}, kEnd}));
}

// A hook that throws `code` from AfterRun at the given call.
class ThrowingHook : public SessionRunHook {
 public:
  ThrowingHook(int at_call, ErrorCode code) : at_call_(at_call), code_(code) {}
  void AfterRun(SessionRunContext&, const SessionRunValues&) override {
    if (++calls_ == at_call_) throw Error(code_, "injected by ThrowingHook");
  }

 private:
  int at_call_;
  ErrorCode code_;
  int calls_ = 0;
};

TEST(MonitoredSessionLifecycle, ErrorSkipsEndAndPropagates) {
  TinyModel m;
  Log log;
  auto a = std::make_shared<RecordingHook>("A", &log);
  auto bad = std::make_shared<ThrowingHook>(2, ErrorCode::kInvalidArgument);
  auto b = std::make_shared<RecordingHook>("B", &log);
  {
    auto session = SingularMonitoredSession(m.graph, {a, bad, b});
    session->RunTarget(m.train_op);
    try {
      session->RunTarget(m.train_op);
      FAIL() << "expected the hook's error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("injected"), std::string::npos);
    }
    session->Close();  // End must not run after an error
  }
  EXPECT_EQ(log, Concat({kStart, kStep, {"A.BeforeRun", "B.BeforeRun", "A.AfterRun"}}));
}

TEST(MonitoredSessionLifecycle, ErrorInCallerCodeSkipsEndInDestructor) {
  TinyModel m;
  Log log;
  auto a = std::make_shared<RecordingHook>("A", &log);
  try {
    auto session = SingularMonitoredSession(m.graph, {a});
    session->RunTarget(m.train_op);
    throw std::runtime_error("user code failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(log, (Log{"A.Begin", "A.AfterCreateSession", "A.BeforeRun", "A.AfterRun"}));
}

std::atomic<int> g_abort_countdown{0};

// Throws Aborted on the run where the countdown reaches zero, once.
const OpDef& AbortOnceOp() {
  static const OpDef op = {
      .name = "AbortOnce",
      .num_inputs = 0,
      .stateful = true,
      .num_outputs = 0,
      .shape = [](InferenceContext&) {},
      .kernel =
          [](KernelContext&) {
            if (g_abort_countdown.fetch_sub(1) == 1) throw Aborted("injected preemption");
          },
      .no_gradient = "test op",
  };
  return op;
}

TEST(MonitoredSessionLifecycle, RecoveryRecreatesRestoresAndRetries) {
  TempDir dir;
  TinyModel m;
  Scope s(m.graph);
  Operation abort_once = s.AddNode(AbortOnceOp(), {}, {}, "abort_once");
  Operation train_op = Group(s, {m.train_op, abort_once});
  Log log;
  auto a = std::make_shared<RecordingHook>("A", &log);
  auto saver_hook = std::make_shared<CheckpointSaverHook>(
      dir.path(), CheckpointSaverOptions{.save_steps = 1, .save_graph_def = false});
  auto b = std::make_shared<RecordingHook>("B", &log);
  auto session = std::make_unique<MonitoredSession>(
      NewSessionCreator(m.graph, {.checkpoint_dir = dir.path()}), HookList{a, saver_hook, b});
  g_abort_countdown = 3;  // the third step is preempted once
  for (int i = 0; i < 4; ++i) session->RunTarget(train_op);
  // Steps 1-2 were checkpointed; the recreated session restored step 2, then 3 and 4 ran.
  EXPECT_EQ(StepValue(session->raw_session().Eval(m.step)), 4);
  EXPECT_TRUE(session->raw_session().Eval(m.w).Equals(Tensor::FromVector<float>({5, 6, 7})));
  session->Close();
  EXPECT_EQ(log, Concat({kStart,
                         Repeat(kStep, 2),
                         {"A.BeforeRun", "B.BeforeRun"},
                         {"A.AfterCreateSession", "B.AfterCreateSession"},
                         Repeat(kStep, 2),
                         kEnd}));
}

TEST(MonitoredSessionLifecycle, SingularSessionDoesNotRecover) {
  TinyModel m;
  Scope s(m.graph);
  Operation abort_once = s.AddNode(AbortOnceOp(), {}, {}, "abort_once");
  auto session = SingularMonitoredSession(m.graph);
  g_abort_countdown = 1;
  try {
    session->RunTarget(abort_once);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAborted);
  }
}

// Adds a feed and a fetch, and checks its own results.
class FeedingHook : public SessionRunHook {
 public:
  FeedingHook(Output x, Output y) : x_(x), y_(y) {}
  SessionRunArgs BeforeRun(SessionRunContext&) override {
    return {.fetches = {y_}, .feeds = {{x_, Tensor::Scalar<float>(2)}}};
  }
  void AfterRun(SessionRunContext&, const SessionRunValues& values) override {
    ASSERT_EQ(values.results.size(), 1u);
    last = values.results[0].scalar<float>();
  }
  float last = 0;

 private:
  Output x_, y_;
};

TEST(MonitoredSessionRun, HookFeedsAndFetchesAreMergedIntoOneRun) {
  TinyModel m;
  Scope s(m.graph);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, Shape{});
  Output y = Identity(s.WithOpName("y"), x);
  Output z = Placeholder(s.WithOpName("z"), kFloat32, Shape{});
  Output z_copy = Identity(s, z);
  auto hook = std::make_shared<FeedingHook>(x, y);
  auto session = SingularMonitoredSession(m.graph, {hook});
  const int64_t runs_before = session->raw_session().num_runs();
  auto out = session->Run({{z, Tensor::Scalar<float>(7)}}, {z_copy}, {m.train_op});
  EXPECT_EQ(session->raw_session().num_runs(), runs_before + 1);  // one Session::Run
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].scalar<float>(), 7);
  EXPECT_EQ(hook->last, 2);
  // The caller feeding what a hook feeds is an error, reported with the tensor's name.
  try {
    session->Run({{x, Tensor::Scalar<float>(1)}}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("x:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::train
