#ifndef LOOM_DATA_TEST_UTIL_H_
#define LOOM_DATA_TEST_UTIL_H_

// Helpers for the data layer's tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/data/dataset.h"
#include "loom/testing/error_of.h"

namespace loom::data::testing {

// Every element's int64 component `name`, flattened, in order.
inline std::vector<int64_t> Ints(Iterator& it, const std::string& name = "x", int64_t limit = -1) {
  std::vector<int64_t> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    auto e = it.GetNext();
    if (!e) break;
    for (int64_t v : e->at(name).flat<int64_t>()) out.push_back(v);
  }
  return out;
}
inline std::vector<int64_t> Ints(const Dataset& d, const std::string& name = "x") {
  auto it = d.MakeIterator();
  return Ints(*it, name);
}

inline Tensor Iota(int64_t n, int64_t cols = 0) {
  std::vector<int64_t> v(cols ? n * cols : n);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return cols ? Tensor::FromVector(v, {n, cols}) : Tensor::FromVector(v);
}

// The code of the Error fn() throws (loom/testing/error_of.h).
using loom::testing::CodeOf;

}  // namespace loom::data::testing

#endif  // LOOM_DATA_TEST_UTIL_H_
