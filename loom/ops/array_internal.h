#ifndef LOOM_OPS_ARRAY_INTERNAL_H_
#define LOOM_OPS_ARRAY_INTERNAL_H_

// Helpers shared by array.cc, array_join.cc, array_index.cc, array_transpose.cc and blas.cc.
// Not part of the public API.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom::array_internal {

// Slice's attributes (array_index.cc), read by array.cc's StaticShapeValue.
inline constexpr Attr<std::vector<int64_t>> kSliceBegin{"begin"};
inline constexpr Attr<std::vector<int64_t>> kSliceSize{"size"};

// out[j * ldo + i] = in[i * ldi + j] for the output rows j in [row_begin, row_end) (the
// input's columns) of an m-row input, in 32 x 32 tiles so both sides stay in cache.
template <typename T>
void Transpose2D(const T* in, int64_t ldi, T* out, int64_t ldo, int64_t m, int64_t row_begin,
                 int64_t row_end) {
  constexpr int64_t kTile = 32;
  for (int64_t j0 = row_begin; j0 < row_end; j0 += kTile) {
    const int64_t j1 = std::min(row_end, j0 + kTile);
    for (int64_t i0 = 0; i0 < m; i0 += kTile) {
      const int64_t i1 = std::min(m, i0 + kTile);
      for (int64_t j = j0; j < j1; ++j) {
        T* o = out + j * ldo;
        for (int64_t i = i0; i < i1; ++i) o[i] = in[i * ldi + j];
      }
    }
  }
}

// "[2,-1,3]" for attribute vectors in messages.
std::string DimsString(const std::vector<int64_t>& dims);

// Maps a possibly negative axis into [0, rank); fails naming the node otherwise.
template <typename Ctx>
int CanonicalAxis(const Ctx& c, int64_t axis, int rank, std::string_view what = "axis") {
  if (axis < -rank || axis >= rank) {
    c.Fail(what, " ", axis, " is out of range for a tensor of rank ", rank, " (valid: [", -rank,
           ", ", rank, "))");
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Data movement does not care about the meaning of bits: dispatches on storage type
// (uint8_t/uint16_t/uint32_t/uint64_t by element size, std::string for strings), so a
// copying kernel is instantiated four times instead of seven.
template <typename Fn>
auto SwitchStorage(DType dtype, Fn&& fn) {
  if (dtype == DType::kString) return fn(std::string{});
  switch (DTypeSize(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    default:
      ThrowUnsupportedDType(dtype, "array op", "any valid dtype");
  }
}

template <typename T>
const T* Raw(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}
template <typename T>
T* Raw(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

// Row-major strides (in elements) of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);
int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end);

// A shape from a 1-D int32/int64 tensor (a shape value at run time).
std::vector<int64_t> DimsFromTensor(const KernelContext& c, const Tensor& t, std::string_view what);

// x's shape as an int64 vector Output: a Const when statically known, else ShapeOf(x).
Output ShapeOfOrConst(const Scope& scope, const Output& x);

// The gradient ops that take (dy, x's shape as an int64 vector) and return dx shaped like
// x (SliceGrad, StridedSliceGrad, TileGrad): their shape rule, and the node a forward
// op's gradient adds with the forward attributes `attrs`.
void ShapedLikeInput1(InferenceContext& c);
Output AddShapedGrad(const GradContext& g, const OpDef& grad_op, AttrMap attrs);

// Register the ops of array_transpose.cc, array_join.cc, array_index.cc and array_gather.cc (called
// by RegisterArrayOps).
void RegisterArrayTransposeOps(OpRegistry& registry);
void RegisterArrayJoinOps(OpRegistry& registry);
void RegisterArrayIndexOps(OpRegistry& registry);
void RegisterArrayGatherOps(OpRegistry& registry);
void RegisterArraySequenceOps(OpRegistry& registry);  // array_sequence.cc

}  // namespace loom::array_internal

#endif  // LOOM_OPS_ARRAY_INTERNAL_H_
