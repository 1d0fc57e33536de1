#ifndef LOOM_TESTING_VALUES_H_
#define LOOM_TESTING_VALUES_H_

// Shared fixtures of Loom's tests: a tensor's elements as a vector, for EXPECT_EQ and
// EXPECT_THAT(Values<float>(t), ElementsAre(...)), and float32 test tensors.
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom::testing {

// The elements of `t` in row-major order; T must be t's element type.
template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto f = t.flat<T>();
  return std::vector<T>(f.begin(), f.end());
}

// A float32 tensor of `shape` holding `v` (row-major), for test inputs.
inline Tensor Floats(std::vector<float> v, Shape shape) { return Tensor::FromVector(v, shape); }

}  // namespace loom::testing

#endif  // LOOM_TESTING_VALUES_H_
