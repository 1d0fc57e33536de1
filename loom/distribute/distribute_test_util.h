#ifndef LOOM_DISTRIBUTE_DISTRIBUTE_TEST_UTIL_H_
#define LOOM_DISTRIBUTE_DISTRIBUTE_TEST_UTIL_H_

// The model and data the distribute tests train, in-process (distribute_test.cc) and
// under mpirun (distribute_mpi_worker.cc): an MLP over dense features plus an embedding
// (so there are dense and sparse gradients), Adam, a shuffled repeated dataset of GLOBAL
// batches. Header-only.
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "loom/distribute/data_parallel.h"
#include "loom/estimator/estimator.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/ops/array.h"
#include "loom/ops/nn.h"
#include "loom/train/adam.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"
#include "loom/train/momentum.h"

namespace loom::distribute_testing {

inline constexpr int64_t kExamples = 240;
inline constexpr int64_t kVocabulary = 50;

struct MlpData {
  Tensor x;      // float32 [n, 8]
  Tensor id;     // int64 [n], in [0, kVocabulary)
  Tensor label;  // float32 [n, 1]
};

inline MlpData MakeMlpData(int64_t n = kExamples, uint32_t seed = 3) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::uniform_int_distribution<int64_t> ids(0, kVocabulary - 1);
  MlpData d{Tensor(kFloat32, {n, 8}), Tensor(kInt64, {n}), Tensor(kFloat32, {n, 1})};
  for (int64_t i = 0; i < n; ++i) {
    float y = 0;
    for (int j = 0; j < 8; ++j) {
      const float v = g(rng);
      d.x.data<float>()[i * 8 + j] = v;
      y += (j % 3 - 1) * v;
    }
    d.id.data<int64_t>()[i] = ids(rng);
    d.label.data<float>()[i] = y + 0.1f * static_cast<float>(d.id.data<int64_t>()[i] % 5);
  }
  return d;
}

// Global batches of `batch` rows, shuffled with a fixed seed, repeated.
inline InputFn MlpInputFn(const MlpData& d, int64_t batch, bool repeat = true) {
  return [d, batch, repeat](Scope&) -> InputFnResult {
    data::Dataset ds = data::FromTensorSlices({{"x", d.x}, {"id", d.id}, {"label", d.label}})
                           .Shuffle(kExamples, {.seed = 11});
    if (repeat) ds = ds.Repeat();
    return InputFnResult(ds.Batch(batch));
  };
}

// params "distribute" (bool, default true): wrap the optimizer with DistributeOptimizer;
// "hidden_units" (int64, default 16) and "learning_rate" (double, default 0.01).
inline EstimatorSpec MlpModelFn(Scope& s, const Features& features, Output labels, Mode mode,
                                const Params& params, const RunConfig& config) {
  Output embedded =
      layers::Embedding(s, features.at("id"), {.input_dim = kVocabulary, .output_dim = 4});
  Output h = Concat(s, {features.at("x"), embedded}, 1);
  const int64_t units =
      params.count("hidden_units") ? GetParam<int64_t>(params, "hidden_units") : 16;
  h = layers::Dense(s, h, {.units = units, .activation = Relu, .name = "hidden"});
  Output prediction = layers::Dense(s, h, {.units = 1, .name = "out"});
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = {{"predictions", prediction}}};
  Output loss = losses::MeanSquaredError(s, labels, prediction);
  const bool wrap = !params.count("distribute") || GetParam<bool>(params, "distribute");
  std::unique_ptr<train::Optimizer> opt = std::make_unique<train::Adam>(train::AdamOptions{
      .learning_rate =
          params.count("learning_rate") ? GetParam<double>(params, "learning_rate") : 0.01});
  if (wrap) opt = DistributeOptimizer(config, std::move(opt));
  Operation train_op = opt->Minimize(s, loss, train::GlobalStep(s));
  return {.mode = mode,
          .predictions = {{"predictions", prediction}},
          .loss = loss,
          .train_op = train_op};
}

// max_i |a_i - b_i| / max_i |b_i|: the largest difference relative to the tensor's scale
// (an element near zero in a trained tensor says nothing about the model's accuracy).
inline double MaxRelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(y));
  }
  return diff / std::max(scale, 1e-30);
}

// Linear regression, the float64 reference's model (distribute_mpi_test computes its
// gradient by hand): x float32 [n, 3] and label float32 [n, 1], deterministic in i.
inline constexpr int kLinearInputs = 3;
inline float LinearX(int64_t i, int j) {
  return static_cast<float>(std::sin(0.7 * static_cast<double>(i) + j) + 0.25 * j);
}
inline float LinearLabel(int64_t i) {
  return 2 * LinearX(i, 0) - LinearX(i, 1) + 0.5f * LinearX(i, 2) + 0.3f +
         0.1f * static_cast<float>(i % 3);
}
inline MlpData MakeLinearData(int64_t n) {
  MlpData d{Tensor(kFloat32, {n, kLinearInputs}), Tensor(kInt64, {n}), Tensor(kFloat32, {n, 1})};
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < kLinearInputs; ++j)
      d.x.data<float>()[i * kLinearInputs + j] = LinearX(i, j);
    d.id.data<int64_t>()[i] = i;
    d.label.data<float>()[i] = LinearLabel(i);
  }
  return d;
}
inline constexpr double kLinearSgdRate = 0.1, kLinearMomentumRate = 0.05, kLinearMomentum = 0.9;

// prediction = x . kernel + bias, kernel and bias starting at zero; the mean squared error;
// params "optimizer": "sgd" (GradientDescent, kLinearSgdRate) or "momentum" (Momentum,
// kLinearMomentumRate, kLinearMomentum), wrapped by DistributeOptimizer.
inline EstimatorSpec LinearModelFn(Scope& s, const Features& features, Output labels, Mode mode,
                                   const Params& params, const RunConfig& config) {
  Output prediction = layers::Dense(s, features.at("x"),
                                    {.units = 1,
                                     .kernel_initializer = initializers::Zeros(),
                                     .bias_initializer = initializers::Zeros(),
                                     .name = "linear"});
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = {{"predictions", prediction}}};
  Output loss = losses::MeanSquaredError(s, labels, prediction);
  std::unique_ptr<train::Optimizer> opt;
  if (GetParam<std::string>(params, "optimizer") == "momentum") {
    opt = std::make_unique<train::Momentum>(
        train::MomentumOptions{.learning_rate = kLinearMomentumRate, .momentum = kLinearMomentum});
  } else {
    opt = std::make_unique<train::GradientDescent>(
        train::GradientDescentOptions{.learning_rate = kLinearSgdRate});
  }
  opt = DistributeOptimizer(config, std::move(opt));
  Operation train_op = opt->Minimize(s, loss, train::GlobalStep(s));
  return {.mode = mode,
          .predictions = {{"predictions", prediction}},
          .loss = loss,
          .train_op = train_op};
}

}  // namespace loom::distribute_testing

#endif  // LOOM_DISTRIBUTE_DISTRIBUTE_TEST_UTIL_H_
