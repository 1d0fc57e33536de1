// A line-by-line C++ port of Fashion-MNIST's own TF Estimator benchmark script
// (/usr/share/doc/dataset-fashion-mnist/benchmark/convnet.py.gz), for the comparison of
// issue 13: the script run through loom.compat.v1 (examples/python/
// fashion_convnet_benchmark.py) against this program, same model, optimizer, batch and
// steps. What the script does, and this does the same:
//   - the data: the four IDX files, images as float32 [n, 784] in [0, 1], labels int32;
//     train and test each shuffled once (sklearn's shuffle, unseeded);
//   - the model: reshape to [-1, 28, 28, 1], conv 5x5x32 SAME + ReLU, max-pool 2x2/2,
//     conv 5x5x64 SAME + ReLU, max-pool 2x2/2, reshape to [-1, 3136], dense 1024 + ReLU,
//     dropout 0.4 in training, dense 10; tf.layers' default initializers (Glorot uniform
//     kernels, zero biases);
//   - the loss: softmax_cross_entropy over one_hot(cast(labels, int32), 10), the mean;
//   - training: GradientDescentOptimizer(0.001), numpy_input_fn batch 400, shuffled,
//     repeated; the default RunConfig (no graph seed, checkpoints every 600 s, summaries
//     every 100 steps);
//   - the loop: `rounds` times train(steps) then evaluate over the test set
//     (numpy_input_fn's default batch of 128, one epoch), printing the metrics.
// The script's loop is 100 rounds of 2000 steps; --rounds and --steps shorten it.
//
// Usage: fashion_convnet_port [--steps 2000] [--rounds 100] [--limit_train N]
//            [--limit_test N] [--seed S] [--no_preshuffle 1] [--threads N]
//            [--log_every N] [--model_dir DIR] [--data_dir DIR]
// --seed sets RunConfig's tf_random_seed (the graph seed, which also seeds the input
// order and dropout) and the data shuffles (the script has none); --no_preshuffle 1 keeps
// the files' order instead of the one-off shuffles; --threads sets the Sessions' thread
// count (default: all cores); --log_every sets log_step_count_steps (the "loss = ...,
// step = ..." line; default 100). With model_dir holding a checkpoint, training goes on
// from it (as the Estimator does): convnet_comparison.py --shared-init puts the Python
// run's step-0 checkpoint there, so both start from the same variables and input state.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "examples/fashion_mnist_data.h"
#include "loom/loom.h"

namespace L = loom::layers;

namespace {

loom::EstimatorSpec CnnModelFn(loom::Scope& s, const loom::Features& features, loom::Output labels,
                               loom::Mode mode) {
  auto input_layer = loom::Reshape(s, features.at("x"), {-1, 28, 28, 1});
  auto conv1 = L::Conv2D(
      s, input_layer,
      {.filters = 32, .kernel_size = {5, 5}, .padding = "same", .activation = loom::Relu});
  auto pool1 = L::MaxPooling2D(s, conv1, {.pool_size = {2, 2}, .strides = 2});
  auto conv2 = L::Conv2D(
      s, pool1,
      {.filters = 64, .kernel_size = {5, 5}, .padding = "same", .activation = loom::Relu});
  auto pool2 = L::MaxPooling2D(s, conv2, {.pool_size = {2, 2}, .strides = 2});
  auto pool2_flat = loom::Reshape(s, pool2, {-1, 7 * 7 * 64});
  auto dense = L::Dense(s, pool2_flat, {.units = 1024, .activation = loom::Relu});
  auto dropout = L::Dropout(s, dense, {.rate = 0.4, .training = mode == loom::Mode::kTrain});
  auto logits = L::Dense(s, dropout, {.units = 10});

  loom::Predictions predictions = {
      {"classes", loom::ArgMax(s, logits, 1)},
      {"probabilities", loom::Softmax(s.WithOpName("softmax_tensor"), logits)}};
  if (mode == loom::Mode::kPredict) return {.mode = mode, .predictions = predictions};

  auto onehot_labels = loom::OneHot(s, loom::Cast(s, labels, loom::kInt32), 10);
  auto loss = loom::losses::SoftmaxCrossEntropy(s, onehot_labels, logits);
  if (mode == loom::Mode::kTrain) {
    auto train_op = loom::train::GradientDescent({.learning_rate = 0.001})
                        .Minimize(s, loss, loom::train::GlobalStep(s));
    return {.mode = mode, .loss = loss, .train_op = train_op};
  }
  return {.mode = mode,
          .loss = loss,
          .eval_metric_ops = {
              {"accuracy", loom::metrics::Accuracy(s, labels, predictions["classes"])}}};
}

// The first `limit` examples (all when 0) as float32 images and int32 labels, permuted
// together (sklearn.utils.shuffle) unless `shuffle` is false.
std::pair<loom::Tensor, loom::Tensor> LoadShuffled(const std::string& dir, const std::string& split,
                                                   int64_t limit, bool shuffle,
                                                   std::mt19937_64& rng) {
  auto [x, y64] = examples::LoadFashionMnist(dir, split, limit);
  int64_t n = x.dim(0);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) std::shuffle(order.begin(), order.end(), rng);
  loom::Tensor images(loom::kFloat32, {n, 784});
  loom::Tensor labels(loom::kInt32, {n});
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(images.data<float>() + i * 784, x.data<float>() + order[i] * 784,
                784 * sizeof(float));
    labels.data<int32_t>()[i] = static_cast<int32_t>(y64.data<int64_t>()[order[i]]);
  }
  return {images, labels};
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 2000, rounds = 100, limit_train = 0, limit_test = 0, log_every = 100;
  int threads = 0;
  bool preshuffle = true;
  std::optional<int64_t> seed;
  std::string data_dir = examples::kFashionMnistDir;
  std::string model_dir = "/tmp/loom_fashion_convnet_port_" + std::to_string(getpid());
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--steps") {
      steps = std::atoll(value);
    } else if (flag == "--rounds") {
      rounds = std::atoll(value);
    } else if (flag == "--limit_train") {
      limit_train = std::atoll(value);
    } else if (flag == "--limit_test") {
      limit_test = std::atoll(value);
    } else if (flag == "--seed") {
      seed = std::atoll(value);
    } else if (flag == "--no_preshuffle") {
      preshuffle = std::atoll(value) == 0;
    } else if (flag == "--threads") {
      threads = std::atoi(value);
    } else if (flag == "--log_every") {
      log_every = std::atoll(value);
    } else if (flag == "--model_dir") {
      model_dir = value;
    } else if (flag == "--data_dir") {
      data_dir = value;
    } else {
      std::fprintf(stderr,
                   "unknown flag %s; usage: %s [--steps N] [--rounds N] [--limit_train N] "
                   "[--limit_test N] [--seed S] [--no_preshuffle 1] [--threads N] "
                   "[--log_every N] [--model_dir DIR] [--data_dir DIR]\n",
                   argv[i], argv[0]);
      return 2;
    }
  }
  try {
    std::mt19937_64 rng(seed ? static_cast<uint64_t>(*seed) : std::random_device{}());
    auto [train_data, train_labels] = LoadShuffled(data_dir, "train", limit_train, preshuffle, rng);
    auto [eval_data, eval_labels] = LoadShuffled(data_dir, "t10k", limit_test, preshuffle, rng);

    loom::RunConfig config{.model_dir = model_dir, .log_step_count_steps = log_every};
    if (seed) config.tf_random_seed = *seed;
    config.session_config.intra_op_threads = threads;
    loom::Estimator mnist_classifier(CnnModelFn, config);

    loom::ArrayInputOptions train_options{.x = {{"x", train_data}},
                                          .y = train_labels,
                                          .batch_size = 400,
                                          .num_epochs = std::nullopt,
                                          .shuffle = true};
    // No seed of its own, as in the script: with --seed the graph seed gives the order.
    loom::InputFn train_input_fn = loom::ArrayInputFn(train_options);
    loom::InputFn eval_input_fn = loom::ArrayInputFn(
        {.x = {{"x", eval_data}}, .y = eval_labels, .num_epochs = 1, .shuffle = false});

    auto start = std::chrono::steady_clock::now();
    for (int64_t j = 0; j < rounds; ++j) {
      const loom::TrainResult trained = mnist_classifier.Train(train_input_fn, {.steps = steps});
      // SIGINT / SIGTERM ended the Train call after its step in flight and its final
      // checkpoint: end the program there, as the killed Python script would, instead of
      // evaluating and starting the next round.
      if (trained.stop_signal != 0) {
        std::fprintf(stderr, "stopped by signal %d at step %lld; the checkpoint is saved\n",
                     trained.stop_signal, static_cast<long long>(trained.global_step));
        return 128 + trained.stop_signal;
      }
      auto eval_results = mnist_classifier.Evaluate(eval_input_fn);
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("{'accuracy': %.4f, 'loss': %.4f, 'global_step': %lld} (%.1f s)\n",
                  eval_results["accuracy"], eval_results["loss"],
                  static_cast<long long>(eval_results["global_step"]), secs);
      std::fflush(stdout);
    }
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
