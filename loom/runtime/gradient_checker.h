#ifndef LOOM_RUNTIME_GRADIENT_CHECKER_H_
#define LOOM_RUNTIME_GRADIENT_CHECKER_H_

// The numeric gradient checker every differentiable op is tested with. It builds
//   y = fn(scope, xs)
// over float64 placeholders fed with `x_values`, and compares the symbolic gradient of
// L = sum(r * y), with r a fixed random tensor (so every output element is weighted), to
// central differences (L(x + h) - L(x - h)) / 2h for every element of every x.
//   double err = MaxGradientError([](const Scope& s, const std::vector<Output>& x) {
//     return Tanh(s, x[0]); }, {RandomDoubles({3, 4})});
//   EXPECT_LT(err, 1e-6);
// (runtime/session_test.cc runs this example as written.)
#include <functional>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

struct GradientCheckOptions {
  // Central-difference step. Default: 1e-6.
  double delta = 1e-6;
  // Seed of the weights r. Default: 7.
  uint64_t seed = 7;
};

using GradientCheckFn = std::function<Output(const Scope&, const std::vector<Output>& xs)>;

// The largest |symbolic - numeric| / max(1, |numeric|) over all elements of all xs. An x
// that no gradient reaches counts as a symbolic gradient of zero.
// x_values must be float64; fn must return a float64 output.
double MaxGradientError(const GradientCheckFn& fn, const std::vector<Tensor>& x_values,
                        GradientCheckOptions options = {});

// A float64 tensor of `shape` with values uniform in [lo, hi), from a fixed seed.
Tensor RandomDoubles(const Shape& shape, uint64_t seed = 1, double lo = -1.0, double hi = 1.0);

}  // namespace loom

#endif  // LOOM_RUNTIME_GRADIENT_CHECKER_H_
