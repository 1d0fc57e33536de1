#include "loom/graph/op_sample.h"

#include <random>

namespace loom {

Tensor SampleDoubles(const Shape& shape, uint64_t seed) {
  // The generator of runtime's RandomDoubles(shape, seed, 0.5, 1.5), so a sample keeps
  // the values the sweep's gradient tolerances were set on.
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(0.5, 1.5);
  Tensor t(kFloat64, shape);
  for (double& v : t.flat<double>()) v = dist(rng);
  return t;
}

}  // namespace loom
