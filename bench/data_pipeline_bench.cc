// Input pipeline throughput (issue 3): FromTensorSlices over N x 784 float32 features and
// int64 labels -> Shuffle(100000) -> Repeat -> Batch(256) -> Prefetch(2), in batches/s,
// beside a plain loop that gathers 256 random rows into a batch buffer (the memory-
// bandwidth floor). Prints both and the ratio.
//
//   data_pipeline_bench [rows=1000000] [batches=2000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "loom/data/dataset.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int64_t batches = argc > 2 ? std::atoll(argv[2]) : 2000;
  constexpr int64_t kCols = 784, kBatch = 256;

  loom::Tensor features(loom::kFloat32, {rows, kCols});
  loom::Tensor labels(loom::kInt64, {rows});
  {
    float* f = features.data<float>();
    for (int64_t i = 0; i < rows * kCols; ++i) f[i] = static_cast<float>(i % 251);
    int64_t* l = labels.data<int64_t>();
    for (int64_t i = 0; i < rows; ++i) l[i] = i % 10;
  }

  // Plain loop: 256 random rows gathered into one reused buffer (+ labels).
  double plain_rate;
  {
    std::vector<float> xb(kBatch * kCols);
    std::vector<int64_t> yb(kBatch);
    std::mt19937_64 rng(1);
    const float* f = features.data<float>();
    const int64_t* l = labels.data<int64_t>();
    double sink = 0;
    auto start = Clock::now();
    for (int64_t b = 0; b < batches; ++b) {
      for (int64_t r = 0; r < kBatch; ++r) {
        int64_t i = static_cast<int64_t>(rng() % rows);
        std::memcpy(xb.data() + r * kCols, f + i * kCols, kCols * sizeof(float));
        yb[r] = l[i];
      }
      sink += xb[b % xb.size()] + yb[b % kBatch];
    }
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    plain_rate = batches / s;
    if (sink < 0) std::printf("%f\n", sink);
  }

  double pipeline_rate;
  {
    auto dataset = loom::data::FromTensorSlices({{"x", features}, {"label", labels}})
                       .Shuffle(100000, {.seed = 42})
                       .Repeat()
                       .Batch(256)
                       .Prefetch(2);
    auto it = dataset.MakeIterator();
    for (int i = 0; i < 20; ++i) it->GetNext();  // fills the shuffle buffer, warms up
    double sink = 0;
    auto start = Clock::now();
    for (int64_t b = 0; b < batches; ++b) {
      auto e = it->GetNext();
      sink += e->at("x").data<float>()[b % (kBatch * kCols)] + e->at("label").data<int64_t>()[0];
    }
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    pipeline_rate = batches / s;
    if (sink < 0) std::printf("%f\n", sink);
  }

  std::printf("rows=%lld batch=256 batches=%lld\n", static_cast<long long>(rows),
              static_cast<long long>(batches));
  std::printf("plain gather loop : %10.1f batches/s\n", plain_rate);
  std::printf("loom pipeline     : %10.1f batches/s\n", pipeline_rate);
  std::printf("ratio             : %10.2f (target >= 0.70; PyTorch DataLoader ~1000 batches/s)\n",
              pipeline_rate / plain_rate);
  return 0;
}
