// DNNClassifier on Fashion-MNIST: a canned estimator over one numeric feature column of
// 784 pixels. The TF1 program it mirrors:
//
//   pixels = tf.feature_column.numeric_column("x", shape=[784])
//   classifier = tf.estimator.DNNClassifier(hidden_units=[512, 256], feature_columns=[pixels],
//                                           n_classes=10, optimizer="Adam", model_dir=...)
//   classifier.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=128,
//                                                       num_epochs=None, shuffle=True),
//                    max_steps=steps)
//   classifier.evaluate(tf.estimator.inputs.numpy_input_fn({"x": x_test}, y_test, shuffle=False))
//
// Usage: dnn_fashion_mnist [--data DIR] [--steps N] [--limit N] [--model_dir DIR]
//                          [--learning_rate F] [--batch_size N] [--dropout F]
//   --limit trains and tests on the first N images (the test suite uses a small N).
//   Without --model_dir a fresh temporary directory is used (so training starts anew).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "examples/fashion_mnist_data.h"
#include "loom/base/env.h"
#include "loom/estimator/canned.h"
#include "loom/io/idx.h"

int main(int argc, char** argv) {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string model_dir;
  int64_t steps = 4000;
  int64_t limit = 0;
  int64_t batch_size = 128;
  double learning_rate = 1e-3;
  double dropout = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--data"))
      data_dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--limit"))
      limit = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--model_dir"))
      model_dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--learning_rate"))
      learning_rate = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch_size"))
      batch_size = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dropout"))
      dropout = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "unknown flag %s; usage: %s [--data DIR] [--steps N] [--limit N] "
                   "[--model_dir DIR] [--learning_rate F] [--batch_size N] [--dropout F]\n",
                   argv[i], argv[0]);
      return 2;
    }
  }
  bool remove_model_dir = false;
  try {
    if (model_dir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      model_dir =
          loom::JoinPath(tmp ? tmp : "/tmp", "dnn_fashion_mnist_" + std::to_string(::getpid()));
      remove_model_dir = true;
    }
    auto [train_x, train_y] = examples::LoadFashionMnist(data_dir, "train", limit);
    auto [test_x, test_y] = examples::LoadFashionMnist(data_dir, "t10k", limit);

    namespace fc = loom::feature_column;
    loom::DNNClassifier classifier(
        {.hidden_units = {512, 256},
         .feature_columns = {fc::NumericColumn("x", {.shape = {784}})},
         .n_classes = 10,
         .optimizer = loom::OptimizerSpec("Adam", learning_rate),
         .dropout = dropout},
        {.model_dir = model_dir, .tf_random_seed = 42, .save_checkpoints_steps = 1000});

    auto train_input = loom::ArrayInputFn({.x = {{"x", train_x}},
                                           .y = train_y,
                                           .batch_size = batch_size,
                                           .num_epochs = std::nullopt,
                                           .shuffle = true,
                                           .seed = 7});
    auto result = classifier.Train(train_input, {.max_steps = steps});
    std::printf("trained to step %lld; final loss %.4f\n", (long long)result.global_step,
                result.final_loss.value_or(0.0));

    auto eval_input = loom::ArrayInputFn(
        {.x = {{"x", test_x}}, .y = test_y, .batch_size = 1000, .shuffle = false});
    auto metrics = classifier.Evaluate(eval_input);
    std::printf("test accuracy %.4f; average loss %.4f on %lld images\n", metrics["accuracy"],
                metrics["average_loss"], (long long)test_x.dim(0));
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  if (remove_model_dir) {
    try {
      loom::Env::Default()->DeleteRecursively(model_dir);
    } catch (...) {
    }
  }
  return 0;
}
