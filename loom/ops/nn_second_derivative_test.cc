// Second derivatives through Conv2D and BiasAdd: the gradient rules of Conv2DBackpropInput,
// Conv2DBackpropFilter and BiasAddGrad, checked by differentiating a gradient (a gradient
// penalty, as WGAN-GP's) against the numeric gradient checker in float64.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/autodiff/gradients.h"
#include "loom/base/strcat.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/reduce.h"
#include "loom/runtime/gradient_checker.h"

namespace loom {
namespace {

struct Case {
  int64_t n, h, w, c, kh, kw, o, stride;
  const char* padding;
};

std::string Describe(const Case& c) {
  return StrCat("in [", c.n, ",", c.h, ",", c.w, ",", c.c, "] filter [", c.kh, ",", c.kw, ",", c.c,
                ",", c.o, "] stride ", c.stride, " ", c.padding);
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {1, 4, 5, 2, 3, 3, 2, 1, "SAME"},
      {2, 5, 4, 2, 2, 3, 3, 2, "SAME"},
      {1, 6, 5, 3, 3, 2, 2, 2, "VALID"},
  };
  return cases;
}

// The penalty's parts: the gradients of sum(tanh(conv(x, w) + b)^2) with respect to x, w and
// b, each a nonlinear function of x, w and b whose own gradient runs through the rules.
std::vector<Output> InnerGradients(const Case& c, const Scope& s, const std::vector<Output>& in) {
  Output y = Tanh(s, BiasAdd(s, Conv2D(s, in[0], in[1], {c.stride, c.stride}, c.padding), in[2]));
  return Gradients(s, {Sum(s, Square(s, y))}, {in[0], in[1], in[2]});
}

TEST(NnSecondDerivativeTest, GradientOfEachConvGradientPassesTheChecker) {
  uint64_t seed = 300;
  for (const Case& c : Cases()) {
    const std::vector<Tensor> values = {RandomDoubles({c.n, c.h, c.w, c.c}, ++seed),
                                        RandomDoubles({c.kh, c.kw, c.c, c.o}, ++seed),
                                        RandomDoubles({c.o}, ++seed)};
    const char* const names[] = {"d/dx", "d/dfilter", "d/dbias"};
    for (int part = 0; part < 3; ++part) {
      const double err = MaxGradientError(
          [&](const Scope& s, const std::vector<Output>& in) {
            return Square(s, InnerGradients(c, s, in)[part]);
          },
          values);
      EXPECT_LT(err, 1e-6) << Describe(c) << ": the gradient of " << names[part];
    }
  }
}

// A penalty on the input gradient's norm (WGAN-GP) through Conv2D -> BiasAdd -> Relu, the
// chain the plan-time fusion pass runs as one kernel in the forward pass.
TEST(NnSecondDerivativeTest, InputGradientPenaltyThroughConvBiasRelu) {
  const Case c = {2, 5, 5, 3, 3, 3, 3, 1, "SAME"};  // c == o: the filter is used twice
  const std::vector<Tensor> values = {RandomDoubles({c.n, c.h, c.w, c.c}, 11, 0.1, 1.0),
                                      RandomDoubles({c.kh, c.kw, c.c, c.o}, 12),
                                      RandomDoubles({c.o}, 13)};
  const double err = MaxGradientError(
      [&](const Scope& s, const std::vector<Output>& in) {
        Output h = Relu(s, BiasAdd(s, Conv2D(s, in[0], in[1], {1, 1}, c.padding), in[2]));
        Output out = Conv2D(s, Tanh(s, h), in[1], {1, 1}, c.padding);
        Output gx = Gradients(s, {Sum(s, Square(s, out))}, {in[0]})[0];
        return Sum(s, Square(s, gx));
      },
      values);
  EXPECT_LT(err, 1e-5);
}

// Each activation's gradient op differentiated again: d/dx of (d/dx sum(f(x)^2))^2, in x
// ranges that cross every kink (none lies within the checker's step of a sample).
TEST(NnSecondDerivativeTest, ActivationGradientsAreDifferentiable) {
  using Activation = std::function<Output(const Scope&, Output)>;
  const std::vector<std::pair<const char*, Activation>> activations = {
      {"Relu", [](const Scope& s, Output x) { return Relu(s, x); }},
      {"Relu6", [](const Scope& s, Output x) { return Relu6(s, x); }},
      {"Elu", [](const Scope& s, Output x) { return Elu(s, x); }},
      {"LeakyRelu", [](const Scope& s, Output x) { return LeakyRelu(s, x, 0.3); }},
      {"Sigmoid", [](const Scope& s, Output x) { return Sigmoid(s, x); }},
      {"Tanh", [](const Scope& s, Output x) { return Tanh(s, x); }},
      {"Softplus", [](const Scope& s, Output x) { return Softplus(s, x); }},
  };
  for (const auto& [name, f] : activations) {
    const Tensor x = RandomDoubles({3, 7}, 21, -8.0, 8.0);
    const double err = MaxGradientError(
        [&f = f](const Scope& s, const std::vector<Output>& in) {
          Output gx = Gradients(s, {Sum(s, Square(s, f(s, in[0])))}, {in[0]})[0];
          return Square(s, gx);
        },
        {x});
    EXPECT_LT(err, 1e-6) << name;
  }
}

}  // namespace
}  // namespace loom
