// bf16 against float32, kernel by kernel, on the products and convolutions of the core
// benchmarks (bench/core_bench.cc): the MLP 784-512-512-10 at batch 256, the demo's DNN
// 784-256-128-10 at batch 1024 (forward only), and the Fashion-MNIST convnet at batch 64
// (its dense layers' three products and both convolutions' three passes). The data behind
// the per-ISA choices of the bf16 policy (loom/ops/bf16.h): which path is faster at each
// shape on this CPU.
//
// One line per kernel and thread count: float32 (loom::Gemm, or oneDNN's float32
// convolution as Loom runs it), bf16 with both operands converted per call (what a product
// of two activations pays), bf16 with the weight's bits converted once (a variable's
// cached copy, bf16_weights.h), each the median and the minimum of REPS calls in ms, then
// the bf16 / float32 speed ratio and oneDNN's implementation names. Prints the CPU, what
// "bf16" runs on it and the load average first: the machine may be shared.
//
// Usage: bf16_kernels_bench [shallow] [REPS] [THREADS...]   (defaults: 15, threads 1 and 2)
//   shallow: only the sweep behind the shallow-convolution rule (bf16_conv.h): 3x3 and
//   5x5 windows over 1-8 input channels, batch 64 and 256, 28x28, 32 output channels.
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
#include "loom/ops/bf16.h"
#include "loom/ops/bf16_conv.h"
#include "loom/ops/bf16_support.h"
#include "loom/ops/blas.h"
#include "loom/ops/onednn_internal.h"
#include "loom/ops/onednn_matmul.h"

namespace {

struct Timing {
  double median_ms, min_ms;
};

Timing Time(int reps, const std::function<void()>& fn) {
  fn();  // warm: primitive creation, first-touch of buffers
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

struct Product {
  std::string name;
  bool ta, tb;
  int64_t m, n, k;
  bool b_is_weight;  // b is a variable's value (its bits cached); else both convert
  bool in_step;      // computed by the model's step (a first layer's dx is not)
};

// The three products of a layer Y[m, n] = X[m, k] W[k, n]: forward X W, input gradient
// dY W^T (both read the weight), filter gradient X^T dY (two activations).
// `first`: the model's first layer, whose dx the step does not compute.
void AddLayer(std::vector<Product>& out, const std::string& layer, int64_t m, int64_t k, int64_t n,
              bool backward = true, bool first = false) {
  out.push_back({layer + " fwd", false, false, m, n, k, true, true});
  if (!backward) return;
  out.push_back({layer + " dx", false, true, m, k, n, true, !first});
  out.push_back({layer + " dw", true, false, k, n, m, false, true});
}

// The minima of one product (ms): float32, bf16 as the step runs it (the weight's bits
// cached when b is a weight).
struct ProductMinima {
  double f32, bf16;
};

ProductMinima RunProduct(const Product& p, int threads, int reps) {
  loom::ThreadPool pool(threads);
  loom::SetBlasThreads(threads);
  const int64_t lda = p.ta ? p.m : p.k, ldb = p.tb ? p.k : p.n;
  const std::vector<float> a = loom::bench::RandomFloats(p.m * p.k, 1),
                           b = loom::bench::RandomFloats(p.k * p.n, 2);
  std::vector<float> c(p.m * p.n);
  std::vector<uint16_t> b_bits(b.size());
  loom::bf16::FloatToBf16(b.data(), b_bits.data(), static_cast<int64_t>(b.size()));
  const Timing f32 = Time(reps, [&] {
    loom::Gemm(p.ta, p.tb, p.m, p.n, p.k, 1.f, a.data(), lda, b.data(), ldb, 0.f, c.data(), p.n);
  });
  auto bf16 = [&](const uint16_t* bits) {
    if (!loom::bf16::OnednnMatMulBf16(p.ta, p.tb, p.m, p.n, p.k, a.data(), lda, b.data(), ldb,
                                      c.data(), pool, nullptr, bits)) {
      std::fprintf(stderr, "oneDNN declined the bf16 product %s\n", p.name.c_str());
      std::exit(1);
    }
  };
  const Timing both = Time(reps, [&] { bf16(nullptr); });
  const Timing cached = p.b_is_weight ? Time(reps, [&] { bf16(b_bits.data()); }) : both;
  const double gflop = 2e-6 * p.m * p.n * p.k;
  std::printf(
      "%-26s t=%d [%5lld x %5lld x %5lld]  f32 %7.3f (%7.3f)  bf16 %7.3f (%7.3f)  bf16 cached-w "
      "%7.3f (%7.3f)  ratio f32/bf16 (min) %5.2f / %5.2f  GFLOP/s f32 %6.1f bf16 %6.1f  %s  "
      "load %s\n",
      p.name.c_str(), threads, static_cast<long long>(p.m), static_cast<long long>(p.n),
      static_cast<long long>(p.k), f32.median_ms, f32.min_ms, both.median_ms, both.min_ms,
      cached.median_ms, cached.min_ms, f32.min_ms / both.min_ms, f32.min_ms / cached.min_ms,
      gflop / f32.min_ms, gflop / cached.min_ms,
      loom::bf16::OnednnMatMulBf16Impl(p.ta, p.tb, p.m, p.n, p.k, lda, ldb, threads).c_str(),
      loom::bench::LoadAverage().c_str());
  return {f32.min_ms, cached.min_ms};
}

struct Conv {
  std::string name;
  loom::nn_internal::Geometry g;
  int64_t out_c;
};

// A SAME convolution with a stride of 1.
Conv SameConv(const std::string& name, int64_t batch, int64_t hw, int64_t c, int64_t k,
              int64_t out_c) {
  loom::nn_internal::Geometry g{};
  g.batch = batch;
  g.in_h = g.in_w = hw;
  g.channels = c;
  g.k_h = g.k_w = k;
  g.stride_h = g.stride_w = 1;
  g.out_h = g.out_w = hw;
  g.pad_top = g.pad_left = (k - 1) / 2;
  return {name, g, out_c};
}

void RunConv(const Conv& cv, int threads, int reps) {
  using loom::onednn_internal::ConvOperands;
  using loom::onednn_internal::ConvPass;
  const auto& g = cv.g;
  const std::vector<float> x = loom::bench::RandomFloats(g.batch * g.in_h * g.in_w * g.channels, 3);
  const std::vector<float> w = loom::bench::RandomFloats(g.k_h * g.k_w * g.channels * cv.out_c, 4);
  const std::vector<float> dy =
      loom::bench::RandomFloats(g.batch * g.out_h * g.out_w * cv.out_c, 5);
  std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
  const char* names[] = {"fwd", "dx", "dw"};
  for (ConvPass pass : {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
    Timing t[3];
    for (ConvOperands ops :
         {ConvOperands::kFloat32, ConvOperands::kBf16, ConvOperands::kBf16Nhwc}) {
      t[static_cast<int>(ops)] = Time(reps, [&] {
        bool ok = false;
        switch (pass) {
          case ConvPass::kForward:
            ok = loom::onednn_internal::Conv2D(ops, g, cv.out_c, x.data(), w.data(), y.data(),
                                               threads);
            break;
          case ConvPass::kBackwardData:
            ok = loom::onednn_internal::Conv2DBackpropInput(ops, g, cv.out_c, w.data(), dy.data(),
                                                            dx.data(), threads);
            break;
          case ConvPass::kBackwardWeights:
            ok = loom::onednn_internal::Conv2DBackpropFilter(ops, g, cv.out_c, x.data(), dy.data(),
                                                             dw.data(), threads);
            break;
        }
        if (!ok) {
          std::fprintf(stderr, "oneDNN declined %s\n", cv.name.c_str());
          std::exit(1);
        }
      });
    }
    const int p = static_cast<int>(pass);
    std::printf(
        "%-26s t=%d [C=%lld %lldx%lld -> %lld]  f32 %7.3f (%7.3f)  bf16 %7.3f (%7.3f)  bf16 "
        "nhwc %7.3f (%7.3f)  ratio f32/bf16 (min) %5.2f nhwc %5.2f  %s | %s | %s  load %s\n",
        (cv.name + " " + names[p]).c_str(), threads, static_cast<long long>(g.channels),
        static_cast<long long>(g.k_h), static_cast<long long>(g.k_w),
        static_cast<long long>(cv.out_c), t[0].median_ms, t[0].min_ms, t[1].median_ms, t[1].min_ms,
        t[2].median_ms, t[2].min_ms, t[0].min_ms / t[1].min_ms, t[0].min_ms / t[2].min_ms,
        loom::onednn_internal::ConvImpl(ConvOperands::kFloat32, pass, g, cv.out_c, threads).c_str(),
        loom::onednn_internal::ConvImpl(ConvOperands::kBf16, pass, g, cv.out_c, threads).c_str(),
        loom::onednn_internal::ConvImpl(ConvOperands::kBf16Nhwc, pass, g, cv.out_c, threads)
            .c_str(),
        loom::bench::LoadAverage().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool shallow = argc > 1 && std::string(argv[1]) == "shallow";
  const int first = shallow ? 2 : 1;
  const int reps = argc > first ? std::max(1, std::atoi(argv[first])) : 15;
  std::vector<int> thread_counts;
  for (int i = first + 1; i < argc; ++i) thread_counts.push_back(std::max(1, std::atoi(argv[i])));
  if (thread_counts.empty()) thread_counts = {1, 2};
  std::printf("CPU: %s\nbf16: %s\nload at start: %s\n", loom::bf16::CpuModelName().c_str(),
              loom::DescribeBf16Support().c_str(), loom::bench::LoadAverage().c_str());
  if (!loom::HasBf16Hardware()) {
    std::printf("no bf16 hardware: nothing to compare\n");
    return 0;
  }
  std::vector<Product> products;
  AddLayer(products, "mlp dense1", 256, 784, 512, true, true);
  AddLayer(products, "mlp dense2", 256, 512, 512);
  AddLayer(products, "mlp logits", 256, 512, 10);
  AddLayer(products, "predict-dnn dense1", 1024, 784, 256, false);
  AddLayer(products, "predict-dnn dense2", 1024, 256, 128, false);
  AddLayer(products, "predict-dnn logits", 1024, 128, 10, false);
  AddLayer(products, "convnet dense", 64, 3136, 1024, true, true);
  AddLayer(products, "convnet logits", 64, 1024, 10);
  AddLayer(products, "predict-conv dense", 256, 3136, 1024, false);
  const std::vector<Conv> convs = {SameConv("convnet conv1", 64, 28, 1, 5, 32),
                                   SameConv("convnet conv2", 64, 14, 32, 5, 64),
                                   SameConv("predict-conv conv1", 256, 28, 1, 5, 32),
                                   SameConv("predict-conv conv2", 256, 14, 32, 5, 64),
                                   SameConv("3x3 C=1", 64, 28, 1, 3, 32),
                                   SameConv("3x3 C=4", 64, 28, 4, 3, 32),
                                   SameConv("5x5 C=4", 64, 28, 4, 5, 32),
                                   SameConv("5x5 C=8", 64, 28, 8, 5, 32),
                                   SameConv("5x5 C=16", 64, 28, 16, 5, 32)};
  if (shallow) {
    for (int threads : thread_counts) {
      for (int64_t batch : {64, 256}) {
        for (int64_t k : {3, 5}) {
          for (int64_t c : {1, 2, 3, 4, 8}) {
            RunConv(SameConv("b" + std::to_string(batch) + " " + std::to_string(k) + "x" +
                                 std::to_string(k) + " C=" + std::to_string(c),
                             batch, 28, c, k, 32),
                    threads, reps);
          }
        }
      }
    }
    return 0;
  }
  for (int threads : thread_counts) {
    // Per model (the name's first word): the step's products summed, float32 against bf16,
    // and against the faster of the two per product (what a per-shape rule could reach).
    std::vector<std::pair<std::string, ProductMinima>> sums;
    std::vector<double> best_sums;
    for (const Product& p : products) {
      const ProductMinima t = RunProduct(p, threads, reps);
      if (!p.in_step) continue;
      const std::string model = p.name.substr(0, p.name.find(' '));
      if (sums.empty() || sums.back().first != model) {
        sums.push_back({model, {0, 0}});
        best_sums.push_back(0);
      }
      sums.back().second.f32 += t.f32;
      sums.back().second.bf16 += t.bf16;
      best_sums.back() += std::min(t.f32, t.bf16);
    }
    for (size_t i = 0; i < sums.size(); ++i) {
      std::printf(
          "products of a %s step, t=%d: f32 %.3f ms, bf16 %.3f ms, faster of each %.3f ms; "
          "f32/bf16 %.2f, f32/faster %.2f  load %s\n",
          sums[i].first.c_str(), threads, sums[i].second.f32, sums[i].second.bf16, best_sums[i],
          sums[i].second.f32 / sums[i].second.bf16, sums[i].second.f32 / best_sums[i],
          loom::bench::LoadAverage().c_str());
    }
    for (const Conv& c : convs) RunConv(c, threads, reps);
  }
  return 0;
}
