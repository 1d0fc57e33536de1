#ifndef LOOM_BENCH_BENCH_UTIL_H_
#define LOOM_BENCH_BENCH_UTIL_H_

// What the kernel benchmarks print beside every figure (the CPU and the load, as
// bench/RESULTS.md asks) and their random operands. Header-only, for bench/ only.
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace loom::bench {

// /proc/cpuinfo's first "model name", or "unknown CPU".
inline std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// The 1-minute load average (with the 5-minute one when `with_five`), from /proc/loadavg.
inline std::string LoadAverage(bool with_five = false) {
  std::ifstream in("/proc/loadavg");
  std::string one, five;
  in >> one >> five;
  return with_five ? one + " " + five : one;
}

// n floats uniform in [-1, 1), the same for the same seed.
inline std::vector<float> RandomFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace loom::bench

#endif  // LOOM_BENCH_BENCH_UTIL_H_
