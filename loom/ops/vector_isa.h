#ifndef LOOM_OPS_VECTOR_ISA_H_
#define LOOM_OPS_VECTOR_ISA_H_

// Run-time choice of the instruction set for the kernels' auto-vectorized loops. Internal
// to the ops (and the layers below that write kernels); not a public API.
//
// The build targets baseline x86-64 (CMakeLists.txt has no -march, so an installed library
// runs on any x86-64 CPU), where a loop the compiler vectorizes handles 4 floats per SSE2
// instruction. Vectorized(body) compiles `body` twice, for baseline x86-64 and for AVX2,
// and runs the AVX2 copy when the CPU has AVX2 (8 floats per instruction, checked once).
//
// AVX2 only, without FMA: both copies execute the same IEEE operations in the same order
// (no a * b + c contracted into one rounding, no reassociation), so they give bitwise equal
// results, and a model's outputs do not depend on which copy ran or on which x86-64 CPU.
//
// Usage, inside a thread-pool chunk (a loop behind a std::function is out of reach):
//   pool.ParallelFor(n, chunk, [&](int64_t b, int64_t e) {
//     Vectorized([&] { for (int64_t i = b; i < e; ++i) out[i] = in[i] > 0 ? in[i] : 0; });
//   });
// The copies are `flatten`ed: the body and everything it calls that the compiler can see
// are inlined into each, so the loop is compiled for that copy's instruction set. A call to
// a function defined in another file (libm's exp, a BLAS) runs the same code in both.
// Thread-safety: all of it may be called from any thread.
#include <atomic>

namespace loom::internal {

enum class VectorIsa { kBaseline, kAvx2 };

// "baseline" or "avx2".
const char* VectorIsaName(VectorIsa isa);

// True when this CPU can run the AVX2 copies (cpuid, checked once per process).
bool CpuHasAvx2();
// True when this CPU has AVX-512F (the hand-written AVX-512 kernels: reduce_minmax,
// winograd; cpuid, checked once per process).
bool CpuHasAvx512F();
// True on an AMD CPU: where the per-vendor rules were measured (blas.h's
// ChooseTransposedProduct, winograd_conv.cc's UseWinograd).
bool CpuIsAmd();

// The copy Vectorized runs: kAvx2 when CpuHasAvx2() and no ScopedBaselineVectorIsa is
// alive, else kBaseline.
VectorIsa ActiveVectorIsa();

// While one is alive, Vectorized runs the baseline copies in every thread: for tests that
// compare a kernel's two copies through a Session, and for benchmarks that measure what the
// AVX2 copies gain. Process-wide; nest or overlap them freely (a count).
class ScopedBaselineVectorIsa {
 public:
  ScopedBaselineVectorIsa();
  ~ScopedBaselineVectorIsa();
  ScopedBaselineVectorIsa(const ScopedBaselineVectorIsa&) = delete;
  ScopedBaselineVectorIsa& operator=(const ScopedBaselineVectorIsa&) = delete;
};

template <typename Body>
__attribute__((flatten)) void RunBaselineCopy(const Body& body) {
  body();
}

#if defined(__x86_64__)
template <typename Body>
__attribute__((target("avx2"), flatten)) void RunAvx2Copy(const Body& body) {
  body();
}
#endif

// Runs body() as compiled for `isa`. REQUIRES: isa is kBaseline or CpuHasAvx2().
template <typename Body>
void RunOn(VectorIsa isa, const Body& body) {
#if defined(__x86_64__)
  if (isa == VectorIsa::kAvx2) return RunAvx2Copy(body);
#endif
  RunBaselineCopy(body);
}

// Runs body() as compiled for ActiveVectorIsa().
template <typename Body>
void Vectorized(const Body& body) {
  RunOn(ActiveVectorIsa(), body);
}

}  // namespace loom::internal

#endif  // LOOM_OPS_VECTOR_ISA_H_
