// Float32 GEMM throughput of OpenBLAS against oneDNN's dnnl_sgemm on the products of the
// core benchmarks' training steps (bench/core_bench.cc): the MLP 784-512-512-10 at batch
// 256 and the Fashion-MNIST convnet at batch 64 (its convolutions as im2col products), each
// layer's forward (X W), input-gradient (dY W^T) and filter-gradient (X^T dY) product.
// The data for ChooseGemmLibrary's rule (loom/ops/blas.h): one line per product and thread
// count with both libraries' GFLOP/s, the library the rule picks and the faster one, then
// one summary line per model and thread count: the step's products summed on each library,
// on the rule's choice and on the faster library per product. A product that Gemm runs as
// its transpose (blas.h: ChooseTransposedProduct) gets a second line with that rate, and
// the rule's sum counts it. Prints the CPU model, one core's float32 FMA peak (the ceiling
// of every rate below) and the load average first: the machine may be shared.
//
// Usage: gemm_bench [REPS [THREADS [SHAPE...]]]
//   REPS: timed repetitions per product, median taken (default 15); THREADS: "1", "2" or
//   "1,2" (default); SHAPE: "m,n,k" with an optional "T." / ".T" / "TT" suffix for the
//   transposes ("64,3136,1024.T"): those products instead of the models' (model "shape").
//   The predict_dnn model (the demo DNN 784-256-128-10 at batch 1024, forward only) is
//   listed with the training models.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "loom/ops/blas.h"

namespace {

using loom::GemmLibrary;

struct Product {
  const char* model;
  const char* layer;
  const char* kind;  // forward, input-grad, filter-grad
  bool ta, tb;
  int64_t m, n, k;
};

// The three products of a layer computing Y[m, n] = X[m, k] W[k, n].
void AddLayer(std::vector<Product>& out, const char* model, const char* layer, int64_t m, int64_t k,
              int64_t n) {
  out.push_back({model, layer, "forward", false, false, m, n, k});
  out.push_back({model, layer, "input-grad", false, true, m, k, n});   // dX = dY W^T
  out.push_back({model, layer, "filter-grad", true, false, k, n, m});  // dW = X^T dY
}

std::string FirstLine(const char* path, const char* prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "?";
}

double MedianSeconds(GemmLibrary library, const Product& p, int reps, const std::vector<float>& a,
                     const std::vector<float>& b, std::vector<float>& c) {
  const int64_t lda = p.ta ? p.m : p.k, ldb = p.tb ? p.k : p.n;
  auto once = [&] {
    loom::GemmWithLibrary(library, p.ta, p.tb, p.m, p.n, p.k, 1.f, a.data(), lda, b.data(), ldb,
                          0.f, c.data(), p.n);
  };
  once();
  once();
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

#if defined(__x86_64__)
// 12 independent chains of FMAs on the widest registers the CPU has: one core's float32
// multiply-add rate, the ceiling of every product (Zen 4 runs a 512-bit FMA as two 256-bit
// halves, so both widths give the same rate there). Returns GFLOP/s.
#define LOOM_FMA_CHAINS(V, SET, FMA, LANES)                                           \
  V acc[12];                                                                          \
  for (int i = 0; i < 12; ++i) acc[i] = SET(1e-3f * static_cast<float>(i));           \
  const V x = SET(0.999f), y = SET(1e-4f);                                            \
  const auto t0 = std::chrono::steady_clock::now();                                   \
  for (long i = 0; i < iters; ++i) {                                                  \
    _Pragma("GCC unroll 12") for (int j = 0; j < 12; ++j) acc[j] = FMA(acc[j], x, y); \
  }                                                                                   \
  const double secs =                                                                 \
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();   \
  float sum = 0;                                                                      \
  for (int i = 0; i < 12; ++i) sum += reinterpret_cast<const float*>(&acc[i])[0];     \
  volatile float sink = sum;                                                          \
  (void)sink;                                                                         \
  return static_cast<double>(iters) * 12 * 2 * (LANES) / secs * 1e-9;
__attribute__((target("avx512f"))) double Fma512Gflops(long iters) {
  LOOM_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
}
__attribute__((target("avx2,fma"))) double Fma256Gflops(long iters) {
  LOOM_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
}
#undef LOOM_FMA_CHAINS
#endif

// The best of 200 short runs (6M FMAs each: a loaded machine's preemptions miss some), or 0
// without AVX2 + FMA.
double FmaPeakGflops() {
  double best = 0;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0;
  for (int r = 0; r < 200; ++r) {
    best = std::max(best, avx512 ? Fma512Gflops(500000) : Fma256Gflops(500000));
  }
#endif
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  std::vector<int> thread_counts = {1, 2};
  if (argc > 2) {
    const std::string t = argv[2];
    if (t == "1" || t == "2") {
      thread_counts = {std::atoi(t.c_str())};
    } else if (t != "1,2") {
      std::fprintf(stderr, "gemm_bench: THREADS must be 1, 2 or 1,2, got '%s'\n", t.c_str());
      return 2;
    }
  }
  std::vector<Product> products;
  for (int i = 3; i < argc; ++i) {
    long m = 0, n = 0, k = 0;
    char trans[3] = {0, 0, 0};
    const int got = std::sscanf(argv[i], "%ld,%ld,%ld%2s", &m, &n, &k, trans);
    const std::string t = trans;
    if (got < 3 || m <= 0 || n <= 0 || k <= 0 ||
        !(t.empty() || t == "T." || t == ".T" || t == "TT")) {
      std::fprintf(stderr, "gemm_bench: SHAPE must be m,n,k[T.|.T|TT] with m, n, k > 0, got '%s'\n",
                   argv[i]);
      return 2;
    }
    products.push_back(
        {"shape", "arg", "product", t[0] == 'T', t.size() == 2 && t[1] == 'T', m, n, k});
  }
  if (products.empty()) {
    AddLayer(products, "mlp_b256", "dense1", 256, 784, 512);
    AddLayer(products, "mlp_b256", "dense2", 256, 512, 512);
    AddLayer(products, "mlp_b256", "logits", 256, 512, 10);
    AddLayer(products, "convnet_b64", "conv1", 64 * 28 * 28, 5 * 5 * 1, 32);  // im2col
    AddLayer(products, "convnet_b64", "conv2", 64 * 14 * 14, 5 * 5 * 32, 64);
    AddLayer(products, "convnet_b64", "dense1", 64, 7 * 7 * 64, 1024);
    AddLayer(products, "convnet_b64", "logits", 64, 1024, 10);
    products.push_back({"predict_dnn", "dense1", "forward", false, false, 1024, 256, 784});
    products.push_back({"predict_dnn", "dense2", "forward", false, false, 1024, 128, 256});
    products.push_back({"predict_dnn", "logits", "forward", false, false, 1024, 10, 128});
  }
  std::printf("# cpu: %s\n", FirstLine("/proc/cpuinfo", "model name").c_str());
  std::printf("# gemm variant: %s\n", loom::GemmVariantName(loom::ActiveGemmVariant()));
  std::printf("# float32 FMA peak, 1 core: %.1f GFLOP/s\n", FmaPeakGflops());
  std::printf("# loadavg before: %s\n", FirstLine("/proc/loadavg", "").c_str());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const int threads : thread_counts) {
    loom::SetBlasThreads(threads);
    struct Sum {
      double openblas = 0, onednn = 0, rule = 0, best = 0, flops = 0;
    };
    std::vector<std::pair<std::string, Sum>> sums;
    for (const Product& p : products) {
      std::vector<float> a(p.m * p.k), b(p.k * p.n), c(p.m * p.n);
      for (float& v : a) v = dist(rng);
      for (float& v : b) v = dist(rng);
      // Alternate the libraries' runs: two medians each, the smaller kept.
      double t_open = 1e30, t_dnnl = 1e30;
      for (int round = 0; round < 2; ++round) {
        t_open = std::min(t_open, MedianSeconds(GemmLibrary::kOpenBlas, p, reps, a, b, c));
        t_dnnl = std::min(t_dnnl, MedianSeconds(GemmLibrary::kOnednn, p, reps, a, b, c));
      }
      // Where Gemm takes the transposed product (blas.h: ChooseTransposedProduct), that too.
      double t_trans = 0;
      if (loom::ChooseTransposedProduct(p.ta, p.tb, p.m, p.n, p.k)) {
        const GemmLibrary nn = loom::ChooseGemmLibrary(false, false, p.n, p.m, p.k);
        std::vector<double> times;
        for (int r = 0; r < 2 * reps + 2; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          loom::GemmByTransposedProduct(nn, p.m, p.n, p.k, 1.f, a.data(), p.k, b.data(), p.k, 0.f,
                                        c.data(), p.n);
          times.push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(times.begin() + 2, times.end());  // the first two warm the buffers
        t_trans = times[2 + (times.size() - 2) / 2];
      }
      const double flops = 2.0 * p.m * p.n * p.k;
      const GemmLibrary rule = loom::ChooseGemmLibrary(p.ta, p.tb, p.m, p.n, p.k);
      const double t_rule = t_trans > 0 ? t_trans : rule == GemmLibrary::kOnednn ? t_dnnl : t_open;
      std::printf(
          "%-12s %-7s %-11s threads %d  m %6ld n %5ld k %5ld%s%s  openblas %7.1f  onednn %7.1f "
          "GFLOP/s  rule %-8s faster %s\n",
          p.model, p.layer, p.kind, threads, static_cast<long>(p.m), static_cast<long>(p.n),
          static_cast<long>(p.k), p.ta ? " T." : "   ", p.tb ? " .T" : "   ", flops / t_open * 1e-9,
          flops / t_dnnl * 1e-9, loom::GemmLibraryName(rule),
          t_open <= t_dnnl ? "openblas" : "onednn");
      if (t_trans > 0) {
        std::printf(
            "%-12s %-7s %-11s threads %d  as C^T = B A^T (the rule's choice): %.1f GFLOP/s\n",
            p.model, p.layer, p.kind, threads, flops / t_trans * 1e-9);
      }
      auto it = std::find_if(sums.begin(), sums.end(), [&](auto& s) { return s.first == p.model; });
      if (it == sums.end()) it = sums.insert(sums.end(), {p.model, Sum{}});
      it->second.openblas += t_open;
      it->second.onednn += t_dnnl;
      it->second.rule += t_rule;
      it->second.best += std::min(t_open, t_dnnl);  // the libraries' direct products
      it->second.flops += flops;
    }
    for (const auto& [model, s] : sums) {
      std::printf(
          "SUMMARY %-12s threads %d  step's products: openblas %.3f ms (%.1f GFLOP/s), onednn "
          "%.3f ms (%.1f), rule %.3f ms (%.1f), best per product %.3f ms (%.1f)\n",
          model.c_str(), threads, s.openblas * 1e3, s.flops / s.openblas * 1e-9, s.onednn * 1e3,
          s.flops / s.onednn * 1e-9, s.rule * 1e3, s.flops / s.rule * 1e-9, s.best * 1e3,
          s.flops / s.best * 1e-9);
    }
  }
  std::printf("# loadavg after: %s\n", FirstLine("/proc/loadavg", "").c_str());
  return 0;
}
