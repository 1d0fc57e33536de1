#ifndef LOOM_OPS_RANDOM_INTERNAL_H_
#define LOOM_OPS_RANDOM_INTERNAL_H_

// What the random ops (random.cc) and dropout (dropout.cc) share: the seed attributes,
// TF1's seed rule and the per-run Philox stream. Internal to the ops layer.
#include <algorithm>
#include <cstdint>
#include <utility>

#include "loom/graph/op_def.h"
#include "loom/ops/philox.h"

namespace loom::random_internal {

inline constexpr Attr<int64_t> kSeed{"seed"};
inline constexpr Attr<int64_t> kSeed2{"seed2"};

inline constexpr const char* kRandomNoGradient = "random numbers do not depend on any input";

// The stream one kernel invocation draws from: block b of it is
// Philox(counter = (b, run), key).
struct Stream {
  philox::Key key;
  uint64_t run;

  philox::Block At(uint64_t block, uint32_t attempt = 0) const {
    philox::Key k = {key[0], key[1] + attempt};
    return philox::Philox4x32({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                               static_cast<uint32_t>(run), static_cast<uint32_t>(run >> 32)},
                              k);
  }
};

// The stream of this run of c's node (its RandomStreamResource, created on first use from
// the node's seeds); advances the node's run counter.
Stream NextStream(KernelContext& c);

// TF1's get_seed: (graph seed, op seed) -> the op's (seed, seed2); (0, 0) means
// nondeterministic. Call right before adding the node (the node id is the next one).
std::pair<int64_t, int64_t> OpSeeds(const Scope& scope, int64_t op_seed);

// True for Dropout and DropoutWithRate (dropout.cc): random ops whose streams the Saver keeps.
bool IsDropoutOp(const Node& node);

// Fills out[0, n) block by block: emit(block_bits, first_index, count) writes values
// [first, first + count) from one Philox block. Chunks split on block boundaries, so
// values do not depend on the thread count.
template <typename Emit>
void FillBlocks(KernelContext& c, const Stream& stream, int64_t n, int per_block, Emit&& emit) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  c.pool().ParallelFor(blocks, 2048, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t first = blk * per_block;
      emit(stream.At(blk), first, std::min<int64_t>(per_block, n - first));
    }
  });
}

}  // namespace loom::random_internal

#endif  // LOOM_OPS_RANDOM_INTERNAL_H_
