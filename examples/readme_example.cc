// The README's example, compiled and run by the test suite (tests/readme_test.sh checks
// that the README shows exactly the lines between the markers).
#include <cstdio>
#include <random>

#include "loom/loom.h"

int main() {
  // y = 3x - 1 plus noise: 1000 examples in host arrays, wrapped without a copy.
  std::mt19937 rng(0);
  std::normal_distribution<float> noise(0, 0.1f);
  loom::Tensor x(loom::kFloat32, {1000, 1}), y(loom::kFloat32, {1000, 1});
  for (int i = 0; i < 1000; ++i) {
    x.flat<float>()[i] = i / 500.0f - 1;
    y.flat<float>()[i] = 3 * x.flat<float>()[i] - 1 + noise(rng);
  }
  // The README shows these lines as they are written here.
  // clang-format off
  // README-BEGIN
  auto model_fn = [](loom::Scope& s, const loom::Features& features, loom::Output labels,
                     loom::Mode mode) -> loom::EstimatorSpec {
    auto predictions = loom::layers::Dense(s, features.at("x"), {.units = 1});
    if (mode == loom::Mode::kPredict) return {.mode = mode, .predictions = {{"y", predictions}}};
    auto loss = loom::losses::MeanSquaredError(s, labels, predictions);
    auto train_op = loom::train::Adam({.learning_rate = 0.1})
                        .Minimize(s, loss, loom::train::GlobalStep(s));
    return {.mode = mode, .loss = loss, .train_op = train_op,
            .eval_metric_ops = {{"rmse", loom::metrics::RootMeanSquaredError(s, labels, predictions)}}};
  };
  loom::Estimator estimator(model_fn, {.model_dir = "/tmp/loom_readme_example"});
  estimator.Train(loom::ArrayInputFn({.x = {{"x", x}}, .y = y, .batch_size = 50,
                                      .num_epochs = std::nullopt, .shuffle = true}),
                  {.steps = 300});
  auto metrics = estimator.Evaluate(
      loom::ArrayInputFn({.x = {{"x", x}}, .y = y, .batch_size = 500, .shuffle = false}));
  std::printf("rmse %.3f after %g steps\n", metrics["rmse"], metrics["global_step"]);
  // README-END
  // clang-format on
  return metrics["rmse"] < 0.2 ? 0 : 1;
}
