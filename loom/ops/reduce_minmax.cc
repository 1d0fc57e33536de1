// Max / Min / ArgMax / ArgMin kernels over float and double: the scalar copy and the choice
// of isa (reduce_minmax.h); the vector kernels are in reduce_minmax_x86.cc.
#include "loom/ops/reduce_minmax.h"

#include <cstdint>
#include <vector>

#include "loom/ops/reduce_minmax_x86.h"
#include "loom/ops/vector_isa.h"

namespace loom::reduce_internal {
namespace {

using minmax::FirstNaN;
using minmax::FirstNaNInColumn;
using minmax::Identity;
using minmax::kLanes;
using minmax::Pick;

// reduce_minmax.h's lanes, tree fold and tail, one lane at a time.
template <bool kMax, typename T>
T ContiguousScalar(const T* p, int64_t n, bool* nan) {
  constexpr int64_t kL = kLanes<T>;
  T lanes[kL];
  for (T& lane : lanes) lane = Identity<kMax, T>();
  bool bad = false;
  int64_t i = 0;
  for (; i + kL <= n; i += kL) {
    for (int64_t l = 0; l < kL; ++l) {
      lanes[l] = Pick<kMax>(lanes[l], p[i + l]);
      bad |= p[i + l] != p[i + l];
    }
  }
  for (int64_t w = kL / 2; w >= 1; w /= 2) {
    for (int64_t l = 0; l < w; ++l) lanes[l] = Pick<kMax>(lanes[l], lanes[l + w]);
  }
  T r = lanes[0];
  for (; i < n; ++i) {
    r = Pick<kMax>(r, p[i]);
    bad |= p[i] != p[i];
  }
  *nan = bad;
  return r;
}

// Each column folded in order; rows outer so the reads stay contiguous.
template <bool kMax, typename T>
void ColumnsScalar(const T* in, int64_t n, int64_t inner, int64_t c0, int64_t c1, T* out) {
  std::vector<unsigned char> nan(c1 - c0, 0);
  for (int64_t c = c0; c < c1; ++c) out[c] = Identity<kMax, T>();
  for (int64_t r = 0; r < n; ++r) {
    const T* row = in + r * inner;
    for (int64_t c = c0; c < c1; ++c) {
      out[c] = Pick<kMax>(out[c], row[c]);
      nan[c - c0] |= static_cast<unsigned char>(row[c] != row[c]);
    }
  }
  for (int64_t c = c0; c < c1; ++c) {
    if (nan[c - c0] != 0) out[c] = FirstNaNInColumn(in, n, inner, c);
  }
}

template <bool kMax, typename T>
T Contiguous(MinMaxIsa isa, const T* p, int64_t n, bool* nan) {
#if defined(__x86_64__)
  if (isa == MinMaxIsa::kAvx512) return minmax::ContiguousAvx512(kMax, p, n, nan);
  if (isa == MinMaxIsa::kAvx2) return minmax::ContiguousAvx2(kMax, p, n, nan);
#endif
  return ContiguousScalar<kMax>(p, n, nan);
}

template <typename T>
int64_t Find(MinMaxIsa isa, const T* p, int64_t n, T v) {
#if defined(__x86_64__)
  if (isa == MinMaxIsa::kAvx512) return minmax::FindAvx512(p, n, v);
  if (isa == MinMaxIsa::kAvx2) return minmax::FindAvx2(p, n, v);
#endif
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] == v) return i;
  }
  return n;
}

}  // namespace

const char* MinMaxIsaName(MinMaxIsa isa) {
  switch (isa) {
    case MinMaxIsa::kAvx512:
      return "avx512";
    case MinMaxIsa::kAvx2:
      return "avx2";
    case MinMaxIsa::kScalar:
      break;
  }
  return "scalar";
}

std::vector<MinMaxIsa> AvailableMinMaxIsas() {
  std::vector<MinMaxIsa> isas = {MinMaxIsa::kScalar};
#if defined(__x86_64__)
  if (internal::CpuHasAvx2()) isas.push_back(MinMaxIsa::kAvx2);
  if (internal::CpuHasAvx2() && internal::CpuHasAvx512F()) isas.push_back(MinMaxIsa::kAvx512);
#endif
  return isas;
}

MinMaxIsa ActiveMinMaxIsa() {
  if (internal::ActiveVectorIsa() == internal::VectorIsa::kBaseline) return MinMaxIsa::kScalar;
#if defined(__x86_64__)
  if (internal::CpuHasAvx512F()) return MinMaxIsa::kAvx512;
#endif
  return MinMaxIsa::kAvx2;
}

template <bool kMax, typename T>
T MinMaxOf(MinMaxIsa isa, const T* p, int64_t n) {
  bool nan = false;
  const T r = Contiguous<kMax>(isa, p, n, &nan);
  return nan ? p[FirstNaN(p, n)] : r;
}

template <bool kMax, typename T>
void MinMaxColumns(MinMaxIsa isa, const T* in, int64_t n, int64_t inner, int64_t c0, int64_t c1,
                   T* out) {
#if defined(__x86_64__)
  if (isa == MinMaxIsa::kAvx512) return minmax::ColumnsAvx512(kMax, in, n, inner, c0, c1, out);
  if (isa == MinMaxIsa::kAvx2) return minmax::ColumnsAvx2(kMax, in, n, inner, c0, c1, out);
#endif
  ColumnsScalar<kMax>(in, n, inner, c0, c1, out);
}

template <bool kMax, typename T>
int64_t ArgMinMaxOf(MinMaxIsa isa, const T* p, int64_t n) {
  bool nan = false;
  const T r = Contiguous<kMax>(isa, p, n, &nan);
  return nan ? FirstNaN(p, n) : Find(isa, p, n, r);
}

// NOLINTBEGIN(bugprone-macro-parentheses): the arguments are a constant and a type.
#define LOOM_INSTANTIATE_MINMAX(kMax, T)                                                        \
  template T MinMaxOf<kMax, T>(MinMaxIsa, const T*, int64_t);                                   \
  template void MinMaxColumns<kMax, T>(MinMaxIsa, const T*, int64_t, int64_t, int64_t, int64_t, \
                                       T*);                                                     \
  template int64_t ArgMinMaxOf<kMax, T>(MinMaxIsa, const T*, int64_t);
LOOM_INSTANTIATE_MINMAX(true, float)
LOOM_INSTANTIATE_MINMAX(false, float)
LOOM_INSTANTIATE_MINMAX(true, double)
LOOM_INSTANTIATE_MINMAX(false, double)
#undef LOOM_INSTANTIATE_MINMAX
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace loom::reduce_internal
