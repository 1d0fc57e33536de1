#ifndef LOOM_TESTING_CPUINFO_H_
#define LOOM_TESTING_CPUINFO_H_

// The CPU's feature flags as the kernel reports them (/proc/cpuinfo): a source independent
// of the compiler's __builtin_cpu_supports / cpuid, which the kernels' run-time dispatch
// asks, so the dispatch tests compare two sources. False where the file or flag is absent.

#include <fstream>
#include <sstream>
#include <string>

namespace loom::testing {

inline bool CpuinfoHasFlag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word) {
      if (word == flag) return true;
    }
    return false;
  }
  return false;
}

}  // namespace loom::testing

#endif  // LOOM_TESTING_CPUINFO_H_
