// A training process for estimator_kill_test and estimator_stop_test: trains the test's
// linear model, with dropout on its input while training, to max_steps in model_dir,
// sleeping sleep_us per step so the test can signal it mid-run.
//   estimator_kill_helper <model_dir> <max_steps> <sleep_us> [save_steps] [end_sleep_us]
// save_steps: checkpoint every N steps (default 5). It writes, into model_dir:
//   running    after its first step;
//   end_ran    when its hook's End starts (then it sleeps end_sleep_us, default 0);
//   result     "<global step> <stop signal>" after Train returns.
// Exit status: 0, or 128 + the signal when a stop signal ended training early.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "loom/estimator/estimator_test_util.h"

namespace {

void Touch(const std::string& path, const std::string& text) {
  loom::WriteFileAtomically(loom::Env::Default(), path, text);
}

class SleepHook : public loom::SessionRunHook {
 public:
  SleepHook(std::string model_dir, int us, int end_us)
      : model_dir_(std::move(model_dir)), us_(us), end_us_(end_us) {}
  void AfterRun(loom::SessionRunContext&, const loom::SessionRunValues&) override {
    if (!running_) {
      Touch(loom::JoinPath(model_dir_, "running"), "running\n");
      running_ = true;
    }
    if (us_ > 0) ::usleep(us_);
  }
  void End(loom::Session&) override {
    Touch(loom::JoinPath(model_dir_, "end_ran"), "end\n");
    if (end_us_ > 0) ::usleep(end_us_);
  }

 private:
  std::string model_dir_;
  int us_;
  int end_us_;
  bool running_ = false;
};

// LinearModelFn on Dropout(x) in training: the masks differ at every step, so only a
// resume that restores the dropout's stream ends where an uninterrupted run ends.
loom::EstimatorSpec DropoutLinearModelFn(loom::Scope& s, const loom::Features& features,
                                         loom::Output labels, loom::Mode mode,
                                         const loom::Params& params,
                                         const loom::RunConfig& config) {
  loom::Features input = features;
  if (mode == loom::Mode::kTrain) {
    input["x"] = loom::Dropout(s.WithOpName("input_dropout"), features.at("x"), 0.2);
  }
  return loom::estimator_testing::LinearModelFn(s, input, labels, mode, params, config);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr,
                 "usage: %s <model_dir> <max_steps> <sleep_us> [save_steps] [end_sleep_us]\n",
                 argv[0]);
    return 2;
  }
  using namespace loom;
  const std::string model_dir = argv[1];
  const int64_t save_steps = argc > 4 ? std::atoll(argv[4]) : 5;
  const int end_us = argc > 5 ? std::atoi(argv[5]) : 0;
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(100, 11);
  Estimator estimator(DropoutLinearModelFn, {.model_dir = model_dir,
                                             .tf_random_seed = 1,
                                             .save_checkpoints_steps = save_steps,
                                             .log_step_count_steps = 0});
  InputFn input_fn = ArrayInputFn({.x = {{"x", data.x}},
                                   .y = data.y,
                                   .batch_size = 8,
                                   .num_epochs = std::nullopt,
                                   .shuffle = true,
                                   .seed = 3});
  TrainResult result = estimator.Train(
      input_fn, {.hooks = {std::make_shared<SleepHook>(model_dir, std::atoi(argv[3]), end_us)},
                 .max_steps = std::atoll(argv[2])});
  Touch(JoinPath(model_dir, "result"), StrCat(result.global_step, " ", result.stop_signal, "\n"));
  std::printf("done %lld\n", static_cast<long long>(result.global_step));
  return result.stop_signal != 0 ? 128 + result.stop_signal : 0;
}
