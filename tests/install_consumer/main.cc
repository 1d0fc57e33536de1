// Built by tests/install_test.sh against an installed Loom (find_package(Loom), Loom::loom):
// fits y = 3x - 1 with an Estimator, under an exponentially decaying learning rate, into
// the model directory given as argv[1], and prints the RMSE. Exits 1 when it did not learn.
#include <cstdio>
#include <random>

#include "loom/loom.h"

// A consumer needs no protobuf headers: no public Loom header includes one (the message
// APIs are in the *_proto.h headers, which are not installed).
#ifdef GOOGLE_PROTOBUF_VERSION
#error "a public Loom header includes a protobuf header"
#endif

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: install_consumer MODEL_DIR\n");
    return 2;
  }
  std::mt19937 rng(0);
  std::normal_distribution<float> noise(0, 0.1f);
  loom::Tensor x(loom::kFloat32, {500, 1}), y(loom::kFloat32, {500, 1});
  for (int i = 0; i < 500; ++i) {
    x.flat<float>()[i] = i / 250.0f - 1;
    y.flat<float>()[i] = 3 * x.flat<float>()[i] - 1 + noise(rng);
  }
  auto model_fn = [](loom::Scope& s, const loom::Features& features, loom::Output labels,
                     loom::Mode mode) -> loom::EstimatorSpec {
    auto predictions = loom::layers::Dense(s, features.at("x"), {.units = 1});
    if (mode == loom::Mode::kPredict) return {.mode = mode, .predictions = {{"y", predictions}}};
    auto loss = loom::losses::MeanSquaredError(s, labels, predictions);
    auto step = loom::train::GlobalStep(s);
    auto lr = loom::train::ExponentialDecay(s, 0.2, step, /*decay_steps=*/100, /*decay_rate=*/0.5);
    auto train_op = loom::train::Adam({.learning_rate = lr}).Minimize(s, loss, step);
    return {
        .mode = mode,
        .loss = loss,
        .train_op = train_op,
        .eval_metric_ops = {{"rmse", loom::metrics::RootMeanSquaredError(s, labels, predictions)}}};
  };
  loom::Estimator estimator(model_fn, {.model_dir = argv[1]});
  estimator.Train(
      loom::ArrayInputFn(
          {.x = {{"x", x}}, .y = y, .batch_size = 50, .num_epochs = std::nullopt, .shuffle = true}),
      {.steps = 200});
  auto metrics = estimator.Evaluate(
      loom::ArrayInputFn({.x = {{"x", x}}, .y = y, .batch_size = 500, .shuffle = false}));
  std::printf("install_consumer: rmse %.3f after %g steps\n", metrics["rmse"],
              metrics["global_step"]);
  return metrics["rmse"] < 0.2 ? 0 : 1;
}
