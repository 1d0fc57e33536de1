// Input pipeline memory (issue 3, "Speed and memory"): peak memory while one full epoch of
// Shuffle(100000) -> Batch(256) -> Prefetch(2) runs over N x 784 float32 features + int64
// labels, N chosen so that the features take `gib` GiB. One JSON line per run.
//
//   data_memory_bench memory [gib=4]         FromTensorSlices over arrays in memory.
//       Target: peak RSS (VmHWM) <= 1.05 x data + 100 MiB.
//   data_memory_bench npy [gib=4] [dir=/tmp]  FromNpy over .npy files memory-mapped from dir
//       (written here in 64 MiB pieces, so writing them holds no copy; deleted at the end).
//       Target: anonymous memory (RssAnon: what is not page cache) <= 300 MiB at its peak;
//       the mapped file pages show up as RssFile and belong to the page cache.
//
// Run each mode in its own process: VmHWM is the process's peak since it started.
// RssAnon and RssFile have no kernel-kept peak, so a thread samples /proc/self/status
// every 2 ms and keeps the largest values it saw.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "loom/data/file_sources.h"
#include "loom/io/npy.h"

namespace loom::data {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kCols = 784;
constexpr int64_t kBatch = 256;
constexpr double kMiB = 1024.0 * 1024.0;

// A field of /proc/self/status in bytes ("VmHWM:   123 kB").
int64_t StatusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      return std::atoll(line.c_str() + field.size() + 1) * 1024;
    }
  }
  return -1;
}

// Samples RssAnon / RssFile / VmRSS until destroyed, keeping the peaks.
class RssSampler {
 public:
  RssSampler()
      : thread_([this] {
          while (!stop_.load()) {
            Sample();
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }) {}
  ~RssSampler() { Stop(); }
  void Stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      Sample();
    }
  }
  int64_t peak_anon() const { return anon_; }
  int64_t peak_file() const { return file_; }

 private:
  void Sample() {
    anon_ = std::max(anon_.load(), StatusBytes("RssAnon"));
    file_ = std::max(file_.load(), StatusBytes("RssFile"));
  }
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> anon_{0}, file_{0};
  std::thread thread_;
};

float Pixel(int64_t i) { return static_cast<float>(i % 1000) * 0.001f; }

// One epoch; returns the number of batches. Touches every batch like a training step would.
int64_t RunEpoch(const Dataset& source, double* seconds) {
  auto it = source.Shuffle(100000, {.seed = 1}).Batch(kBatch).Prefetch(2).MakeIterator();
  const auto start = Clock::now();
  int64_t batches = 0;
  double checksum = 0;
  while (auto batch = it->GetNext()) {
    const auto x = batch->at("x").flat<float>();
    checksum += x[0] + x[x.size() - 1];
    ++batches;
  }
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (checksum == -1) std::printf("#");
  return batches;
}

void Report(const char* mode, int64_t rows, int64_t data_bytes, int64_t baseline, int64_t batches,
            double seconds, const RssSampler& sampler) {
  const int64_t hwm = StatusBytes("VmHWM");
  const double limit = std::string(mode) == "memory" ? 1.05 * data_bytes + 100 * kMiB : 300 * kMiB;
  const double measured = std::string(mode) == "memory" ? hwm : sampler.peak_anon();
  std::printf(
      "{\"bench\":\"data_memory\",\"mode\":\"%s\",\"rows\":%lld,\"data_mib\":%.1f,"
      "\"batches\":%lld,\"seconds\":%.2f,\"baseline_rss_mib\":%.1f,"
      "\"peak_rss_mib\":%.1f,\"peak_rss_anon_mib\":%.1f,\"peak_rss_file_mib\":%.1f,"
      "\"peak_over_data\":%.4f,\"limit_mib\":%.1f,\"measured_mib\":%.1f,\"met\":%s}\n",
      mode, static_cast<long long>(rows), data_bytes / kMiB, static_cast<long long>(batches),
      seconds, baseline / kMiB, hwm / kMiB, sampler.peak_anon() / kMiB, sampler.peak_file() / kMiB,
      static_cast<double>(hwm) / data_bytes, limit / kMiB, measured / kMiB,
      measured <= limit ? "true" : "false");
  std::fflush(stdout);
}

void InMemory(int64_t rows) {
  const int64_t baseline = StatusBytes("VmRSS");
  RssSampler sampler;
  Tensor x(kFloat32, Shape{rows, kCols});
  Tensor y(kInt64, Shape{rows});
  float* xs = x.data<float>();
  for (int64_t i = 0; i < rows * kCols; ++i) xs[i] = Pixel(i);
  for (int64_t i = 0; i < rows; ++i) y.data<int64_t>()[i] = i % 10;
  const int64_t data_bytes = x.TotalBytes() + y.TotalBytes();
  double seconds = 0;
  const int64_t batches = RunEpoch(FromTensorSlices({{"x", x}, {"label", y}}), &seconds);
  sampler.Stop();
  Report("memory", rows, data_bytes, baseline, batches, seconds, sampler);
}

// Streams a [rows, cols] array to `path` as .npy, `fill` giving element i, without holding
// it in memory.
template <typename T, typename Fill>
void WriteNpyStreamed(Env* env, const std::string& path, DType dtype, Shape shape, int64_t elements,
                      const Fill& fill) {
  auto file = env->NewWritableFile(path);
  file->Append(EncodeNpyHeader(dtype, shape));
  std::vector<T> chunk((64 << 20) / sizeof(T));
  for (int64_t done = 0; done < elements;) {
    const int64_t n = std::min<int64_t>(chunk.size(), elements - done);
    for (int64_t j = 0; j < n; ++j) chunk[j] = fill(done + j);
    file->Append(std::string_view(reinterpret_cast<const char*>(chunk.data()), n * sizeof(T)));
    done += n;
  }
  file->Close();
}

void Mapped(int64_t rows, const std::string& dir) {
  Env* env = Env::Default();
  const std::string xp = JoinPath(dir, "loom_memory_bench_x.npy");
  const std::string yp = JoinPath(dir, "loom_memory_bench_y.npy");
  struct Cleanup {
    Env* env;
    std::string a, b;
    ~Cleanup() {
      if (env->FileExists(a)) env->DeleteFile(a);
      if (env->FileExists(b)) env->DeleteFile(b);
    }
  } cleanup{env, xp, yp};
  WriteNpyStreamed<float>(env, xp, kFloat32, Shape{rows, kCols}, rows * kCols, Pixel);
  WriteNpyStreamed<int64_t>(env, yp, kInt64, Shape{rows}, rows, [](int64_t i) { return i % 10; });
  const int64_t data_bytes = rows * kCols * 4 + rows * 8;
  const int64_t baseline = StatusBytes("VmRSS");
  RssSampler sampler;
  double seconds = 0;
  const int64_t batches = RunEpoch(FromNpy({{"x", xp}, {"label", yp}}), &seconds);
  sampler.Stop();
  Report("npy", rows, data_bytes, baseline, batches, seconds, sampler);
}

}  // namespace
}  // namespace loom::data

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "memory";
  const double gib = argc > 2 ? std::atof(argv[2]) : 4.0;
  const std::string dir = argc > 3 ? argv[3] : "/tmp";
  const auto rows = static_cast<int64_t>(gib * 1024 * 1024 * 1024 / (784 * 4));
  try {
    if (mode == "memory") {
      loom::data::InMemory(rows);
    } else if (mode == "npy") {
      loom::data::Mapped(rows, dir);
    } else {
      std::fprintf(stderr, "usage: data_memory_bench memory|npy [gib=4] [dir=/tmp]\n");
      return 2;
    }
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
