#ifndef LOOM_OPS_MATH_TRIG_H_
#define LOOM_OPS_MATH_TRIG_H_

// Element-wise transcendental functions of floats (float32, float64) beyond math.h's:
// TF's Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Expm1, Erf, Ceil and Atan2, each with its
// gradient (Ceil is piecewise constant: not differentiable, like Floor). Outside a
// function's domain (asin(2)) the result is NaN, as std:: and TF give.
#include "loom/graph/op_def.h"

namespace loom {

Output Sin(const Scope& scope, Input x);
Output Cos(const Scope& scope, Input x);
Output Tan(const Scope& scope, Input x);
Output Asin(const Scope& scope, Input x);
Output Acos(const Scope& scope, Input x);
Output Atan(const Scope& scope, Input x);
Output Sinh(const Scope& scope, Input x);
Output Cosh(const Scope& scope, Input x);
// exp(x) - 1, accurate near 0.
Output Expm1(const Scope& scope, Input x);
// The error function 2 / sqrt(pi) * integral_0^x exp(-t^2) dt.
Output Erf(const Scope& scope, Input x);
Output Ceil(const Scope& scope, Input x);
// atan2(y, x): the angle of the point (x, y) in (-pi, pi], with NumPy broadcasting; y = 0,
// x = 0 gives 0 (its gradient there is NaN, as TF's).
Output Atan2(const Scope& scope, Input y, Input x);

void RegisterMathTrigOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_MATH_TRIG_H_
