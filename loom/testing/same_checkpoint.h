#ifndef LOOM_TESTING_SAME_CHECKPOINT_H_
#define LOOM_TESTING_SAME_CHECKPOINT_H_

// Shared fixture of the reproducibility and kill/resume tests: two checkpoints hold the
// same tensors, bit for bit (variables, optimizer slots, iterator states, random streams).
// Header-only, and the one fixture here above the base layer: a test that includes it
// links loom_train.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/train/saver.h"

namespace loom::testing {

// What a comparison saw, for the caller's own expectations.
struct CheckpointKinds {
  int tensors = 0;
  int random_streams = 0;
  int iterator_states = 0;
};

// EXPECTs that the checkpoints `expected` and `actual` (paths with or without
// ".safetensors") list the same tensors, each with the same dtype, shape and bytes
// (iterator states only listed, not compared, when compare_iterator_states is false).
inline CheckpointKinds ExpectSameCheckpointTensors(const std::string& expected,
                                                   const std::string& actual,
                                                   bool compare_iterator_states = true) {
  Env* env = Env::Default();
  const std::vector<train::CheckpointEntry> a = train::ListVariables(env, expected);
  const std::vector<train::CheckpointEntry> b = train::ListVariables(env, actual);
  CheckpointKinds kinds;
  EXPECT_EQ(a.size(), b.size()) << expected << " vs " << actual;
  if (a.size() != b.size()) return kinds;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    if (a[i].name != b[i].name) return kinds;
    ++kinds.tensors;
    kinds.random_streams += a[i].is_random_stream;
    kinds.iterator_states += a[i].is_iterator_state;
    if (a[i].is_iterator_state && !compare_iterator_states) continue;
    const Tensor x = train::LoadVariable(env, expected, a[i].name);
    const Tensor y = train::LoadVariable(env, actual, b[i].name);
    EXPECT_TRUE(x.dtype() == y.dtype() && x.shape() == y.shape() &&
                x.TotalBytes() == y.TotalBytes() &&
                std::memcmp(x.raw_data(), y.raw_data(), x.TotalBytes()) == 0)
        << a[i].name << " differs between " << expected << " and " << actual << ": "
        << x.DebugString() << " vs " << y.DebugString();
  }
  return kinds;
}

}  // namespace loom::testing

#endif  // LOOM_TESTING_SAME_CHECKPOINT_H_
