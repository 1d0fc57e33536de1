#ifndef LOOM_OPS_RANDOM_H_
#define LOOM_OPS_RANDOM_H_

// Random-number ops and dropout.
//
//   Graph graph({.seed = 42});
//   Scope s(graph);
//   Variable w(s.WithOpName("w"), TruncatedNormal(s, {784, 10}, kFloat32, 0.0, 0.1));
//   auto h = Dropout(s, x, 0.5);
//
// Seeding follows TF1 (tf.random.get_seed): with a graph seed g and an op seed o the op
// uses (g, o); with only g, (g, the op's node id), so rebuilding the same graph gives the
// same numbers; with only o, (87654321, o); with neither, a seed drawn from the OS when the
// Session first runs the op (nondeterministic).
// Each element's value depends only on (seeds, how many times this Session has run this
// op before, the element's index): a counter-based Philox4x32-10 generator, so results
// are identical whatever the thread count, and every Run draws new numbers. The per-op
// run counter is a Session resource named after the node.
#include <cstdint>

#include "loom/graph/op_def.h"

namespace loom {

// Op seed meaning "none": take it from the graph seed (or nondeterministic).
inline constexpr int64_t kNoSeed = -1;

// Normal(mean, stddev) samples. dtype: float32 or float64. REQUIRES: fully defined shape.
Output RandomNormal(const Scope& scope, const Shape& shape, DType dtype = kFloat32,
                    double mean = 0.0, double stddev = 1.0, int64_t seed = kNoSeed);
// Normal samples redrawn until within two standard deviations of the mean (TF's
// truncated_normal, the usual weight initializer).
Output TruncatedNormal(const Scope& scope, const Shape& shape, DType dtype = kFloat32,
                       double mean = 0.0, double stddev = 1.0, int64_t seed = kNoSeed);
// Uniform samples in [minval, maxval). dtype: float32 or float64.
Output RandomUniform(const Scope& scope, const Shape& shape, DType dtype = kFloat32,
                     double minval = 0.0, double maxval = 1.0, int64_t seed = kNoSeed);
// Uniform integers in [minval, maxval). dtype: int32 or int64. REQUIRES: minval < maxval.
Output RandomUniformInt(const Scope& scope, const Shape& shape, int64_t minval, int64_t maxval,
                        DType dtype = kInt64, int64_t seed = kNoSeed);

// Inverted dropout (training behavior): each element of x is zeroed with probability
// `rate` and the survivors are scaled by 1 / (1 - rate), so the expected value is
// unchanged. The gradient uses the same mask. rate 0 returns x itself.
// REQUIRES: 0 <= rate < 1; x float32 or float64.
Output Dropout(const Scope& scope, Input x, double rate, int64_t seed = kNoSeed);

void RegisterRandomOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_RANDOM_H_
