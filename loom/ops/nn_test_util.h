#ifndef LOOM_OPS_NN_TEST_UTIL_H_
#define LOOM_OPS_NN_TEST_UTIL_H_

// Helpers shared by the nn op tests.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "loom/ops/nn.h"
#include "loom/ops/state.h"
#include "loom/runtime/gradient_checker.h"
#include "loom/runtime/session.h"

namespace loom::nn_test {

// Builds out = fn(scope, consts of `inputs`) and evaluates it.
inline Tensor EvalWith(const std::vector<Tensor>& inputs,
                       const std::function<Output(const Scope&, const std::vector<Output>&)>& fn,
                       int threads = 2) {
  Graph graph;
  Scope s(graph);
  std::vector<Output> xs;
  xs.reserve(inputs.size());
  for (const Tensor& t : inputs) xs.push_back(Const(s, t));
  Output y = fn(s, xs);
  Session session(graph, {.intra_op_threads = threads});
  return session.Eval(y);
}

// A float32 copy of a float64 tensor.
inline Tensor ToFloat(const Tensor& t) {
  Tensor out(kFloat32, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i)
    out.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  return out;
}

// The tensor as doubles, whatever its float dtype.
inline std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    v[i] = t.dtype() == kFloat32 ? t.data<float>()[i] : t.data<double>()[i];
  }
  return v;
}

inline void ExpectNear(const Tensor& actual, const std::vector<double>& expected, double tol,
                       const std::string& what = "") {
  ASSERT_EQ(actual.NumElements(), static_cast<int64_t>(expected.size())) << what;
  std::vector<double> v = Values(actual);
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_NEAR(v[i], expected[i], tol * std::max(1.0, std::abs(expected[i])))
        << what << " element " << i;
  }
}

// Moves every value at least `margin` away from zero, keeping its sign.
inline Tensor AwayFromZero(Tensor t, double margin) {
  for (double& v : t.flat<double>()) v += v >= 0 ? margin : -margin;
  return t;
}

// The InvalidArgument message thrown by fn, or "" (with a test failure) when none.
template <typename Fn>
std::string InvalidArgumentMessage(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "expected InvalidArgument";
  return "";
}

}  // namespace loom::nn_test

#endif  // LOOM_OPS_NN_TEST_UTIL_H_
