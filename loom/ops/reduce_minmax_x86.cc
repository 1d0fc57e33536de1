// The AVX-512F and AVX2 kernels of Max / Min / ArgMax / ArgMin (reduce_minmax.h). One
// template per isa, over float and double through overloaded helpers; the lane layout and
// fold order are reduce_minmax.h's, so each returns the scalar copy's bits.
#include "loom/ops/reduce_minmax_x86.h"

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// g++ 12's AVX-512 intrinsics pass a deliberately undefined vector as the unused merge
// source, which -O3 reports as maybe-uninitialized once inlined (as in blas_narrow.cc).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace loom::reduce_internal::minmax {

#if defined(__x86_64__)
namespace {

#define LOOM_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline
#define LOOM_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

// ---- 128 and 256 bits (AVX2; also what the AVX-512 folds end with).

template <bool kMax>
LOOM_AVX2_INLINE __m128 Pick(__m128 a, __m128 b) {
  return kMax ? _mm_max_ps(a, b) : _mm_min_ps(a, b);
}
template <bool kMax>
LOOM_AVX2_INLINE __m128d Pick(__m128d a, __m128d b) {
  return kMax ? _mm_max_pd(a, b) : _mm_min_pd(a, b);
}
template <bool kMax>
LOOM_AVX2_INLINE __m256 Pick(__m256 a, __m256 b) {
  return kMax ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
}
template <bool kMax>
LOOM_AVX2_INLINE __m256d Pick(__m256d a, __m256d b) {
  return kMax ? _mm256_max_pd(a, b) : _mm256_min_pd(a, b);
}

// The tree fold of a register's lanes: lane j with lane j + w, w = half the lanes, ..., 1.
template <bool kMax>
LOOM_AVX2_INLINE float Fold(__m128 v) {
  v = Pick<kMax>(v, _mm_movehl_ps(v, v));
  v = Pick<kMax>(v, _mm_shuffle_ps(v, v, 1));
  return _mm_cvtss_f32(v);
}
template <bool kMax>
LOOM_AVX2_INLINE double Fold(__m128d v) {
  return _mm_cvtsd_f64(Pick<kMax>(v, _mm_unpackhi_pd(v, v)));
}
template <bool kMax>
LOOM_AVX2_INLINE float Fold(__m256 v) {
  return Fold<kMax>(Pick<kMax>(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}
template <bool kMax>
LOOM_AVX2_INLINE double Fold(__m256d v) {
  return Fold<kMax>(Pick<kMax>(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1)));
}

LOOM_AVX2_INLINE __m256 Load256(const float* p) { return _mm256_loadu_ps(p); }
LOOM_AVX2_INLINE __m256d Load256(const double* p) { return _mm256_loadu_pd(p); }
LOOM_AVX2_INLINE __m256 Set256(float v) { return _mm256_set1_ps(v); }
LOOM_AVX2_INLINE __m256d Set256(double v) { return _mm256_set1_pd(v); }
LOOM_AVX2_INLINE void Store256(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
LOOM_AVX2_INLINE void Store256(double* p, __m256d v) { _mm256_storeu_pd(p, v); }
// All-ones lanes where a or b is NaN.
LOOM_AVX2_INLINE __m256 Unordered(__m256 a, __m256 b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
LOOM_AVX2_INLINE __m256d Unordered(__m256d a, __m256d b) {
  return _mm256_cmp_pd(a, b, _CMP_UNORD_Q);
}
LOOM_AVX2_INLINE int LaneBits(__m256 v) { return _mm256_movemask_ps(v); }
LOOM_AVX2_INLINE int LaneBits(__m256d v) { return _mm256_movemask_pd(v); }
LOOM_AVX2_INLINE int EqualBits(__m256 a, __m256 b) {
  return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ));
}
LOOM_AVX2_INLINE int EqualBits(__m256d a, __m256d b) {
  return _mm256_movemask_pd(_mm256_cmp_pd(a, b, _CMP_EQ_OQ));
}

// ---- 512 bits.

template <bool kMax>
LOOM_AVX512_INLINE __m512 Pick(__m512 a, __m512 b) {
  return kMax ? _mm512_max_ps(a, b) : _mm512_min_ps(a, b);
}
template <bool kMax>
LOOM_AVX512_INLINE __m512d Pick(__m512d a, __m512d b) {
  return kMax ? _mm512_max_pd(a, b) : _mm512_min_pd(a, b);
}
template <bool kMax>
LOOM_AVX512_INLINE float Fold(__m512 v) {
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  return Fold<kMax>(Pick<kMax>(_mm512_castps512_ps256(v), hi));
}
template <bool kMax>
LOOM_AVX512_INLINE double Fold(__m512d v) {
  return Fold<kMax>(Pick<kMax>(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1)));
}

LOOM_AVX512_INLINE __m512 Load512(const float* p) { return _mm512_loadu_ps(p); }
LOOM_AVX512_INLINE __m512d Load512(const double* p) { return _mm512_loadu_pd(p); }
LOOM_AVX512_INLINE __m512 Load512(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
LOOM_AVX512_INLINE __m512d Load512(const double* p, __mmask16 m) {
  return _mm512_maskz_loadu_pd(static_cast<__mmask8>(m), p);
}
LOOM_AVX512_INLINE __m512 Set512(float v) { return _mm512_set1_ps(v); }
LOOM_AVX512_INLINE __m512d Set512(double v) { return _mm512_set1_pd(v); }
LOOM_AVX512_INLINE void Store512(float* p, __m512 v, __mmask16 m) {
  _mm512_mask_storeu_ps(p, m, v);
}
LOOM_AVX512_INLINE void Store512(double* p, __m512d v, __mmask16 m) {
  _mm512_mask_storeu_pd(p, static_cast<__mmask8>(m), v);
}
LOOM_AVX512_INLINE __mmask16 Unordered(__m512 a, __m512 b) {
  return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
}
LOOM_AVX512_INLINE __mmask16 Unordered(__m512d a, __m512d b) {
  return _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q);
}
LOOM_AVX512_INLINE __mmask16 EqualBits(__m512 a, __m512 b) {
  return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
}
LOOM_AVX512_INLINE __mmask16 EqualBits(__m512d a, __m512d b) {
  return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ);
}

// out[c] = the first NaN of column c, for the columns of [c0, c1) that hold one: run only
// once a kernel's NaN flag is set.
template <typename T>
inline void FixNaNColumns(const T* in, int64_t n, int64_t inner, int64_t c0, int64_t c1, T* out) {
  for (int64_t r = n - 1; r >= 0; --r) {  // upwards, so the first NaN is written last
    const T* row = in + r * inner;
    for (int64_t c = c0; c < c1; ++c) {
      if (row[c] != row[c]) out[c] = row[c];
    }
  }
}

template <bool kMax, typename T>
__attribute__((target("avx512f"))) T ContiguousAvx512T(const T* p, int64_t n, bool* nan) {
  constexpr int64_t kW = 64 / sizeof(T);
  static_assert(kLanes<T> == 4 * kW);
  const auto identity = Set512(Identity<kMax, T>());
  auto a0 = identity, a1 = identity, a2 = identity, a3 = identity;
  __mmask16 bad = 0;
  int64_t i = 0;
  for (; i + 4 * kW <= n; i += 4 * kW) {
    const auto x0 = Load512(p + i), x1 = Load512(p + i + kW);
    const auto x2 = Load512(p + i + 2 * kW), x3 = Load512(p + i + 3 * kW);
    a0 = Pick<kMax>(a0, x0);
    a1 = Pick<kMax>(a1, x1);
    a2 = Pick<kMax>(a2, x2);
    a3 = Pick<kMax>(a3, x3);
    bad |= Unordered(x0, x1) | Unordered(x2, x3);
  }
  T r = Fold<kMax>(Pick<kMax>(Pick<kMax>(a0, a2), Pick<kMax>(a1, a3)));
  bool tail_nan = false;
  for (; i < n; ++i) {
    r = minmax::Pick<kMax>(r, p[i]);
    tail_nan |= p[i] != p[i];
  }
  *nan = bad != 0 || tail_nan;
  return r;
}

template <bool kMax, typename T>
__attribute__((target("avx2"))) T ContiguousAvx2T(const T* p, int64_t n, bool* nan) {
  constexpr int64_t kW = 32 / sizeof(T);
  static_assert(kLanes<T> == 8 * kW);
  const auto identity = Set256(Identity<kMax, T>());
  auto a0 = identity, a1 = identity, a2 = identity, a3 = identity;
  auto a4 = identity, a5 = identity, a6 = identity, a7 = identity;
  auto bad = Set256(T(0));
  int64_t i = 0;
  for (; i + 8 * kW <= n; i += 8 * kW) {
    const auto x0 = Load256(p + i), x1 = Load256(p + i + kW);
    const auto x2 = Load256(p + i + 2 * kW), x3 = Load256(p + i + 3 * kW);
    a0 = Pick<kMax>(a0, x0);
    a1 = Pick<kMax>(a1, x1);
    a2 = Pick<kMax>(a2, x2);
    a3 = Pick<kMax>(a3, x3);
    bad = Unordered(bad, Unordered(x0, x1));
    bad = Unordered(bad, Unordered(x2, x3));
    const auto x4 = Load256(p + i + 4 * kW), x5 = Load256(p + i + 5 * kW);
    const auto x6 = Load256(p + i + 6 * kW), x7 = Load256(p + i + 7 * kW);
    a4 = Pick<kMax>(a4, x4);
    a5 = Pick<kMax>(a5, x5);
    a6 = Pick<kMax>(a6, x6);
    a7 = Pick<kMax>(a7, x7);
    bad = Unordered(bad, Unordered(x4, x5));
    bad = Unordered(bad, Unordered(x6, x7));
  }
  // Lane i with lane i + L/2 (register k with k + 4), then L/4 (k with k + 2), then L/8.
  const auto b0 = Pick<kMax>(a0, a4), b1 = Pick<kMax>(a1, a5);
  const auto b2 = Pick<kMax>(a2, a6), b3 = Pick<kMax>(a3, a7);
  T r = Fold<kMax>(Pick<kMax>(Pick<kMax>(b0, b2), Pick<kMax>(b1, b3)));
  bool tail_nan = false;
  for (; i < n; ++i) {
    r = minmax::Pick<kMax>(r, p[i]);
    tail_nan |= p[i] != p[i];
  }
  *nan = LaneBits(bad) != 0 || tail_nan;
  return r;
}

// The column kernels read whole rows in order, four at a time (four sequential streams
// the prefetchers follow; a register tile walking down the columns instead was 4x slower at
// [1000, 4096] floats), folding each into out[c0, c1) (in L1) in row order: out = row 0
// (Pick(identity, x) is x), then out = Pick(Pick(Pick(Pick(out, r), r + 1), r + 2), r + 3).
template <bool kMax, typename T>
__attribute__((target("avx512f"))) void ColumnsAvx512T(const T* in, int64_t n, int64_t inner,
                                                       int64_t c0, int64_t c1, T* out) {
  constexpr int64_t kW = 64 / sizeof(T);
  __mmask16 bad = 0;
  for (int64_t c = c0; c < c1; c += kW) {
    const auto valid = static_cast<__mmask16>(c1 - c >= kW ? (1u << kW) - 1 : (1u << (c1 - c)) - 1);
    const auto x = Load512(in + c, valid);
    Store512(out + c, x, valid);
    bad |= Unordered(x, x);
  }
  int64_t r = 1;
  for (; r + 4 <= n; r += 4) {
    const T* p0 = in + r * inner;
    const T* p1 = p0 + inner;
    const T* p2 = p1 + inner;
    const T* p3 = p2 + inner;
    int64_t c = c0;
    for (; c + kW <= c1; c += kW) {
      const auto x0 = Load512(p0 + c), x1 = Load512(p1 + c);
      const auto x2 = Load512(p2 + c), x3 = Load512(p3 + c);
      const auto acc =
          Pick<kMax>(Pick<kMax>(Pick<kMax>(Pick<kMax>(Load512(out + c), x0), x1), x2), x3);
      Store512(out + c, acc, static_cast<__mmask16>((1u << kW) - 1));
      bad |= Unordered(x0, x1) | Unordered(x2, x3);
    }
    if (c < c1) {
      const auto valid = static_cast<__mmask16>((1u << (c1 - c)) - 1);
      const auto x0 = Load512(p0 + c, valid), x1 = Load512(p1 + c, valid);
      const auto x2 = Load512(p2 + c, valid), x3 = Load512(p3 + c, valid);
      const auto acc =
          Pick<kMax>(Pick<kMax>(Pick<kMax>(Pick<kMax>(Load512(out + c, valid), x0), x1), x2), x3);
      Store512(out + c, acc, valid);
      bad |= Unordered(x0, x1) | Unordered(x2, x3);
    }
  }
  for (; r < n; ++r) {
    const T* p = in + r * inner;
    for (int64_t c = c0; c < c1; c += kW) {
      const auto valid =
          static_cast<__mmask16>(c1 - c >= kW ? (1u << kW) - 1 : (1u << (c1 - c)) - 1);
      const auto x = Load512(p + c, valid);
      Store512(out + c, Pick<kMax>(Load512(out + c, valid), x), valid);
      bad |= Unordered(x, x);
    }
  }
  if (bad != 0) FixNaNColumns(in, n, inner, c0, c1, out);
}

template <bool kMax, typename T>
__attribute__((target("avx2"))) void ColumnsAvx2T(const T* in, int64_t n, int64_t inner, int64_t c0,
                                                  int64_t c1, T* out) {
  constexpr int64_t kW = 32 / sizeof(T);
  const int64_t vector_end = c0 + (c1 - c0) / kW * kW;
  auto bad = Set256(T(0));
  for (int64_t c = c0; c < vector_end; c += kW) {
    const auto x = Load256(in + c);
    Store256(out + c, x);
    bad = Unordered(bad, x);  // stays all-ones (a NaN bit pattern) once set
  }
  int64_t r = 1;
  for (; r + 4 <= n; r += 4) {
    const T* p0 = in + r * inner;
    const T* p1 = p0 + inner;
    const T* p2 = p1 + inner;
    const T* p3 = p2 + inner;
    for (int64_t c = c0; c < vector_end; c += kW) {
      const auto x0 = Load256(p0 + c), x1 = Load256(p1 + c);
      const auto x2 = Load256(p2 + c), x3 = Load256(p3 + c);
      Store256(out + c,
               Pick<kMax>(Pick<kMax>(Pick<kMax>(Pick<kMax>(Load256(out + c), x0), x1), x2), x3));
      bad = Unordered(bad, Unordered(x0, x1));
      bad = Unordered(bad, Unordered(x2, x3));
    }
  }
  for (; r < n; ++r) {
    const T* p = in + r * inner;
    for (int64_t c = c0; c < vector_end; c += kW) {
      const auto x = Load256(p + c);
      Store256(out + c, Pick<kMax>(Load256(out + c), x));
      bad = Unordered(bad, x);
    }
  }
  bool nan = LaneBits(bad) != 0;
  // The last columns one at a time, in order (the scalar copy's fold of a column).
  for (int64_t c = vector_end; c < c1; ++c) {
    T acc = Identity<kMax, T>();
    for (int64_t k = 0; k < n; ++k) {
      const T x = in[k * inner + c];
      acc = minmax::Pick<kMax>(acc, x);
      nan |= x != x;
    }
    out[c] = acc;
  }
  if (nan) FixNaNColumns(in, n, inner, c0, c1, out);
}

template <typename T>
__attribute__((target("avx512f"))) int64_t FindAvx512T(const T* p, int64_t n, T v) {
  constexpr int64_t kW = 64 / sizeof(T);
  const auto target = Set512(v);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const unsigned hits = EqualBits(Load512(p + i), target);
    if (hits != 0) return i + __builtin_ctz(hits);
  }
  for (; i < n; ++i) {
    if (p[i] == v) return i;
  }
  return n;
}

template <typename T>
__attribute__((target("avx2"))) int64_t FindAvx2T(const T* p, int64_t n, T v) {
  constexpr int64_t kW = 32 / sizeof(T);
  const auto target = Set256(v);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const auto hits = static_cast<unsigned>(EqualBits(Load256(p + i), target));
    if (hits != 0) return i + __builtin_ctz(hits);
  }
  for (; i < n; ++i) {
    if (p[i] == v) return i;
  }
  return n;
}

}  // namespace

// The entry points: plain calls into the target-attributed templates (a function first
// declared without a target cannot take one on its definition).
// NOLINTBEGIN(bugprone-macro-parentheses): the argument is a type.
#define LOOM_MINMAX_ENTRIES(T)                                                                \
  T ContiguousAvx512(bool max, const T* p, int64_t n, bool* nan) {                            \
    return max ? ContiguousAvx512T<true>(p, n, nan) : ContiguousAvx512T<false>(p, n, nan);    \
  }                                                                                           \
  T ContiguousAvx2(bool max, const T* p, int64_t n, bool* nan) {                              \
    return max ? ContiguousAvx2T<true>(p, n, nan) : ContiguousAvx2T<false>(p, n, nan);        \
  }                                                                                           \
  void ColumnsAvx512(bool max, const T* in, int64_t n, int64_t inner, int64_t c0, int64_t c1, \
                     T* out) {                                                                \
    if (max) return ColumnsAvx512T<true>(in, n, inner, c0, c1, out);                          \
    ColumnsAvx512T<false>(in, n, inner, c0, c1, out);                                         \
  }                                                                                           \
  void ColumnsAvx2(bool max, const T* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,   \
                   T* out) {                                                                  \
    if (max) return ColumnsAvx2T<true>(in, n, inner, c0, c1, out);                            \
    ColumnsAvx2T<false>(in, n, inner, c0, c1, out);                                           \
  }                                                                                           \
  int64_t FindAvx512(const T* p, int64_t n, T v) { return FindAvx512T(p, n, v); }             \
  int64_t FindAvx2(const T* p, int64_t n, T v) { return FindAvx2T(p, n, v); }
LOOM_MINMAX_ENTRIES(float)
LOOM_MINMAX_ENTRIES(double)
#undef LOOM_MINMAX_ENTRIES
// NOLINTEND(bugprone-macro-parentheses)

#endif  // __x86_64__

}  // namespace loom::reduce_internal::minmax

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
