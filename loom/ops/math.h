#ifndef LOOM_OPS_MATH_H_
#define LOOM_OPS_MATH_H_

// Element-wise math: arithmetic, comparisons, logic, Select and Cast (TF's math_ops).
//
//   Output y = Add(s, Mul(s, x, 2.0), b);   // literals take the other argument's dtype
//
// Binary ops and Select broadcast like NumPy ([2,3]+[3], [2,1]+[1,3], scalars); a shape
// pair that cannot broadcast fails at construction with the node's name and both shapes.
// Both arguments must have the same dtype (insert a Cast). Gradients of broadcasting ops
// are reduced back to each input's shape by SumToShapeOf, the one place that does so.
// Ops that are not differentiable (comparisons, logic, Sign, Floor, Round) say so: Gradients()
// fails naming them. Cast differentiates between floating dtypes only; a cast to or from
// an integer or bool passes no gradient (like TF's Cast, so masks such as
// Cast(Greater(x, 0), kFloat32) work inside differentiated code).
// Kernels reuse an input's buffer for the output when nothing else views it.
#include "loom/graph/op_def.h"

namespace loom {

// Arithmetic on float32, float64, int32, int64, uint8. Integer Div truncates (C++, TF's
// Div and TruncateDiv); FloorDiv rounds toward -inf and FloorMod takes the divisor's sign
// (Python's // and %, TF's FloorDiv and FloorMod: -7 // 2 == -4, -7 % 2 == 1; floats:
// floor(x / y) and fmod adjusted to y's sign). All three fail on an integer zero divisor;
// the most negative integer over -1 wraps to itself (quotient) and 0 (remainder).
Output Add(const Scope& scope, Input x, Input y);
Output Sub(const Scope& scope, Input x, Input y);
Output Mul(const Scope& scope, Input x, Input y);
Output Div(const Scope& scope, Input x, Input y);
Output Maximum(const Scope& scope, Input x, Input y);
Output Minimum(const Scope& scope, Input x, Input y);
Output FloorDiv(const Scope& scope, Input x, Input y);  // not differentiable
Output FloorMod(const Scope& scope, Input x, Input y);  // d/dx 1, d/dy -FloorDiv(x, y)
// Floating only.
Output Pow(const Scope& scope, Input x, Input y);

// Unary. Neg, Abs, Square, Sign: any numeric dtype; the rest floating only.
Output Neg(const Scope& scope, Input x);
Output Abs(const Scope& scope, Input x);
Output Square(const Scope& scope, Input x);
Output Sign(const Scope& scope, Input x);
Output Exp(const Scope& scope, Input x);
Output Log(const Scope& scope, Input x);
Output Log1p(const Scope& scope, Input x);
Output Sqrt(const Scope& scope, Input x);
Output Rsqrt(const Scope& scope, Input x);
Output Reciprocal(const Scope& scope, Input x);
Output Floor(const Scope& scope, Input x);
// To the nearest integer, halves to the even one (tf.round: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2).
Output Round(const Scope& scope, Input x);

// min(max(x, lo), hi) element-wise, broadcasting all three (lo/hi literals take x's dtype).
Output ClipByValue(const Scope& scope, Input x, Input lo, Input hi);

// Comparisons: bool output. Equal/NotEqual also take bool inputs.
Output Equal(const Scope& scope, Input x, Input y);
Output NotEqual(const Scope& scope, Input x, Input y);
Output Less(const Scope& scope, Input x, Input y);
Output LessEqual(const Scope& scope, Input x, Input y);
Output Greater(const Scope& scope, Input x, Input y);
Output GreaterEqual(const Scope& scope, Input x, Input y);

Output LogicalAnd(const Scope& scope, Input x, Input y);
Output LogicalOr(const Scope& scope, Input x, Input y);
Output LogicalNot(const Scope& scope, Input x);

// cond ? a : b element-wise; cond (bool), a and b broadcast together (TF2's tf.where).
Output Select(const Scope& scope, Input cond, Input a, Input b);
inline Output Where(const Scope& scope, Input cond, Input a, Input b) {
  return Select(scope, cond, a, b);
}

// Converts between float32, float64, int32, int64, uint8 and bool (C++ conversion rules;
// to bool is x != 0). Casting to the same dtype returns x unchanged (no node).
Output Cast(const Scope& scope, Input x, DType dtype);

// `grad` summed over the dims in which `x` was broadcast, so the result has x's shape
// (the reduction of a broadcasting op's gradient). Forwards grad's buffer when the shapes
// already match. Used by every binary op's gradient rule.
Output SumToShapeOf(const Scope& scope, Output grad, Output x);

// Registers every op of the math family: math.h, reduce.h and matmul.h.
void RegisterMathOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_MATH_H_
