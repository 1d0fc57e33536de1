#ifndef LOOM_GRAPH_OP_SAMPLE_H_
#define LOOM_GRAPH_OP_SAMPLE_H_

// Sample inputs for the op sweep (tests/op_sweep_test.cc), declared by the op record that
// needs one (OpDef::sample), so that a new record brings its own coverage:
//
//   .sample = [] { return OpSample{{SampleDoubles({2, 3})}, {kAxes(std::vector<int64_t>{1})}}; },
//
// An op with at most three inputs and no required attribute needs none: the sweep feeds
// it SampleDoubles({2, 3}, i + 1) for input i. An op the sweep cannot run alone says why
// in OpDef::not_swept instead.
#include <cstdint>
#include <vector>

#include "loom/graph/attr_value.h"

namespace loom {

struct OpSample {
  // One value per input: Const nodes for the shape check, fed float64 values for the
  // gradient check.
  std::vector<Tensor> inputs;
  AttrMap attrs;
  // False where a float64 gradient check does not apply (an integer input, an input that
  // is not differentiable on purpose, a stateful or random kernel).
  bool check_gradient = true;
};

// float64 values in [0.5, 1.5) of `shape`, the same for the same seed (away from zero and
// from the kinks of Abs, Relu and Sqrt, so numeric gradients are well defined).
Tensor SampleDoubles(const Shape& shape, uint64_t seed = 1);

}  // namespace loom

#endif  // LOOM_GRAPH_OP_SAMPLE_H_
