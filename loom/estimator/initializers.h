#ifndef LOOM_ESTIMATOR_INITIALIZERS_H_
#define LOOM_ESTIMATOR_INITIALIZERS_H_

// Variable initializers for layers (TF1's tf.initializers / tf.keras.initializers).
// An Initializer is a callable that builds the initial-value Output of a variable of a
// given fully defined shape and dtype:
//
//   Output w0 = initializers::GlorotUniform()(s, {784, 10}, kFloat32);
//   Variable w(s.WithOpName("w"), w0);
//   L::Dense(s, x, {.units = 10, .kernel_initializer = initializers::HeNormal({.seed = 3})});
//
// Random initializers build the random ops of loom/ops/random.h, so seeding is TF1's: an
// unset seed (kNoSeed) takes the graph seed and the op's node id, so rebuilding the same
// graph with the same graph seed reproduces the same initial values.
// Fans (VarianceScaling) follow TF's _compute_fans: rank 0: 1/1; rank 1: dim 0 for both;
// rank 2: [fan_in, fan_out]; rank >= 3 (convolution kernels HWIO): receptive field
// (product of all but the last two dims) times dim -2 / dim -1.
#include <cstdint>
#include <functional>

#include "loom/graph/op_def.h"
#include "loom/ops/random.h"

namespace loom::initializers {

using Initializer = std::function<Output(const Scope&, const Shape&, DType)>;

struct Fans {
  double fan_in = 1;
  double fan_out = 1;
};
// REQUIRES: shape fully defined.
Fans ComputeFans(const Shape& shape);

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution {
  // Normal truncated at two standard deviations, the stddev corrected by
  // 0.87962566103423978 (std of the standard normal truncated to [-2, 2]) so the samples
  // have the intended variance. TF1's "truncated_normal" (and its deprecated "normal").
  kTruncatedNormal,
  // Plain normal (TF's "untruncated_normal").
  kNormal,
  // Uniform in [-sqrt(3 * scale'), sqrt(3 * scale')).
  kUniform,
};

struct VarianceScalingOptions {
  // Target variance before dividing by the fan. Default: 1.0.
  double scale = 1.0;
  // Default: kFanIn (TF1's default).
  FanMode mode = FanMode::kFanIn;
  // Default: kTruncatedNormal (TF1's default).
  Distribution distribution = Distribution::kTruncatedNormal;
  // Op seed. Default: kNoSeed (from the graph seed).
  int64_t seed = kNoSeed;
};
// Samples with variance scale / max(1, fan) (fan per `mode`; fan_avg = (in + out) / 2).
Initializer VarianceScaling(VarianceScalingOptions options = {});

struct SeedOptions {
  // Default: kNoSeed (from the graph seed).
  int64_t seed = kNoSeed;
};
// VarianceScaling(1, fan_avg, uniform): limit sqrt(6 / (fan_in + fan_out)). tf.layers'
// default kernel initializer.
Initializer GlorotUniform(SeedOptions options = {});
// VarianceScaling(1, fan_avg, truncated normal).
Initializer GlorotNormal(SeedOptions options = {});
// VarianceScaling(2, fan_in, truncated normal).
Initializer HeNormal(SeedOptions options = {});
// VarianceScaling(2, fan_in, uniform).
Initializer HeUniform(SeedOptions options = {});

struct NormalOptions {
  double mean = 0.0;       // Default: 0.0
  double stddev = 1.0;     // Default: 1.0 (TF1 random_normal / truncated_normal initializers)
  int64_t seed = kNoSeed;  // Default: kNoSeed
};
Initializer RandomNormal(NormalOptions options = {});
// Redrawn outside two standard deviations (TF's truncated_normal_initializer).
Initializer TruncatedNormal(NormalOptions options = {});

struct UniformOptions {
  double minval = -0.05;   // Default: -0.05 (TF1 random_uniform_initializer: 0; Keras: -0.05)
  double maxval = 0.05;    // Default: 0.05 (TF1: 1; Keras: 0.05)
  int64_t seed = kNoSeed;  // Default: kNoSeed
};
Initializer RandomUniform(UniformOptions options = {});

Initializer Zeros();
Initializer Ones();
// Every element equal to `value` (converted to the variable's dtype).
Initializer Constant(double value);
// Exactly `value` (its dtype and shape must match the variable's).
Initializer Constant(const Tensor& value);

}  // namespace loom::initializers

#endif  // LOOM_ESTIMATOR_INITIALIZERS_H_
