// Trains an MLP (784-512-512-10, ReLU, Adam) on Fashion-MNIST with the graph API alone:
// a tf.data-style pipeline over the IDX files (zero-copy slices), a Session loop, then
// test accuracy. The TF1 program it mirrors:
//
//   x, y = iterator.get_next()
//   logits = dense(dense(dense(x, 512, relu), 512, relu), 10)
//   loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
//   train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step)
//
// Usage: fashion_mnist_mlp [--data DIR] [--epochs N] [--limit N]
//   --limit trains and tests on the first N images (the test suite uses a small N).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "examples/fashion_mnist_data.h"
#include "loom/base/env.h"
#include "loom/data/dataset.h"
#include "loom/io/idx.h"
#include "loom/ops/array.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/runtime/session.h"
#include "loom/train/adam.h"
#include "loom/train/global_step.h"

namespace {

// A fully connected layer: relu(x W + b) when `relu`, else x W + b.
loom::Output Dense(const loom::Scope& parent, loom::Output x, int64_t units, bool relu,
                   int64_t seed) {
  loom::Scope s = parent.NewSubScope("dense");
  const int64_t fan_in = x.shape().dim(-1);
  // Glorot uniform, as tf.layers.dense.
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + units));
  loom::Variable w(s.WithOpName("kernel"),
                   loom::RandomUniform(s, {fan_in, units}, loom::kFloat32, -limit, limit, seed));
  loom::Variable b(s.WithOpName("bias"), loom::Tensor::Zeros(loom::kFloat32, {units}));
  loom::Output y = loom::BiasAdd(s, loom::MatMul(s, x, w), b);
  return relu ? loom::Relu(s, y) : y;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 3;
  int64_t limit = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--data"))
      data_dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--epochs"))
      epochs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--limit"))
      limit = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s; usage: %s [--data DIR] [--epochs N] [--limit N]\n",
                   argv[i], argv[0]);
      return 2;
    }
  }
  try {
    auto [train_x, train_y] = examples::LoadFashionMnist(data_dir, "train", limit);
    auto [test_x, test_y] = examples::LoadFashionMnist(data_dir, "t10k", limit);
    const int64_t batch_size = 256;

    loom::Graph graph({.seed = 42});
    loom::Scope s(graph);
    auto train_it = loom::data::FromTensorSlices({{"x", train_x}, {"label", train_y}})
                        .Shuffle(60000, {.seed = 7})
                        .Repeat(epochs)
                        .Batch(batch_size)
                        .Prefetch(2)
                        .MakeOneShotIterator(s.NewSubScope("train_input"));
    auto batch = train_it.GetNext();
    // One model, two inputs: the training iterator, or a fed test batch.
    auto x = loom::PlaceholderWithDefault(s.WithOpName("x"), batch.at("x"), {-1, 784});
    auto labels = loom::PlaceholderWithDefault(s.WithOpName("labels"), batch.at("label"), {-1});

    auto h1 = Dense(s, x, 512, true, 1);
    auto h2 = Dense(s, h1, 512, true, 2);
    auto logits = Dense(s, h2, 10, false, 3);
    auto loss = loom::Mean(s.WithOpName("loss"),
                           loom::SparseSoftmaxCrossEntropyWithLogits(s, labels, logits));
    auto global_step = loom::train::GlobalStep(s);
    auto train_op = loom::train::Adam({.learning_rate = 1e-3}).Minimize(s, loss, global_step);
    auto correct = loom::Equal(s, loom::ArgMax(s, logits, 1), labels);
    auto accuracy = loom::Mean(s, loom::Cast(s, correct, loom::kFloat32));
    auto init = loom::GlobalVariablesInitializer(s);
    graph.Finalize();

    loom::Session session(graph);
    session.RunTarget(init);
    int64_t step = 0;
    double recent_loss = 0;
    for (;;) {
      try {
        recent_loss = session.Run({}, {loss}, {train_op})[0].scalar<float>();
      } catch (const loom::Error& e) {
        if (e.code() == loom::ErrorCode::kOutOfRange) break;  // all epochs done
        throw;
      }
      if (++step % 100 == 0) std::printf("step %lld  loss %.4f\n", (long long)step, recent_loss);
    }
    auto acc = session.Eval(accuracy, {{x, test_x}, {labels, test_y}}).scalar<float>();
    std::printf("trained %lld steps; final loss %.4f; test accuracy %.4f on %lld images\n",
                (long long)step, recent_loss, acc, (long long)test_x.dim(0));
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
