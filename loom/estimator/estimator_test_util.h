#ifndef LOOM_ESTIMATOR_ESTIMATOR_TEST_UTIL_H_
#define LOOM_ESTIMATOR_ESTIMATOR_TEST_UTIL_H_

// Test helpers: a linear-regression model function built from raw ops (no layers), its
// data, and temporary directories. Header-only; used by the tests and the kill helper.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/estimator/estimator.h"
#include "loom/ops/dropout.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/testing/temp_dir.h"
#include "loom/train/global_step.h"
#include "loom/train/gradient_descent.h"

namespace loom::estimator_testing {

// y = x . [2, -3] + 0.5 + noise, x ~ U(-1, 1)^2: n examples, "x" float32 [n, 2],
// labels float32 [n, 1].
struct LinearData {
  Tensor x;
  Tensor y;
};
inline LinearData MakeLinearData(int64_t n, uint32_t seed = 7, float noise = 0.05f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> g(0, noise);
  LinearData d{Tensor(kFloat32, {n, 2}), Tensor(kFloat32, {n, 1})};
  float* x = d.x.data<float>();
  float* y = d.y.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    x[2 * i] = u(rng);
    x[2 * i + 1] = u(rng);
    y[i] = 2 * x[2 * i] - 3 * x[2 * i + 1] + 0.5f + g(rng);
  }
  return d;
}

// Shuffled, repeated batches of `d` (seed 3) for training; one pass in order for evaluation.
inline InputFn TrainInput(const LinearData& d, int64_t batch = 8) {
  return ArrayInputFn({.x = {{"x", d.x}},
                       .y = d.y,
                       .batch_size = batch,
                       .num_epochs = std::nullopt,
                       .shuffle = true,
                       .seed = 3});
}
inline InputFn EvalInput(const LinearData& d, int64_t batch = 16) {
  return ArrayInputFn({.x = {{"x", d.x}}, .y = d.y, .batch_size = batch, .shuffle = false});
}

// A mean over batches of a scalar, on local variables (what a metrics library provides).
inline MetricOps TestMean(const Scope& root, const std::string& name, Output x) {
  Scope s = root.NewSubScope(name);
  VariableOptions local{.trainable = false, .local = true};
  Variable total(s.WithOpName("total"), Const(s, Tensor::Scalar<float>(0)), local);
  Variable count(s.WithOpName("count"), Const(s, Tensor::Scalar<float>(0)), local);
  Operation update = Group(s, {AssignAdd(s, total, x), AssignAdd(s, count, 1.0f)});
  return {Div(s, total, Maximum(s, count, 1.0f)), update};
}

// Linear regression: predictions {"predictions": [n,1], "double": 2 * predictions},
// mean squared error, gradient descent (params "learning_rate", default 0.1), and an
// eval metric "mae".
inline EstimatorSpec LinearModelFn(Scope& s, const Features& features, Output labels, Mode mode,
                                   const Params& params, const RunConfig&) {
  Output x = features.at("x");
  Variable w(s.WithOpName("w"), RandomNormal(s, {2, 1}, kFloat32, 0.0, 0.1));
  Variable b(s.WithOpName("b"), Const(s, Tensor::FromVector<float>({0.f}, {1})));
  Output prediction = Add(s.WithOpName("prediction"), MatMul(s, x, w), b);
  Predictions predictions = {{"predictions", prediction}, {"double", Mul(s, prediction, 2.0f)}};
  if (mode == Mode::kPredict) return {.mode = mode, .predictions = predictions};
  Output loss = Mean(s.WithOpName("loss"), Square(s, Sub(s, prediction, labels)));
  if (mode == Mode::kTrain) {
    double lr = params.count("learning_rate") ? GetParam<double>(params, "learning_rate") : 0.1;
    Operation train_op =
        train::GradientDescent({.learning_rate = lr}).Minimize(s, loss, train::GlobalStep(s));
    return {.mode = mode, .predictions = predictions, .loss = loss, .train_op = train_op};
  }
  return {.mode = mode,
          .predictions = predictions,
          .loss = loss,
          .eval_metric_ops = {
              {"mae", TestMean(s, "mae", Mean(s, Abs(s, Sub(s, prediction, labels))))}}};
}

// A fresh directory, removed by the destructor (loom/testing/temp_dir.h).
using TempDir = loom::testing::TempDir;

}  // namespace loom::estimator_testing

#endif  // LOOM_ESTIMATOR_ESTIMATOR_TEST_UTIL_H_
