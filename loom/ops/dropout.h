#ifndef LOOM_OPS_DROPOUT_H_
#define LOOM_OPS_DROPOUT_H_

// Dropout: inverted dropout as one op that outputs y = x * mask and the mask, and its
// gradient dy * mask.
//
//   Graph graph({.seed = 42});
//   Scope s(graph);
//   auto h = Dropout(s, Relu(s, dense), 0.5);
//
// The mask draws from the op's own Philox stream with TF1's seeding, exactly as the random
// ops of random.h do (see there): element i keeps its value when the uniform of element i
// of RandomUniform's stream, for the same seeds and run, is >= rate. So a seeded dropout
// gives the same masks whatever the thread count and the CPU, every Run draws a new mask,
// and the Saver checkpoints the stream (exact resume). The kernel computes 8 Philox blocks
// at a time (vectorized lanes, AVX2 when the CPU has it), which gives the same bits.
// DropoutWithRate, the same op with the rate a run-time input (TF1's keep_prob
// placeholder), is registered here for the importers.
#include <cstdint>

#include "loom/graph/op_def.h"
#include "loom/ops/random.h"

namespace loom {

// Inverted dropout (training behavior): each element of x is zeroed with probability
// `rate` and the survivors are scaled by 1 / (1 - rate), so the expected value is
// unchanged. The gradient uses the same mask. rate 0 returns x itself.
// REQUIRES: 0 <= rate < 1; x float32 or float64.
Output Dropout(const Scope& scope, Input x, double rate, int64_t seed = kNoSeed);

void RegisterDropoutOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_DROPOUT_H_
