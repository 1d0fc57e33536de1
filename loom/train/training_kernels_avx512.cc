// The AVX-512F chunk of Adam's dense update (training_kernels.h: UpdateChunkOn).
//
// Why by hand: g++ 12 compiles the generic loop (training_updates.h) for AVX-512 into a
// slower loop than its AVX2 copy (on AMD Zen 4, 401k elements: ~170 us against ~130 us,
// loop versioning and masked remainders), while these 16-lane intrinsics take ~115 us
// (bench/RESULTS.md, session 16). The operations are the generic loop's in its order, with
// the fused multiply-adds g++ 12 contracts the AVX2 copy's loop into (g++ contracts
// a * b + c in C++ whatever -std says, once FMA is in the target): each result is bitwise
// the AVX2 copy's as g++ 12 compiles it, which update_dispatch_test pins; the baseline copy
// (no FMA) differs from both by a rounding.
#include <cstdint>
#include <limits>

#include "loom/train/training_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// g++ 12's AVX-512 intrinsics pass a deliberately undefined vector (_mm512_undefined_ps:
// `__m512 __Y = __Y;`) as the unused merge source, which -O3 reports as maybe-uninitialized
// once inlined (as in ops/blas_narrow.cc). Only for this file's code (a unity batch shares
// the translation unit).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace loom::train::internal {

#if defined(__x86_64__)
namespace {

// 16 elements from i (the first `mask` lanes of them) of Adam's update; returns the lanes
// whose new var or gradient is NaN or +-Inf.
__attribute__((target("avx512f"), always_inline)) inline __mmask16 AdamLanes(
    float* var, float* m, float* v, const float* g, int64_t i, __mmask16 mask, __m512 alpha,
    __m512 one_minus_beta1, __m512 one_minus_beta2, __m512 epsilon) {
  const __m512 vg = _mm512_maskz_loadu_ps(mask, g + i);
  __m512 vm = _mm512_maskz_loadu_ps(mask, m + i);
  __m512 vv = _mm512_maskz_loadu_ps(mask, v + i);
  __m512 vx = _mm512_maskz_loadu_ps(mask, var + i);
  // m += (g - m) * (1 - beta1); v += (g * g - v) * (1 - beta2), contracted as g++ 12
  // contracts them in the AVX2 copy: m = fma(g - m, 1 - beta1, m),
  // v = fma(fms(g, g, v), 1 - beta2, v).
  vm = _mm512_fmadd_ps(_mm512_sub_ps(vg, vm), one_minus_beta1, vm);
  vv = _mm512_fmadd_ps(_mm512_fmsub_ps(vg, vg, vv), one_minus_beta2, vv);
  // var -= (m * alpha) / (sqrt(v) + epsilon)
  const __m512 step =
      _mm512_div_ps(_mm512_mul_ps(vm, alpha), _mm512_add_ps(_mm512_sqrt_ps(vv), epsilon));
  vx = _mm512_sub_ps(vx, step);
  _mm512_mask_storeu_ps(m + i, mask, vm);
  _mm512_mask_storeu_ps(v + i, mask, vv);
  _mm512_mask_storeu_ps(var + i, mask, vx);
  // !(|x| <= max): true for NaN (unordered) and +-Inf, as AnyNonFinite.
  const __m512 max = _mm512_set1_ps(std::numeric_limits<float>::max());
  return _mm512_mask_cmp_ps_mask(mask, _mm512_abs_ps(vx), max, _CMP_NLE_UQ) |
         _mm512_mask_cmp_ps_mask(mask, _mm512_abs_ps(vg), max, _CMP_NLE_UQ);
}

}  // namespace

__attribute__((target("avx512f"))) bool AdamChunkAvx512(float* var, float* m, float* v,
                                                        const float* g, int64_t n, float alpha,
                                                        float beta1, float beta2, float epsilon) {
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 c1 = _mm512_set1_ps(1.f - beta1), c2 = _mm512_set1_ps(1.f - beta2);
  const __m512 ve = _mm512_set1_ps(epsilon);
  __mmask16 bad = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) bad |= AdamLanes(var, m, v, g, i, 0xFFFF, va, c1, c2, ve);
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1);
    bad |= AdamLanes(var, m, v, g, i, tail, va, c1, c2, ve);
  }
  return bad != 0;
}

bool CpuHasAvx512F() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
  }();
  return has;
}

#else

bool AdamChunkAvx512(float*, float*, float*, const float*, int64_t, float, float, float, float) {
  LOOM_CHECK(false) << "the AVX-512 Adam chunk needs an x86-64 CPU";
  return false;
}

bool CpuHasAvx512F() { return false; }

#endif

}  // namespace loom::train::internal

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
