#ifndef LOOM_OPS_VECTOR_MATH_H_
#define LOOM_OPS_VECTOR_MATH_H_

// exp and log over arrays of floats, vectorized: the loops are compiled for baseline x86-64
// and for AVX2 and chosen at run time (vector_isa.h). Internal to the ops.
//
// Accuracy: within 2 ulp of the exact result for every float input (Cephes's reductions and
// polynomials, evaluated without FMA), with IEEE special values: exp(-inf) = 0, exp(x) = inf
// above ~88.72, subnormal results below ~-87.34 and 0 below ~-103.97; log(0) = -inf,
// log(x < 0) = NaN, log(inf) = inf, subnormal inputs handled; NaN in, NaN out.
// Determinism: every element is a pure function of its input, computed by the same IEEE
// operations in the same order in both copies, so results do not depend on the CPU (among
// x86-64 ones), on the copy that ran, on the array's length or alignment, or on how a kernel
// splits the work between threads.
// Thread-safety: may be called from any thread; `out` may equal `in` (in place).
#include <cstdint>

namespace loom::internal {

// out[i] = exp(in[i]) for i in [0, n).
void ExpFloats(const float* in, float* out, int64_t n);
// out[i] = log(in[i]) for i in [0, n).
void LogFloats(const float* in, float* out, int64_t n);

}  // namespace loom::internal

#endif  // LOOM_OPS_VECTOR_MATH_H_
