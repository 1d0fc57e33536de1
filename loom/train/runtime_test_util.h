#ifndef LOOM_TRAIN_RUNTIME_TEST_UTIL_H_
#define LOOM_TRAIN_RUNTIME_TEST_UTIL_H_

// Test helpers for the training runtime: a tiny model, a hook that records its calls, a
// temporary directory, and an Env whose clock the test drives.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/base/fault_injection_env.h"
#include "loom/ops/state.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/global_step.h"
#include "loom/train/session_run_hook.h"

namespace loom::train::testing {

// global_step (int64), w = [1, 2, 3]; train_op adds 1 to both.
struct TinyModel {
  Graph graph;
  Variable step;
  Variable w;
  Operation train_op;

  TinyModel() {
    Scope s(graph);
    step = GlobalStep(s);
    w = Variable(s.WithOpName("w"), Tensor::FromVector<float>({1, 2, 3}));
    train_op = Group(
        s, {AssignAdd(s, w, Tensor::FromVector<float>({1, 1, 1})), AssignAdd(s, step, int64_t{1})});
  }
};

// Appends "<name>.<Method>" to a shared log for every call.
class RecordingHook : public SessionRunHook {
 public:
  RecordingHook(std::string name, std::vector<std::string>* log)
      : name_(std::move(name)), log_(log) {}
  void Begin(Graph&) override { log_->push_back(name_ + ".Begin"); }
  void AfterCreateSession(Session&) override { log_->push_back(name_ + ".AfterCreateSession"); }
  SessionRunArgs BeforeRun(SessionRunContext&) override {
    log_->push_back(name_ + ".BeforeRun");
    return {};
  }
  void AfterRun(SessionRunContext&, const SessionRunValues&) override {
    log_->push_back(name_ + ".AfterRun");
  }
  void End(Session&) override { log_->push_back(name_ + ".End"); }

 private:
  std::string name_;
  std::vector<std::string>* log_;
};

// A fresh directory, removed at destruction (loom/testing/temp_dir.h).
using TempDir = loom::testing::TempDir;

// Forwards to a base Env (through FaultInjectionEnv) but reads the clock from now_micros.
class FakeClockEnv : public FaultInjectionEnv {
 public:
  explicit FakeClockEnv(Env* base) : FaultInjectionEnv(base) {}
  uint64_t NowMicros() override { return now_micros; }
  void AdvanceSecs(double secs) { now_micros += static_cast<uint64_t>(secs * 1e6); }
  std::atomic<uint64_t> now_micros{1'700'000'000'000'000};
};

}  // namespace loom::train::testing

#endif  // LOOM_TRAIN_RUNTIME_TEST_UTIL_H_
