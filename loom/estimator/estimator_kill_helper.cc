// A training process for estimator_kill_test: trains the test's linear model, with dropout
// on its input while training, to max_steps in model_dir, sleeping sleep_us per step so
// the test can SIGKILL it mid-run.
//   estimator_kill_helper <model_dir> <max_steps> <sleep_us>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "loom/estimator/estimator_test_util.h"

namespace {

class SleepHook : public loom::SessionRunHook {
 public:
  explicit SleepHook(int us) : us_(us) {}
  void AfterRun(loom::SessionRunContext&, const loom::SessionRunValues&) override {
    if (us_ > 0) ::usleep(us_);
  }

 private:
  int us_;
};

// LinearModelFn on Dropout(x) in training: the masks differ at every step, so only a
// resume that restores the dropout's stream ends where an uninterrupted run ends.
loom::EstimatorSpec DropoutLinearModelFn(loom::Scope& s, const loom::Features& features,
                                         loom::Output labels, loom::Mode mode,
                                         const loom::Params& params, const loom::RunConfig& config) {
  loom::Features input = features;
  if (mode == loom::Mode::kTrain) {
    input["x"] = loom::Dropout(s.WithOpName("input_dropout"), features.at("x"), 0.2);
  }
  return loom::estimator_testing::LinearModelFn(s, input, labels, mode, params, config);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <model_dir> <max_steps> <sleep_us>\n", argv[0]);
    return 2;
  }
  using namespace loom;
  estimator_testing::LinearData data = estimator_testing::MakeLinearData(100, 11);
  Estimator estimator(DropoutLinearModelFn, {.model_dir = argv[1],
                                                         .tf_random_seed = 1,
                                                         .save_checkpoints_steps = 5,
                                                         .log_step_count_steps = 0});
  InputFn input_fn = ArrayInputFn({.x = {{"x", data.x}},
                                   .y = data.y,
                                   .batch_size = 8,
                                   .num_epochs = std::nullopt,
                                   .shuffle = true,
                                   .seed = 3});
  TrainResult result =
      estimator.Train(input_fn, {.hooks = {std::make_shared<SleepHook>(std::atoi(argv[3]))},
                                 .max_steps = std::atoll(argv[2])});
  std::printf("done %lld\n", static_cast<long long>(result.global_step));
  return 0;
}
