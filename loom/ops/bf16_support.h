#ifndef LOOM_OPS_BF16_SUPPORT_H_
#define LOOM_OPS_BF16_SUPPORT_H_

// What the bf16 precision policy (loom/graph/precision.h) runs on this CPU, for programs
// that report it (`loom demo`, the benchmarks).
#include <string>

namespace loom {

// True when the CPU has AMX-BF16 or AVX-512 BF16 and oneDNN uses it: "bf16" and
// "bf16-strict" products then run on oneDNN's bf16 kernels.
bool HasBf16Hardware();
// One line: the CPU's model and what "bf16" runs on it, e.g.
//   "AMD EPYC 7B13: no bf16 hardware (\"bf16\" falls back to float32)"
//   "Intel(R) Xeon(R) Platinum 8481C: AMX-BF16 (\"bf16\" runs oneDNN's bf16 kernels)"
std::string DescribeBf16Support();

}  // namespace loom

#endif  // LOOM_OPS_BF16_SUPPORT_H_
