#ifndef LOOM_OPS_REDUCE_MINMAX_H_
#define LOOM_OPS_REDUCE_MINMAX_H_

// The float32 / float64 kernels of Max and Min (reduce.cc) and of ArgMax / ArgMin
// (reduce_arg.cc), hand-vectorized for AVX-512F and AVX2 and chosen at run time. Internal to
// the reduction family; not part of the public API.
//
// numpy's rules: a NaN anywhere makes the result that NaN (the first in memory order, its
// bits as they are), Inf compares as usual, an empty reduction gives -Inf (max) / +Inf (min).
// The vector loops keep the extreme with vmaxps / vminps (`a > b ? a : b`, which loses a
// NaN) beside a NaN flag (an unordered compare OR-ed per block), and look for the first NaN
// only when the flag is set: about the old NaN-losing loop's cost instead of twice it.
//
// Every isa gives the same bits, -0 / +0 included: a contiguous run is reduced in
// L = 256 / sizeof(T) logical lanes (lane l takes the elements i with i % L == l, each
// folded as lane = lane > x ? lane : x in order), the lanes folded as a tree (lane i with
// lane i + w for w = L/2, ..., 1), then the n % L tail in order; a column is folded in
// order. The scalar copy runs the same steps one lane at a time.
// Thread-safety: pure functions.
#include <cstdint>
#include <vector>

namespace loom::reduce_internal {

enum class MinMaxIsa { kScalar, kAvx2, kAvx512 };

// "scalar", "avx2" or "avx512".
const char* MinMaxIsaName(MinMaxIsa isa);

// The isas this CPU runs (kScalar always), for tests that compare them.
std::vector<MinMaxIsa> AvailableMinMaxIsas();

// The one the kernels use: kScalar while a ScopedBaselineVectorIsa (vector_isa.h) is alive
// or without AVX2, else kAvx512 on a CPU with AVX-512F, else kAvx2.
MinMaxIsa ActiveMinMaxIsa();

// The max (kMax) or min of p[0, n). T is float or double. REQUIRES: isa is available.
template <bool kMax, typename T>
T MinMaxOf(MinMaxIsa isa, const T* p, int64_t n);

// out[c] = the max / min of column c of the [n, inner] row-major block `in`, for c in
// [c0, c1). REQUIRES: n >= 1, 0 <= c0 <= c1 <= inner.
template <bool kMax, typename T>
void MinMaxColumns(MinMaxIsa isa, const T* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                   T* out);

// The index of the first NaN of p[0, n), else of the first element equal to the max / min
// (ArgMax / ArgMin over a contiguous row). REQUIRES: n >= 1.
template <bool kMax, typename T>
int64_t ArgMinMaxOf(MinMaxIsa isa, const T* p, int64_t n);

}  // namespace loom::reduce_internal

#endif  // LOOM_OPS_REDUCE_MINMAX_H_
