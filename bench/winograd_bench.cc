// Winograd F(2x2, 5x5) (loom/ops/winograd_conv.h) against oneDNN's direct float32
// convolution as Loom runs it (onednn_conv.h), pass by pass: the data behind UseWinograd's
// rule. Shapes: the Fashion-MNIST convnet's two 5x5 layers at batch 64 and a few others.
//
// For each shape, thread count and pass (forward, input gradient, filter gradient), the
// three paths (direct, F(2x2, 5x5), F(4x4, 5x5)) alternate call by call (REPS calls each,
// after a warm call); one line with each path's median and minimum in ms and direct /
// Winograd as speed ratios of the medians.
// Prints the CPU and the load average: the machine may be shared.
//
// Usage: winograd_bench [only=TEXT] [REPS] [THREADS...]   (defaults: 15, threads 1 and 2)
//   only=TEXT: just the shapes whose name contains TEXT (e.g. only=conv2).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "loom/base/thread_pool.h"
#include "loom/ops/nn_window.h"
#include "loom/ops/onednn_conv.h"
#include "loom/ops/winograd_conv.h"

namespace {

using loom::nn_internal::Geometry;

double Ms(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Stats {
  double median, min;
};
Stats Summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

struct Shape {
  const char* name;
  int64_t n, h, w, c, k;
};

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  int arg = 1;
  if (argc > arg && std::string(argv[arg]).rfind("only=", 0) == 0) only = argv[arg++] + 5;
  const int reps = argc > arg ? std::atoi(argv[arg++]) : 15;
  std::vector<int> thread_counts;
  for (; arg < argc; ++arg) thread_counts.push_back(std::atoi(argv[arg]));
  if (thread_counts.empty()) thread_counts = {1, 2};
  std::printf("CPU: %s; load %s; %d calls per path, alternating\n", loom::bench::CpuModel().c_str(),
              loom::bench::LoadAverage().c_str(), reps);
  const std::vector<Shape> shapes = {
      {"convnet conv2 b64 14x14x32->64", 64, 14, 14, 32, 64},
      {"convnet conv1 b64 28x28x1->32", 64, 28, 28, 1, 32},
      {"b64 28x28x16->32", 64, 28, 28, 16, 32},
      {"b64 28x28x32->32", 64, 28, 28, 32, 32},
      {"b64 14x14x64->64", 64, 14, 14, 64, 64},
      {"b64 7x7x64->128", 64, 7, 7, 64, 128},
      {"b256 14x14x32->64", 256, 14, 14, 32, 64},
      {"b16 14x14x8->16", 16, 14, 14, 8, 16},
      {"b4 14x14x32->64", 4, 14, 14, 32, 64},
      {"b1 14x14x32->64", 1, 14, 14, 32, 64},
  };
  std::printf("%-32s %3s %-4s %17s %17s %17s %15s\n", "shape (5x5 SAME)", "thr", "pass",
              "direct med/min ms", "F(2x2) med/min", "F(4x4) med/min", "speedup F2 F4");
  for (const Shape& s : shapes) {
    if (std::string(s.name).find(only) == std::string::npos) continue;
    Geometry g{.batch = s.n,
               .in_h = s.h,
               .in_w = s.w,
               .channels = s.c,
               .k_h = 5,
               .k_w = 5,
               .stride_h = 1,
               .stride_w = 1,
               .out_h = s.h,
               .out_w = s.w,
               .pad_top = 2,
               .pad_left = 2};
    if (!loom::nn_internal::WinogradRuns(g, s.k)) {
      std::printf("%s: the Winograd kernels do not run on this CPU\n", s.name);
      return 0;
    }
    const std::vector<float> x = loom::bench::RandomFloats(s.n * s.h * s.w * s.c, 1),
                             w = loom::bench::RandomFloats(25 * s.c * s.k, 2),
                             dy = loom::bench::RandomFloats(s.n * s.h * s.w * s.k, 3);
    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
    for (int threads : thread_counts) {
      loom::ThreadPool pool(threads);
      using loom::nn_internal::ConvAlgorithm;
      using loom::nn_internal::ScopedConvAlgorithm;
      // pass 0: forward, 1: input gradient, 2: filter gradient; algorithm kDirect runs oneDNN.
      auto run = [&](int pass, ConvAlgorithm algorithm) {
        if (algorithm == ConvAlgorithm::kDirect) {
          if (pass == 0) {
            loom::nn_internal::OnednnConv2D(g, s.k, x.data(), w.data(), y.data(), threads);
          } else if (pass == 1) {
            loom::nn_internal::OnednnConv2DBackpropInput(g, s.k, w.data(), dy.data(), dx.data(),
                                                         threads);
          } else {
            loom::nn_internal::OnednnConv2DBackpropFilter(g, s.k, x.data(), dy.data(), dw.data(),
                                                          threads);
          }
          return;
        }
        ScopedConvAlgorithm force(algorithm);
        if (pass == 0) {
          loom::nn_internal::WinogradConv2D(g, s.k, x.data(), w.data(), y.data(), pool);
        } else if (pass == 1) {
          loom::nn_internal::WinogradConv2DBackpropInput(g, s.k, w.data(), dy.data(), dx.data(),
                                                         pool);
        } else {
          loom::nn_internal::WinogradConv2DBackpropFilter(g, s.k, x.data(), dy.data(), dw.data(),
                                                          pool);
        }
      };
      const ConvAlgorithm algorithms[3] = {ConvAlgorithm::kDirect, ConvAlgorithm::kWinograd2x2,
                                           ConvAlgorithm::kWinograd4x4};
      const char* pass_names[3] = {"fwd", "dx", "dw"};
      for (int pass = 0; pass < 3; ++pass) {
        std::vector<double> ms[3];
        for (const ConvAlgorithm a : algorithms) run(pass, a);  // warm
        for (int r = 0; r < reps; ++r) {
          for (int a = 0; a < 3; ++a) ms[a].push_back(Ms([&] { run(pass, algorithms[a]); }));
        }
        const Stats d = Summarize(ms[0]), f2 = Summarize(ms[1]), f4 = Summarize(ms[2]);
        std::printf("%-32s %3d %-4s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %6.2fx %6.2fx\n", s.name,
                    threads, pass_names[pass], d.median, d.min, f2.median, f2.min, f4.median,
                    f4.min, d.median / f2.median, d.median / f4.median);
        std::fflush(stdout);
      }
    }
  }
  std::printf("load at end %s\n", loom::bench::LoadAverage().c_str());
  return 0;
}
