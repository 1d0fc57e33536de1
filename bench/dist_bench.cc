// dist_bench: data-parallel communication, run under mpirun (bench/RESULTS.md):
//   mpirun -np 2 build/bench/dist_bench [iterations]
// (1) all-reduce of the gradient sizes of the Fashion-MNIST MLP (784-512-512-10) and of
//     the convnet (examples/fashion_mnist_cnn.cc) through Loom's path — a Session step
//     running the AllReduceSum op as DistributedOptimizer builds it (one bucket: the
//     gradients copied into the fusion buffer, one MPI_Allreduce) — against a plain
//     MPI_Allreduce loop
//     over the same bytes: 9 alternating pairs of repetitions of `iterations` calls, the
//     medians and the median per-pair ratio.
// (2) the MLP's training step at a global batch of 256 (Adam, random data): steps/s on
//     this many ranks, and the share of the step spent in the all-reduce kernel.
// Rank 0 prints the figures.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "loom/distribute/collective_ops.h"
#include "loom/distribute/distributed_optimizer.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/state.h"
#include "loom/train/adam.h"
#include "loom/train/global_step.h"

namespace loom {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of fn over `iterations` calls (after one warm-up call).
template <typename Fn>
double TimePerCall(int iterations, Fn fn) {
  fn();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / iterations;
}

struct Model {
  const char* name;
  std::vector<Shape> gradients;
};

void AllReduceBench(const Model& model, std::shared_ptr<distribute::Communicator> comm,
                    int iterations) {
  Graph graph;
  Scope s(graph);
  std::vector<Output> grads;
  int64_t total = 0;
  for (const Shape& shape : model.gradients) {
    Tensor t = Tensor::Zeros(kFloat32, shape);
    for (float& v : t.flat<float>()) v = 1.0f;
    grads.push_back(Const(s, t));
    total += shape.num_elements();
  }
  std::vector<Output> summed = distribute::AllReduceSum(s, grads);
  Operation run = Group(s, {Operation(summed[0])});
  Session session(graph, {.intra_op_threads = 1});
  distribute::AttachCommunicator(session, comm);
  std::vector<float> buffer(total, 1.0f);
  auto loom_call = [&] { session.RunTarget(run); };
  auto plain_call = [&] {
    MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  };
  // Alternating repetitions (plain, Loom, plain, ...), so that a busy machine slows both
  // alike; the ratio is the median of the per-pair ratios.
  std::vector<double> plain_s, loom_s, ratio;
  for (int r = 0; r < 9; ++r) {
    plain_s.push_back(TimePerCall(iterations, plain_call));
    loom_s.push_back(TimePerCall(iterations, loom_call));
    ratio.push_back(plain_s.back() / loom_s.back());
  }
  if (comm->rank() == 0) {
    const double mb = total * 4.0 / 1e6;
    std::printf("| %-8s | %zu tensors, %.2f MB | %8.3f ms | %8.3f ms | %.2fx |\n", model.name,
                model.gradients.size(), mb, Median(plain_s) * 1e3, Median(loom_s) * 1e3,
                Median(ratio));
  }
}

void MlpStepBench(std::shared_ptr<distribute::Communicator> comm, int iterations) {
  const int64_t global_batch = 256, batch = global_batch / comm->size();
  Graph graph(GraphOptions{.seed = 1});
  Scope s(graph);
  Output step = train::GlobalStep(s);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, {batch, 784});
  Output y = Placeholder(s.WithOpName("y"), kInt64, {batch});
  Output h = layers::Dense(s, x, {.units = 512, .activation = Relu, .name = "h1"});
  h = layers::Dense(s, h, {.units = 512, .activation = Relu, .name = "h2"});
  Output logits = layers::Dense(s, h, {.units = 10, .name = "logits"});
  Output loss = losses::SparseSoftmaxCrossEntropy(s, y, logits);
  distribute::DistributedOptimizer opt(
      std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = 1e-3}));
  Operation train_op = opt.Minimize(s, loss, step);
  Operation init = GlobalVariablesInitializer(s);
  const int threads = std::max(1, ThreadPool::DefaultThreadCount() / comm->local_size());
  Session session(graph, {.intra_op_threads = threads});
  distribute::AttachCommunicator(session, comm);
  session.RunTarget(init);
  std::mt19937 rng(comm->rank());
  std::normal_distribution<float> g;
  Tensor xs(kFloat32, {batch, 784}), ys(kInt64, {batch});
  for (float& v : xs.flat<float>()) v = g(rng);
  for (int64_t i = 0; i < batch; ++i) ys.data<int64_t>()[i] = i % 10;
  const FeedList feeds = {{x, xs}, {y, ys}};
  std::vector<double> steps;
  for (int r = 0; r < 5; ++r) {
    steps.push_back(TimePerCall(iterations, [&] { session.Run(feeds, {}, {train_op}); }));
  }
  const double step_s = Median(steps);
  // The all-reduce's share of a traced step.
  double reduce_us = 0, total_us = 0;
  for (int i = 0; i < 5; ++i) {
    RunOptions options{.trace = true};
    RunMetadata metadata;
    session.Run(feeds, {}, {train_op}, &options, &metadata);
    for (const NodeExecStats& st : metadata.step_stats) {
      total_us += st.end_micros - st.start_micros;
      if (st.op == "LoomAllReduceSum" || st.op == "LoomAllGatherRows") {
        reduce_us += st.end_micros - st.start_micros;
      }
    }
  }
  if (comm->rank() == 0) {
    std::printf("| MLP b%lld | %d rank(s) x %d thread(s) | %.1f steps/s | %.1f ms/step | "
                "all-reduce %.1f%% of kernel time |\n",
                static_cast<long long>(global_batch), comm->size(), threads, 1.0 / step_s,
                step_s * 1e3, 100.0 * reduce_us / std::max(total_us, 1.0));
  }
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  using namespace loom;
  std::shared_ptr<distribute::Communicator> comm = distribute::MpiCommunicator();
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  const Model mlp{"MLP", {{784, 512}, {512}, {512, 512}, {512}, {512, 10}, {10}}};
  const Model cnn{"convnet",
                  {{5, 5, 1, 32}, {32}, {5, 5, 32, 64}, {64}, {3136, 1024}, {1024}, {1024, 10}, {10}}};
  if (comm->rank() == 0) {
    std::printf("dist_bench: %d ranks, %d calls per repetition\n\n", comm->size(),
                iterations);
    std::printf("| gradients | size | plain MPI_Allreduce | Loom AllReduceSum step | plain / Loom |\n");
    std::printf("|---|---|---|---|---|\n");
  }
  AllReduceBench(mlp, comm, iterations);
  AllReduceBench(cnn, comm, iterations);
  if (comm->rank() == 0) std::printf("\n");
  MlpStepBench(comm, std::max(3, iterations / 4));
  return 0;
}
