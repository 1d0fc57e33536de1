// dist_bench: data-parallel communication, run under mpirun (bench/RESULTS.md):
//   mpirun -np 2 build/bench/dist_bench [iterations] [--steps-only]
// (1) all-reduce of the gradient sizes of the Fashion-MNIST MLP (784-512-512-10) and of
//     the convnet (examples/fashion_mnist_cnn.cc) through Loom's path — the buckets
//     DistributedOptimizer builds (at the default 4 MiB fusion threshold, and at 64 MiB:
//     one bucket, one message, as the plain loop; small gradients copied into a
//     fusion buffer, a gradient of its own bucket reduced in place), each an
//     AllReduceStart and AllReduceWait run by the communication thread — against a plain
//     MPI_Allreduce loop over the same bytes. Loom's time is the start and wait kernels'
//     (from the step trace; the gradients are fresh buffers each step, as in training);
//     9 alternating pairs of repetitions of `iterations` calls, the medians and the
//     median per-pair ratio.
// (2) the training steps of the MLP at a global batch of 256 and of the convnet at 64
//     (Adam, random data), with and without overlap: steps/s on this many ranks, the
//     all-reduce's busy time per step, and the share of it hidden behind the backward
//     pass (1 - time blocked in AllReduceWait / time the communication thread spent).
// Rank 0 prints the figures, with the CPU model and the load average.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "loom/distribute/collective_ops.h"
#include "loom/distribute/distributed_optimizer.h"
#include "loom/estimator/layers.h"
#include "loom/estimator/losses.h"
#include "loom/ops/array.h"
#include "loom/ops/grad_support.h"
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

bool IsCollective(const NodeExecStats& st) {
  return st.op == "LoomAllReduceStart" || st.op == "LoomAllReduceWait" ||
         st.op == "LoomAllReduceSum" || st.op == "LoomAllGatherRows";
}

void AllReduceBench(const Model& model, std::shared_ptr<distribute::Communicator> comm,
                    int iterations, int64_t fusion_threshold_bytes) {
  Graph graph;
  Scope s(graph);
  std::vector<train::GradAndVar> grads;
  int64_t total = 0;
  for (const Shape& shape : model.gradients) {
    // OnesLike: a fresh buffer every step, which nothing else holds (a gradient).
    grads.push_back({GradOutput(OnesLike(s, Const(s, Tensor::Zeros(kFloat32, shape)))), Output()});
    total += shape.num_elements();
  }
  std::vector<Operation> summed;
  int buckets = 0;
  for (const train::GradAndVar& g : distribute::SumGradientsOverRanks(
           s, grads, {.fusion_threshold_bytes = fusion_threshold_bytes})) {
    summed.push_back(Operation(g.first.dense));
  }
  buckets = distribute::CountAllReduceBuckets(graph);
  Operation run = Group(s, summed);
  Session session(graph, {.intra_op_threads = 1});
  distribute::AttachCommunicator(session, comm);
  std::vector<float> buffer(total, 1.0f);
  // Loom: the collective kernels' time in a traced step (the OnesLike fills are the
  // "backward pass" here and not counted).
  auto loom_rep = [&] {
    RunOptions options{.trace = true};
    double us = 0;
    for (int i = -1; i < iterations; ++i) {
      RunMetadata metadata;
      MPI_Barrier(MPI_COMM_WORLD);
      session.Run({}, {}, {run}, &options, &metadata);
      if (i < 0) continue;  // warm-up
      for (const NodeExecStats& st : metadata.step_stats) {
        if (IsCollective(st)) us += st.end_micros - st.start_micros;
      }
    }
    return us * 1e-6 / iterations;
  };
  auto plain_rep = [&] {
    double seconds = 0;
    for (int i = -1; i < iterations; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = Clock::now();
      MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(total), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
      if (i >= 0) seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }
    return seconds / iterations;
  };
  // Alternating repetitions (plain, Loom, plain, ...), so that a busy machine slows both
  // alike; the ratio is the median of the per-pair ratios.
  std::vector<double> plain_s, loom_s, ratio;
  for (int r = 0; r < 9; ++r) {
    plain_s.push_back(plain_rep());
    loom_s.push_back(loom_rep());
    ratio.push_back(plain_s.back() / loom_s.back());
  }
  if (comm->rank() == 0) {
    const double mb = total * 4.0 / 1e6;
    std::printf("| %-8s | %zu tensors, %.2f MB, %d bucket(s) | %8.3f ms | %8.3f ms | %.2fx |\n",
                model.name, model.gradients.size(), mb, buckets, Median(plain_s) * 1e3,
                Median(loom_s) * 1e3, Median(ratio));
  }
}

// The MLP (784-512-512-10) or the convnet of examples/fashion_mnist_cnn.cc, without
// dropout (so every rank's step is the same work), Adam.
Output BuildModel(const Scope& s, bool convnet, Output x) {
  if (!convnet) {
    Output h = layers::Dense(s, x, {.units = 512, .activation = Relu, .name = "h1"});
    h = layers::Dense(s, h, {.units = 512, .activation = Relu, .name = "h2"});
    return layers::Dense(s, h, {.units = 10, .name = "logits"});
  }
  Output image = Reshape(s, x, {-1, 28, 28, 1});
  Output h = layers::Conv2D(
      s, image, {.filters = 32, .kernel_size = {5, 5}, .padding = "same", .activation = Relu});
  h = layers::MaxPooling2D(s, h, {.pool_size = {2, 2}, .strides = 2});
  h = layers::Conv2D(s, h,
                     {.filters = 64, .kernel_size = {5, 5}, .padding = "same", .activation = Relu});
  h = layers::MaxPooling2D(s, h, {.pool_size = {2, 2}, .strides = 2});
  h = layers::Dense(s, layers::Flatten(s, h), {.units = 1024, .activation = Relu});
  return layers::Dense(s, h, {.units = 10});
}

// How a step reduces its gradients.
enum class Reduce {
  kOneBucket,      // fusion threshold 64 MiB: one LoomAllReduceSum after the backward pass
  kAfterBackward,  // default 4 MiB buckets, each a LoomAllReduceSum after the backward pass
  kOverlap,        // default 4 MiB buckets, start/wait overlapping the backward pass (a
                   // model of one bucket gets kOneBucket's synchronous op instead)
  kSmallBuckets,   // 1 MiB buckets, overlapped (the MLP in 3 buckets)
  kStartWaitOne,   // ONE bucket through LoomAllReduceStart/Wait (what the MLP got before
                   // a single bucket was made synchronous), to time that path
};
const char* ReduceName(Reduce r) {
  switch (r) {
    case Reduce::kOneBucket:
      return "1 bucket (64 MiB), after backward";
    case Reduce::kAfterBackward:
      return "4 MiB buckets, after backward";
    case Reduce::kOverlap:
      return "4 MiB buckets, overlap (default)";
    case Reduce::kSmallBuckets:
      return "1 MiB buckets, overlap";
    case Reduce::kStartWaitOne:
      return "1 bucket via start/wait";
  }
  return "";
}

double StepBench(std::shared_ptr<distribute::Communicator> comm, bool convnet, Reduce reduce,
                 int iterations) {
  const bool overlap = reduce == Reduce::kOverlap || reduce == Reduce::kSmallBuckets ||
                       reduce == Reduce::kStartWaitOne;
  const int64_t global_batch = convnet ? 64 : 256, batch = global_batch / comm->size();
  Graph graph(GraphOptions{.seed = 1});
  Scope s(graph);
  Output step = train::GlobalStep(s);
  Output x = Placeholder(s.WithOpName("x"), kFloat32, {batch, 784});
  Output y = Placeholder(s.WithOpName("y"), kInt64, {batch});
  Output loss = losses::SparseSoftmaxCrossEntropy(s, y, BuildModel(s, convnet, x));
  const int64_t threshold = reduce == Reduce::kOneBucket      ? int64_t{64} << 20
                            : reduce == Reduce::kSmallBuckets ? int64_t{1} << 20
                                                              : int64_t{4} << 20;
  Operation train_op;
  if (reduce == Reduce::kStartWaitOne) {
    train::Adam adam({.learning_rate = 1e-3});
    Output scaled = Mul(s, loss, distribute::ReplicaScale(s, kFloat32));
    std::vector<train::GradAndVar> grads = adam.ComputeGradients(s, scaled, {});
    std::vector<Output> dense;
    for (const auto& g : grads) dense.push_back(g.first.dense);
    std::vector<Output> summed = distribute::StartAndWaitAllReduceSum(s, dense, Output());
    for (size_t i = 0; i < grads.size(); ++i) grads[i].first = GradOutput(summed[i]);
    train_op = adam.ApplyGradients(s, grads, step);
  } else {
    distribute::DistributedOptimizer opt(
        std::make_unique<train::Adam>(train::AdamOptions{.learning_rate = 1e-3}),
        {.fusion_threshold_bytes = threshold, .overlap_communication = overlap});
    train_op = opt.Minimize(s, loss, step);
  }
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
  session.Run(feeds, {}, {train_op});  // warm-up
  const distribute::Communicator::OverlapStats before = comm->overlap_stats();
  std::vector<double> steps;
  for (int r = 0; r < 3; ++r) {
    steps.push_back(TimePerCall(iterations, [&] { session.Run(feeds, {}, {train_op}); }));
  }
  const distribute::Communicator::OverlapStats after = comm->overlap_stats();
  const double step_s = Median(steps);
  const int64_t runs = 3 * (iterations + 1);  // TimePerCall warms up once per repetition
  const double busy = after.busy_seconds - before.busy_seconds;
  const double exposed = after.exposed_seconds - before.exposed_seconds;
  // Without overlap the all-reduce kernel runs inside the step: its time, traced.
  double sync_us = 0;
  if (!overlap && comm->size() > 1) {
    for (int i = 0; i < 3; ++i) {
      RunOptions options{.trace = true};
      RunMetadata metadata;
      session.Run(feeds, {}, {train_op}, &options, &metadata);
      for (const NodeExecStats& st : metadata.step_stats) {
        if (IsCollective(st)) sync_us += st.end_micros - st.start_micros;
      }
    }
    sync_us /= 3;
  }
  if (comm->rank() == 0) {
    std::printf("| %s b%lld | %d rank(s) x %d thread(s) | %s | %.2f steps/s | %.1f ms/step | ",
                convnet ? "convnet" : "MLP", static_cast<long long>(global_batch), comm->size(),
                threads, comm->size() == 1 ? "none" : ReduceName(reduce), 1.0 / step_s,
                step_s * 1e3);
    if (comm->size() == 1) {
      std::printf("— | — |\n");
    } else if (overlap && after.collectives == before.collectives) {
      std::printf("one bucket: synchronous, as above | — |\n");
    } else if (overlap) {
      std::printf("%.1f ms | %.0f%% hidden |\n", 1e3 * busy / runs,
                  busy > 0 ? 100.0 * std::max(0.0, 1.0 - exposed / busy) : 0.0);
    } else {
      std::printf("%.1f ms | 0%% hidden |\n", 1e-3 * sync_us);
    }
  }
  return step_s;
}

}  // namespace
}  // namespace loom

int main(int argc, char** argv) {
  using namespace loom;
  std::shared_ptr<distribute::Communicator> comm = distribute::MpiCommunicator();
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  const bool steps_only = argc > 2 && std::strcmp(argv[2], "--steps-only") == 0;
  const Model mlp{"MLP", {{784, 512}, {512}, {512, 512}, {512}, {512, 10}, {10}}};
  const Model cnn{
      "convnet",
      {{5, 5, 1, 32}, {32}, {5, 5, 32, 64}, {64}, {3136, 1024}, {1024}, {1024, 10}, {10}}};
  if (comm->rank() == 0) {
    std::printf("dist_bench: %d ranks, %d calls per repetition; %s; load average %s\n\n",
                comm->size(), iterations, loom::bench::CpuModel().c_str(),
                loom::bench::LoadAverage(/*with_five=*/true).c_str());
  }
  if (!steps_only && comm->size() > 1) {
    if (comm->rank() == 0) {
      std::printf(
          "| gradients | size | plain MPI_Allreduce | Loom start+wait kernels | plain / Loom |\n");
      std::printf("|---|---|---|---|---|\n");
    }
    // The default buckets (4 MiB), and one bucket for everything (what a plain loop over
    // the same bytes does: one message; the fusion copy is then the whole difference).
    for (int64_t threshold : {int64_t{4} << 20, int64_t{64} << 20}) {
      AllReduceBench(mlp, comm, iterations, threshold);
      AllReduceBench(cnn, comm, iterations, threshold);
    }
    if (comm->rank() == 0) std::printf("\n");
  }
  if (comm->rank() == 0) {
    std::printf(
        "| model | ranks | all-reduce | steps/s | step | all-reduce busy/step | hidden |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
  }
  const int step_iterations = std::max(2, iterations / 4);
  std::vector<std::string> ratios;
  for (bool convnet : {false, true}) {
    const int n = convnet ? std::max(1, step_iterations / 2) : step_iterations;
    if (comm->size() == 1) {  // one process: nothing to reduce
      StepBench(comm, convnet, Reduce::kOverlap, n);
      continue;
    }
    // The one-bucket step and the default step alternately (3 pairs), so that the load
    // slows both alike; then the other variants once.
    std::vector<double> per_pair;
    for (int pair = 0; pair < 3; ++pair) {
      const double one = StepBench(comm, convnet, Reduce::kOneBucket, n);
      const double def = StepBench(comm, convnet, Reduce::kOverlap, n);
      per_pair.push_back(one / def);
    }
    for (Reduce r : {Reduce::kAfterBackward, Reduce::kSmallBuckets, Reduce::kStartWaitOne}) {
      if (convnet && r == Reduce::kSmallBuckets) continue;
      StepBench(comm, convnet, r, n);
    }
    char line[160];
    std::snprintf(line, sizeof line,
                  "%s: default step / one-bucket step (steps/s) = %.2fx "
                  "(median of 3 pairs: %.2f %.2f %.2f)",
                  convnet ? "convnet" : "MLP", Median(per_pair), per_pair[0], per_pair[1],
                  per_pair[2]);
    ratios.push_back(line);
  }
  if (comm->rank() == 0) {
    std::printf("\n");
    for (const std::string& r : ratios) std::printf("%s\n", r.c_str());
  }
  if (comm->rank() == 0)
    std::printf("\n%s; load average after: %s\n", loom::bench::CpuModel().c_str(),
                loom::bench::LoadAverage(/*with_five=*/true).c_str());
  return 0;
}
