#ifndef LOOM_EXAMPLES_FASHION_MNIST_DATA_H_
#define LOOM_EXAMPLES_FASHION_MNIST_DATA_H_

// Loads a Fashion-MNIST split from Debian's dataset-fashion-mnist (gzipped IDX files):
// images as float32 in [0, 1] flattened to [n, 784], labels as int64 [n]. `limit` > 0
// keeps the first `limit` examples.
#include <string>
#include <utility>

#include "loom/base/env.h"
#include "loom/io/idx.h"

namespace examples {

inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

inline std::pair<loom::Tensor, loom::Tensor> LoadFashionMnist(const std::string& dir,
                                                              const std::string& split,
                                                              int64_t limit = 0) {
  loom::Env* env = loom::Env::Default();
  loom::Tensor images = loom::ReadIdx(env, loom::JoinPath(dir, split + "-images-idx3-ubyte.gz"));
  loom::Tensor labels = loom::ReadIdx(env, loom::JoinPath(dir, split + "-labels-idx1-ubyte.gz"));
  int64_t n = images.dim(0);
  if (limit > 0 && limit < n) n = limit;
  loom::Tensor x(loom::kFloat32, {n, 784});
  loom::Tensor y(loom::kInt64, {n});
  const uint8_t* pixels = images.data<uint8_t>();
  float* xf = x.data<float>();
  for (int64_t i = 0; i < n * 784; ++i) xf[i] = pixels[i] / 255.0f;
  for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = labels.data<uint8_t>()[i];
  return {x, y};
}

}  // namespace examples

#endif  // LOOM_EXAMPLES_FASHION_MNIST_DATA_H_
