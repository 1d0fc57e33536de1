#ifndef LOOM_OPS_REDUCE_MINMAX_X86_H_
#define LOOM_OPS_REDUCE_MINMAX_X86_H_

// Internal to reduce_minmax.cc: the AVX-512F and AVX2 kernels (reduce_minmax_x86.cc) and the
// scalar pieces they share with the scalar copy. The lane layout and fold order are
// reduce_minmax.h's; each kernel runs them exactly, so all copies give the same bits.
#include <cstdint>
#include <limits>

namespace loom::reduce_internal::minmax {

// `a > b ? a : b` (kMax) or `a < b ? a : b`: vmaxps / vminps's rule (b when either is NaN,
// b on ties), the one every copy folds with.
template <bool kMax, typename T>
inline T Pick(T a, T b) {
  return kMax ? (a > b ? a : b) : (a < b ? a : b);
}

// The identity: -Inf for max, +Inf for min.
template <bool kMax, typename T>
inline T Identity() {
  return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
}

// The first NaN of p[0, n) (n if none): a scan run only once a NaN flag is set.
template <typename T>
inline int64_t FirstNaN(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] != p[i]) return i;
  }
  return n;
}

// The first NaN of column c of an [n, inner] block. REQUIRES: the column holds one.
template <typename T>
inline T FirstNaNInColumn(const T* in, int64_t n, int64_t inner, int64_t c) {
  for (int64_t r = 0; r < n; ++r) {
    const T v = in[r * inner + c];
    if (v != v) return v;
  }
  return in[c];
}

// The number of logical lanes of a contiguous reduction: 256 bytes of T.
template <typename T>
inline constexpr int64_t kLanes = 256 / sizeof(T);

#if defined(__x86_64__)
// Max (max) or min of p[0, n): the lanes folded to one value and the n % kLanes tail folded
// in after it; *nan is set when p[0, n) holds a NaN (the value is then meaningless).
float ContiguousAvx512(bool max, const float* p, int64_t n, bool* nan);
double ContiguousAvx512(bool max, const double* p, int64_t n, bool* nan);
float ContiguousAvx2(bool max, const float* p, int64_t n, bool* nan);
double ContiguousAvx2(bool max, const double* p, int64_t n, bool* nan);

// MinMaxColumns (reduce_minmax.h), NaN included.
void ColumnsAvx512(bool max, const float* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                   float* out);
void ColumnsAvx512(bool max, const double* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                   double* out);
void ColumnsAvx2(bool max, const float* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                 float* out);
void ColumnsAvx2(bool max, const double* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                 double* out);

// The first i with p[i] == v, n if none.
int64_t FindAvx512(const float* p, int64_t n, float v);
int64_t FindAvx512(const double* p, int64_t n, double v);
int64_t FindAvx2(const float* p, int64_t n, float v);
int64_t FindAvx2(const double* p, int64_t n, double v);

#endif

}  // namespace loom::reduce_internal::minmax

#endif  // LOOM_OPS_REDUCE_MINMAX_X86_H_
