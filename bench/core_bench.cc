// Loom's side of the core benchmarks (bench/run_core.sh runs it beside bench/torch_peer.py).
// Same models, batch sizes and thread counts as the PyTorch script; data already in memory
// and fed each step (feeding shares the buffer, no copy). Prints one JSON line.
//
// Usage: core_bench MODEL THREADS [STEPS] [trace] [baseline] [direct_conv]
//   direct_conv: Conv2D and its backprops never take Winograd (loom/ops/winograd_conv.h),
//   to measure what it gains against oneDNN's direct kernels in the same binary.
//   MODEL: mlp | softreg | convnet | mlp_gemm (the MLP step's matrix products alone,
//          through the same BLAS: the GEMM-only bound) | convnet_gemm (the convnet step's
//          products as im2col + GEMM would run them, through loom::Gemm: its GEMM-only bound)
//          | convnet_kernels (the convnet step's products as Loom runs them: oneDNN's
//          convolution primitives or Winograd (UseWinograd; direct_conv: oneDNN only) and
//          loom::Gemm for the dense layers; nothing else)
//          | predict_dnn | predict_convnet (inference: the softmax probabilities of the
//          demo's DNN 784-256-128-10 at batch 1024, of the convnet at batch 256, one
//          Session::Run per batch; the JSON line adds rows_per_sec)
//   MODEL:PRECISION (mlp:bf16, convnet:bf16-emulated, predict_convnet:bf16, ...): the model
//          with every MatMul / Conv2D under that precision policy (loom/graph/precision.h)
//          | softreg_gemm (the softmax regression step's two products, X W and X^T dY,
//          through loom::Gemm; with the flag openblas or onednn, through that library)
//          | overhead (the runtime's own cost: a chain of 16 scalar Adds that each read a
//          variable, fetched per Run; the JSON line adds us_per_node)
//   bf16_info: prints the CPU and what "bf16" runs on it (hardware kernels or fallback)
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/base/thread_pool.h"
#include "loom/graph/precision.h"
#include "loom/ops/array.h"
#include "loom/ops/bf16_support.h"
#include "loom/ops/blas.h"
#include "loom/ops/dropout.h"
#include "loom/ops/math.h"
#include "loom/ops/matmul.h"
#include "loom/ops/nn.h"
#include "loom/ops/onednn_conv.h"
#include "loom/ops/random.h"
#include "loom/ops/reduce.h"
#include "loom/ops/state.h"
#include "loom/ops/vector_isa.h"
#include "loom/ops/winograd_conv.h"
#include "loom/runtime/session.h"
#include "loom/train/adam.h"
#include "loom/train/gradient_descent.h"

namespace {

using Clock = std::chrono::steady_clock;

// The precision policy of the model's products (MODEL:PRECISION), set by main.
loom::Precision g_precision = loom::Precision::kFloat32;

loom::Tensor RandomTensor(const loom::Shape& shape, uint64_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  loom::Tensor t(loom::kFloat32, shape);
  for (float& v : t.flat<float>()) v = dist(rng);
  return t;
}

loom::Tensor RandomLabels(int64_t n, uint64_t seed) {
  std::mt19937 rng(seed);
  loom::Tensor t(loom::kInt64, {n});
  for (int64_t& v : t.flat<int64_t>()) v = rng() % 10;
  return t;
}

loom::Output Dense(const loom::Scope& parent, loom::Output x, int64_t units, bool relu) {
  loom::Scope s = parent.NewSubScope("dense");
  const int64_t fan_in = x.shape().dim(-1);
  const double limit = std::sqrt(6.0 / double(fan_in + units));
  loom::Variable w(s.WithOpName("kernel"),
                   loom::RandomUniform(s, {fan_in, units}, loom::kFloat32, -limit, limit, 1));
  loom::Variable b(s.WithOpName("bias"), loom::Tensor::Zeros(loom::kFloat32, {units}));
  loom::Output y = loom::BiasAdd(s, loom::MatMul(s, x, w, {.precision = g_precision}), b);
  return relu ? loom::Relu(s, y) : y;
}

loom::Output Conv(const loom::Scope& parent, loom::Output x, int64_t filters) {
  loom::Scope s = parent.NewSubScope("conv2d");
  const int64_t in = x.shape().dim(-1);
  const double limit = std::sqrt(6.0 / double(25 * in + 25 * filters));
  loom::Variable w(s.WithOpName("kernel"),
                   loom::RandomUniform(s, {5, 5, in, filters}, loom::kFloat32, -limit, limit, 2));
  loom::Variable b(s.WithOpName("bias"), loom::Tensor::Zeros(loom::kFloat32, {filters}));
  return loom::Relu(s,
                    loom::BiasAdd(s, loom::Conv2D(s, x, w, {1, 1, 1, 1}, "SAME", g_precision), b));
}

// The fastest single step of the timed ones, in seconds (set by TimeSteps): on a shared
// machine the minimum is what other processes disturb least.
double g_min_step = 0;
// The process's CPU time over the timed steps (all threads), in seconds (set by
// TimeSteps): less disturbed by a loaded machine than the wall time.
double g_cpu_secs = 0;

double TimeSteps(int steps, const std::function<void()>& step) {
  for (int i = 0; i < std::max(5, steps / 10); ++i) step();
  auto start = Clock::now();
  std::clock_t cpu_start = std::clock();
  g_min_step = 1e30;
  for (int i = 0; i < steps; ++i) {
    auto t0 = Clock::now();
    step();
    g_min_step = std::min(g_min_step, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  g_cpu_secs = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "bf16_info") {
    std::printf("%s\n", loom::DescribeBf16Support().c_str());
    return 0;
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL THREADS [STEPS] [FLAGS] (MODEL: see the source's head)\n",
                 argv[0]);
    return 2;
  }
  std::string model = argv[1];
  loom::Precision precision = loom::Precision::kFloat32;
  if (const size_t colon = model.find(':'); colon != std::string::npos) {
    precision = loom::ParsePrecision(model.substr(colon + 1), "MODEL's precision");
    model.resize(colon);
  }
  const int threads = std::atoi(argv[2]);
  const int steps = argc > 3 ? std::atoi(argv[3]) : 200;
  auto has_flag = [&](const char* flag) {
    for (int i = 4; i < argc; ++i) {
      if (std::string(argv[i]) == flag) return true;
    }
    return false;
  };
  // "baseline": the kernels' auto-vectorized loops run their baseline x86-64 copies even
  // where the CPU has AVX2 (loom/ops/vector_isa.h), to measure what the AVX2 copies gain.
  std::optional<loom::internal::ScopedBaselineVectorIsa> baseline;
  if (has_flag("baseline")) baseline.emplace();
  std::optional<loom::nn_internal::ScopedConvAlgorithm> direct_conv;
  if (has_flag("direct_conv")) direct_conv.emplace(loom::nn_internal::ConvAlgorithm::kDirect);

  if (model == "mlp_gemm") {
    loom::SetBlasThreads(threads);
    const int64_t b = 256;
    loom::Tensor x = RandomTensor({b, 784}, 1), w1 = RandomTensor({784, 512}, 2),
                 w2 = RandomTensor({512, 512}, 3), w3 = RandomTensor({512, 10}, 4);
    loom::Tensor h1(loom::kFloat32, {b, 512}), h2(loom::kFloat32, {b, 512}),
        o(loom::kFloat32, {b, 10}), g1(loom::kFloat32, {784, 512}), g2(loom::kFloat32, {512, 512}),
        g3(loom::kFloat32, {512, 10}), d2(loom::kFloat32, {b, 512}), d1(loom::kFloat32, {b, 512});
    auto f = [](loom::Tensor& t) { return t.data<float>(); };
    double secs = TimeSteps(steps, [&] {
      // forward
      loom::Gemm(false, false, b, 512, 784, 1.f, f(x), 784, f(w1), 512, 0.f, f(h1), 512);
      loom::Gemm(false, false, b, 512, 512, 1.f, f(h1), 512, f(w2), 512, 0.f, f(h2), 512);
      loom::Gemm(false, false, b, 10, 512, 1.f, f(h2), 512, f(w3), 10, 0.f, f(o), 10);
      // backward: dW3 = h2^T do, dh2 = do W3^T, dW2 = h1^T dh2, dh1 = dh2 W2^T, dW1 = x^T dh1
      loom::Gemm(true, false, 512, 10, b, 1.f, f(h2), 512, f(o), 10, 0.f, f(g3), 10);
      loom::Gemm(false, true, b, 512, 10, 1.f, f(o), 10, f(w3), 10, 0.f, f(d2), 512);
      loom::Gemm(true, false, 512, 512, b, 1.f, f(h1), 512, f(d2), 512, 0.f, f(g2), 512);
      loom::Gemm(false, true, b, 512, 512, 1.f, f(d2), 512, f(w2), 512, 0.f, f(d1), 512);
      loom::Gemm(true, false, 784, 512, b, 1.f, f(x), 784, f(d1), 512, 0.f, f(g1), 512);
    });
    std::printf(
        "{\"peer\": \"loom\", \"model\": \"%s\", \"threads\": %d, \"steps_per_sec\": %.3f, "
        "\"ms_per_step\": %.4f, \"min_ms_per_step\": %.4f}\n",
        argv[1], threads, steps / secs, 1000 * secs / steps, 1000 * g_min_step);
    return 0;
  }

  if (model == "convnet_gemm" || model == "convnet_kernels") {
    loom::SetBlasThreads(threads);
    const int64_t b = 64;
    // Buffers big enough for any operand; values do not matter to the timing.
    loom::Tensor big_a = RandomTensor({b * 196 * 800}, 1), big_b = RandomTensor({b * 196 * 800}, 2);
    loom::Tensor big_c(loom::kFloat32, {b * 196 * 800});
    float *pa = big_a.data<float>(), *pb = big_b.data<float>(), *pc = big_c.data<float>();
    // One (transpose_a, transpose_b, m, n, k) per product. Conv1's input gradient is not
    // part of the step (its input is the data).
    struct Product {
      bool ta, tb;
      int64_t m, n, k;
    };
    std::vector<Product> products = {
        {false, false, b, 1024, 3136}, {false, true, b, 3136, 1024},  // dense 1024: fwd, dx
        {true, false, 3136, 1024, b},                                 // dw
        {false, false, b, 10, 1024},   {false, true, b, 1024, 10},    // dense 10: fwd, dx
        {true, false, 1024, 10, b},                                   // dw
    };
    if (model == "convnet_gemm") {
      products.insert(products.end(), {
                                          {false, false, b * 784, 32, 25},   // conv1 fwd
                                          {true, false, 25, 32, b * 784},    // conv1 dw
                                          {false, false, b * 196, 64, 800},  // conv2 fwd
                                          {false, true, b * 196, 800, 64},   // conv2 dx (col)
                                          {true, false, 800, 64, b * 196},   // conv2 dw
                                      });
    }
    auto geometry = [&](int64_t size, int64_t channels) {
      return loom::nn_internal::Geometry{.batch = b,
                                         .in_h = size,
                                         .in_w = size,
                                         .channels = channels,
                                         .k_h = 5,
                                         .k_w = 5,
                                         .stride_h = 1,
                                         .stride_w = 1,
                                         .out_h = size,
                                         .out_w = size,
                                         .pad_top = 2,
                                         .pad_left = 2};
    };
    const auto g1 = geometry(28, 1), g2 = geometry(14, 32);
    loom::ThreadPool pool(threads);
    double secs = TimeSteps(steps, [&] {
      for (const Product& p : products) {
        loom::Gemm(p.ta, p.tb, p.m, p.n, p.k, 1.f, pa, p.ta ? p.m : p.k, pb, p.tb ? p.k : p.n, 0.f,
                   pc, p.n);
      }
      if (model == "convnet_kernels") {
        using namespace loom::nn_internal;  // NOLINT
        OnednnConv2D(g1, 32, pa, pb, pc, threads);
        // conv1's filter gradient (on oneDNN: OnednnFilterGradPays holds for C = 1 on NHWC)
        OnednnConv2DBackpropFilter(g1, 32, pa, pb, pc, threads);
        // conv2 on Winograd where the op takes it (UseWinograd; the values are finite)
        if (UseWinograd(g2, 64, ConvPassKind::kForward)) {
          WinogradConv2D(g2, 64, pa, pb, pc, pool);
        } else {
          OnednnConv2D(g2, 64, pa, pb, pc, threads);
        }
        if (UseWinograd(g2, 64, ConvPassKind::kInputGrad)) {
          WinogradConv2DBackpropInput(g2, 64, pa, pb, pc, pool);
        } else {
          OnednnConv2DBackpropInput(g2, 64, pa, pb, pc, threads);
        }
        if (UseWinograd(g2, 64, ConvPassKind::kFilterGrad)) {
          WinogradConv2DBackpropFilter(g2, 64, pa, pb, pc, pool);
        } else {
          OnednnConv2DBackpropFilter(g2, 64, pa, pb, pc, threads);
        }
      }
    });
    std::printf(
        "{\"peer\": \"loom\", \"model\": \"%s\", \"threads\": %d, \"steps_per_sec\": %.3f, "
        "\"ms_per_step\": %.4f, \"min_ms_per_step\": %.4f}\n",
        argv[1], threads, steps / secs, 1000 * secs / steps, 1000 * g_min_step);
    return 0;
  }

  if (model == "softreg_gemm") {
    const std::optional<loom::GemmLibrary> library =
        has_flag("openblas") ? std::optional(loom::GemmLibrary::kOpenBlas)
        : has_flag("onednn") ? std::optional(loom::GemmLibrary::kOnednn)
                             : std::nullopt;
    loom::SetBlasThreads(threads);
    loom::Tensor x = RandomTensor({32, 784}, 1), w = RandomTensor({784, 10}, 2),
                 dy = RandomTensor({32, 10}, 3);
    loom::Tensor y(loom::kFloat32, {32, 10}), dw(loom::kFloat32, {784, 10});
    auto f = [](loom::Tensor& t) { return t.data<float>(); };
    auto gemm = [&](bool ta, int64_t m, int64_t k, float* a, int64_t lda, float* b, float* c) {
      if (library) {
        loom::GemmWithLibrary(*library, ta, false, m, 10, k, 1.f, a, lda, b, 10, 0.f, c, 10);
      } else {
        loom::Gemm(ta, false, m, 10, k, 1.f, a, lda, b, 10, 0.f, c, 10);
      }
    };
    double secs = TimeSteps(steps, [&] {
      gemm(false, 32, 784, f(x), 784, f(w), f(y));   // logits = X W
      gemm(true, 784, 32, f(x), 784, f(dy), f(dw));  // dW = X^T dY
    });
    std::printf(
        "{\"peer\": \"loom\", \"model\": \"%s\", \"gemm\": \"%s\", \"threads\": %d, "
        "\"us_per_step\": %.3f, \"min_us_per_step\": %.3f, \"cpu_us_per_step\": %.3f}\n",
        argv[1], library ? loom::GemmLibraryName(*library) : "loom::Gemm", threads,
        1e6 * secs / steps, 1e6 * g_min_step, 1e6 * g_cpu_secs / steps);
    return 0;
  }

  if (model == "overhead") {
    constexpr int kNodes = 16;
    loom::Graph graph;
    loom::Scope s(graph);
    loom::Variable v(s.WithOpName("v"), loom::Tensor::Zeros(loom::kFloat32, {}));
    loom::Output y = v;
    for (int i = 0; i < kNodes; ++i) y = loom::Add(s, y, v);
    auto init = loom::GlobalVariablesInitializer(s);
    graph.Finalize();
    loom::Session session(graph, {.intra_op_threads = threads});
    session.RunTarget(init);
    double secs = TimeSteps(steps, [&] { session.Run({}, {y}); });
    std::printf(
        "{\"peer\": \"loom\", \"model\": \"%s\", \"threads\": %d, \"us_per_run\": %.3f, "
        "\"min_us_per_run\": %.3f, \"us_per_node\": %.3f}\n",
        argv[1], threads, 1e6 * secs / steps, 1e6 * g_min_step, 1e6 * g_min_step / kNodes);
    return 0;
  }

  g_precision = precision;
  loom::Graph graph({.seed = 1});
  loom::Scope s(graph);
  int64_t batch = 0;
  loom::Output x, logits;
  if (model == "mlp") {
    batch = 256;
    x = loom::Placeholder(s.WithOpName("x"), loom::kFloat32, {-1, 784});
    logits = Dense(s, Dense(s, Dense(s, x, 512, true), 512, true), 10, false);
  } else if (model == "softreg") {
    batch = 32;
    x = loom::Placeholder(s.WithOpName("x"), loom::kFloat32, {-1, 784});
    logits = Dense(s, x, 10, false);
  } else if (model == "predict_dnn") {
    batch = 1024;
    x = loom::Placeholder(s.WithOpName("x"), loom::kFloat32, {-1, 784});
    logits = Dense(s, Dense(s, Dense(s, x, 256, true), 128, true), 10, false);
  } else if (model == "convnet" || model == "predict_convnet") {
    batch = model == "convnet" ? 64 : 256;
    x = loom::Placeholder(s.WithOpName("x"), loom::kFloat32, {-1, 28, 28, 1});
    auto pool1 = loom::MaxPool(s, Conv(s, x, 32), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
    auto pool2 = loom::MaxPool(s, Conv(s, pool1, 64), {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID");
    auto dense = Dense(s, loom::Reshape(s, pool2, {-1, 7 * 7 * 64}), 1024, true);
    logits = Dense(s, model == "convnet" ? loom::Dropout(s, dense, 0.4, 3) : dense, 10, false);
  } else {
    std::fprintf(stderr, "unknown model %s\n", model.c_str());
    return 2;
  }
  const bool predict = model.rfind("predict_", 0) == 0;
  if (predict) {
    auto probabilities = loom::Softmax(s, logits);
    auto init = loom::GlobalVariablesInitializer(s);
    graph.Finalize();
    loom::Session session(graph, {.intra_op_threads = threads});
    session.RunTarget(init);
    loom::Shape x_shape =
        model == "predict_convnet" ? loom::Shape{batch, 28, 28, 1} : loom::Shape{batch, 784};
    loom::FeedList feeds = {{x, RandomTensor(x_shape, 5)}};
    double secs = TimeSteps(steps, [&] { session.Run(feeds, {probabilities}); });
    std::printf(
        "{\"peer\": \"loom\", \"model\": \"%s\", \"threads\": %d, \"steps_per_sec\": %.3f, "
        "\"ms_per_step\": %.4f, \"rows_per_sec\": %.1f, \"min_ms_per_step\": %.4f}\n",
        argv[1], threads, steps / secs, 1000 * secs / steps, batch * steps / secs,
        1000 * g_min_step);
    return 0;
  }
  auto labels = loom::Placeholder(s.WithOpName("labels"), loom::kInt64, {-1});
  auto loss = loom::Mean(s, loom::SparseSoftmaxCrossEntropyWithLogits(s, labels, logits));
  loom::Operation train_op =
      model == "softreg" ? loom::train::GradientDescent({.learning_rate = 0.1}).Minimize(s, loss)
                         : loom::train::Adam({.learning_rate = 1e-3}).Minimize(s, loss);
  auto init = loom::GlobalVariablesInitializer(s);
  graph.Finalize();

  loom::Session session(graph, {.intra_op_threads = threads});
  session.RunTarget(init);
  loom::Shape x_shape =
      model == "convnet" ? loom::Shape{batch, 28, 28, 1} : loom::Shape{batch, 784};
  loom::FeedList feeds = {{x, RandomTensor(x_shape, 5)}, {labels, RandomLabels(batch, 6)}};
  if (has_flag("trace")) {
    // Per-op time: the fastest of STEPS traced steps for each node (the minimum is what
    // other processes on a shared machine disturb least), slowest first, and their sum.
    loom::RunOptions options{.trace = true};
    for (int i = 0; i < 5; ++i) session.Run(feeds, {}, {train_op});  // buffers warm
    std::map<std::string, std::pair<int64_t, std::string>> best;     // node -> (us, op)
    // Per traced step: the span from the first node's start to the last one's end, and the
    // nodes' own time in it; the difference is the executor's time between kernels.
    std::vector<int64_t> spans, busy;
    for (int i = 0; i < steps; ++i) {
      loom::RunMetadata metadata;
      session.Run(feeds, {}, {train_op}, &options, &metadata);
      int64_t first = INT64_MAX, last = 0, own = 0;
      for (const auto& st : metadata.step_stats) {
        const int64_t us = st.end_micros - st.start_micros;
        auto [it, fresh] = best.try_emplace(st.node_name, us, st.op);
        if (!fresh) it->second.first = std::min(it->second.first, us);
        first = std::min(first, st.start_micros);
        last = std::max(last, st.end_micros);
        own += us;
      }
      spans.push_back(last - first);
      busy.push_back(own);
    }
    std::vector<std::pair<int64_t, std::string>> rows;
    int64_t total = 0;
    for (const auto& [node, v] : best) {
      rows.emplace_back(v.first, v.second + " " + node);
      total += v.first;
    }
    std::sort(rows.rbegin(), rows.rend());
    for (const auto& [us, what] : rows) std::printf("%8lld us  %s\n", (long long)us, what.c_str());
    std::printf("%8lld us  sum of the per-node minima\n", (long long)total);
    std::sort(spans.begin(), spans.end());
    std::sort(busy.begin(), busy.end());
    std::printf("%8lld us  median traced step, first node's start to last node's end\n",
                (long long)spans[spans.size() / 2]);
    std::printf("%8lld us  median of the nodes' own time per traced step\n",
                (long long)busy[busy.size() / 2]);
    return 0;
  }
  double secs = TimeSteps(steps, [&] { session.Run(feeds, {}, {train_op}); });
  std::printf(
      "{\"peer\": \"loom\", \"model\": \"%s\", \"threads\": %d, \"steps_per_sec\": %.3f, "
      "\"ms_per_step\": %.4f, \"min_ms_per_step\": %.4f, \"cpu_ms_per_step\": %.4f}\n",
      argv[1], threads, steps / secs, 1000 * secs / steps, 1000 * g_min_step,
      1000 * g_cpu_secs / steps);
  return 0;
}
