// The C++ port of Fashion-MNIST's own Estimator benchmark
// (/usr/share/doc/dataset-fashion-mnist/benchmark/convnet.py.gz): the same model function
// (conv 5x5x32 SAME + ReLU, max-pool 2x2, conv 5x5x64, max-pool, dense 1024 + ReLU,
// dropout 0.4, dense 10), ArrayInputFn, Train, then Evaluate. Changed from the script:
// Adam (1e-3) instead of plain SGD (1e-3), so a short run converges.
//
// Usage: fashion_mnist_cnn [--steps N] [--limit N] [--model_dir DIR]
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "examples/fashion_mnist_data.h"
#include "loom/loom.h"

namespace L = loom::layers;

loom::EstimatorSpec CnnModelFn(loom::Scope& s, const loom::Features& features, loom::Output labels,
                               loom::Mode mode) {
  auto x = loom::Reshape(s, features.at("x"), {-1, 28, 28, 1});
  auto conv1 = L::Conv2D(
      s, x, {.filters = 32, .kernel_size = {5, 5}, .padding = "same", .activation = loom::Relu});
  auto pool1 = L::MaxPooling2D(s, conv1, {.pool_size = {2, 2}, .strides = 2});
  auto conv2 = L::Conv2D(
      s, pool1,
      {.filters = 64, .kernel_size = {5, 5}, .padding = "same", .activation = loom::Relu});
  auto pool2 = L::MaxPooling2D(s, conv2, {.pool_size = {2, 2}, .strides = 2});
  auto dense = L::Dense(s, L::Flatten(s, pool2), {.units = 1024, .activation = loom::Relu});
  auto dropout = L::Dropout(s, dense, {.rate = 0.4, .training = mode == loom::Mode::kTrain});
  auto logits = L::Dense(s, dropout, {.units = 10});

  loom::Predictions predictions = {{"classes", loom::ArgMax(s, logits, 1)},
                                   {"probabilities", loom::Softmax(s, logits)}};
  if (mode == loom::Mode::kPredict) return {.mode = mode, .predictions = predictions};

  auto loss = loom::losses::SparseSoftmaxCrossEntropy(s, labels, logits);
  if (mode == loom::Mode::kTrain) {
    auto train_op =
        loom::train::Adam({.learning_rate = 1e-3}).Minimize(s, loss, loom::train::GlobalStep(s));
    return {.mode = mode, .loss = loss, .train_op = train_op};
  }
  return {.mode = mode,
          .loss = loss,
          .eval_metric_ops = {
              {"accuracy", loom::metrics::Accuracy(s, labels, predictions["classes"])}}};
}

int main(int argc, char** argv) {
  int64_t steps = 2000, limit = 0;
  std::string model_dir = "/tmp/loom_fashion_mnist_cnn_" + std::to_string(getpid());
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--limit"))
      limit = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--model_dir"))
      model_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s; usage: %s [--steps N] [--limit N] [--model_dir D]\n",
                   argv[i], argv[0]);
      return 2;
    }
  }
  try {
    auto [train_x, train_y] =
        examples::LoadFashionMnist(examples::kFashionMnistDir, "train", limit);
    auto [test_x, test_y] = examples::LoadFashionMnist(examples::kFashionMnistDir, "t10k", limit);
    loom::Estimator classifier(CnnModelFn, {.model_dir = model_dir, .tf_random_seed = 42});
    classifier.Train(loom::ArrayInputFn({.x = {{"x", train_x}},
                                         .y = train_y,
                                         .batch_size = 100,
                                         .num_epochs = std::nullopt,
                                         .shuffle = true}),
                     {.steps = steps});
    auto results = classifier.Evaluate(loom::ArrayInputFn(
        {.x = {{"x", test_x}}, .y = test_y, .batch_size = 500, .shuffle = false}));
    std::printf("test accuracy %.4f, loss %.4f, global_step %g\n", results["accuracy"],
                results["loss"], results["global_step"]);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
