#ifndef LOOM_OPS_MATH_INTERNAL_H_
#define LOOM_OPS_MATH_INTERNAL_H_

// Shared by math.cc and math_select.cc only: dtype domains (checked at construction,
// dispatched once per kernel call). Not part of the public API.
#include <string_view>

#include "loom/graph/op_def.h"
#include "loom/ops/elementwise.h"

namespace loom::math_internal {

enum class Domain { kFloat, kNumeric, kComparable, kBool };

inline void ExpectDomain(const InferenceContext& c, int i, Domain d) {
  switch (d) {
    case Domain::kFloat:
      return c.ExpectDType(i, {kFloat32, kFloat64});
    case Domain::kNumeric:
      return c.ExpectDType(i, {kFloat32, kFloat64, kInt32, kInt64, kUInt8});
    case Domain::kComparable:
      return c.ExpectDType(i, {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool});
    case Domain::kBool:
      return c.ExpectDType(i, {kBool});
  }
}

template <Domain D, typename Fn>
void Dispatch(DType dtype, std::string_view what, Fn&& fn) {
  if constexpr (D == Domain::kFloat) {
    SwitchFloat(dtype, what, fn);
  } else if constexpr (D == Domain::kNumeric) {
    SwitchNumeric(dtype, what, fn);
  } else if constexpr (D == Domain::kComparable) {
    if (dtype == kBool) return fn(bool{});
    SwitchNumeric(dtype, what, fn);
  } else {
    if (dtype != kBool) ThrowUnsupportedDType(dtype, what, "bool");
    fn(bool{});
  }
}

// A scalar zero of x's dtype (broadcast by Select).
inline Output ZeroOf(const Scope& s, const Output& x) { return AsOutput(s, Input(0.0), x.dtype()); }

// Registers math_select.cc's ops (called by RegisterMathOps).
void RegisterMathSelectOps(OpRegistry& registry);

}  // namespace loom::math_internal

#endif  // LOOM_OPS_MATH_INTERNAL_H_
