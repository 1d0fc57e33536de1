#include "loom/ops/vector_isa.h"

namespace loom::internal {
namespace {

// The number of ScopedBaselineVectorIsa alive.
std::atomic<int>& BaselineForced() {
  static std::atomic<int> count{0};
  return count;
}

}  // namespace

const char* VectorIsaName(VectorIsa isa) { return isa == VectorIsa::kAvx2 ? "avx2" : "baseline"; }

bool CpuHasAvx2() {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool CpuHasAvx512F() {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool CpuIsAmd() {
#if defined(__x86_64__)
  static const bool amd = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") != 0;
  }();
  return amd;
#else
  return false;
#endif
}

VectorIsa ActiveVectorIsa() {
  if (!CpuHasAvx2() || BaselineForced().load(std::memory_order_relaxed) > 0) {
    return VectorIsa::kBaseline;
  }
  return VectorIsa::kAvx2;
}

ScopedBaselineVectorIsa::ScopedBaselineVectorIsa() { BaselineForced().fetch_add(1); }
ScopedBaselineVectorIsa::~ScopedBaselineVectorIsa() { BaselineForced().fetch_sub(1); }

}  // namespace loom::internal
