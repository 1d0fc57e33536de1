#include "loom/train/test_ops.h"

namespace loom::train::testing {
namespace {

// out = scale * (x - target) element-wise, scale = 2 * upstream gradient (a scalar).
const OpDef& SquaredErrorGradOp() {
  static const OpDef op = {
      .name = "TestSquaredErrorGrad",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(0)); },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            Tensor out = c.AllocateOutput(0, x.shape());
            SwitchFloat(x.dtype(), "TestSquaredErrorGrad", [&](auto tag) {
              using T = decltype(tag);
              const T scale = 2 * c.input(2).scalar<T>();
              for (int64_t i = 0; i < x.NumElements(); ++i) {
                out.data<T>()[i] = scale * (x.data<T>()[i] - c.input(1).data<T>()[i]);
              }
              return 0;
            });
            c.set_output(0, out);
          },
      .no_gradient = "test op",
  };
  return op;
}

const OpDef& SquaredErrorOp() {
  static const OpDef op = {
      .name = "TestSquaredError",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), Shape{}); },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            Tensor out = c.AllocateOutput(0, Shape{});
            SwitchFloat(x.dtype(), "TestSquaredError", [&](auto tag) {
              using T = decltype(tag);
              T sum = 0;
              for (int64_t i = 0; i < x.NumElements(); ++i) {
                const T d = x.data<T>()[i] - c.input(1).data<T>()[i];
                sum += d * d;
              }
              out.data<T>()[0] = sum;
              return 0;
            });
            c.set_output(0, out);
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        Output dx =
            g.scope().AddNode(SquaredErrorGradOp(), {g.input(0), g.input(1), g.grad(0)})->output(0);
        return {dx, GradOutput()};
      },
  };
  return op;
}

}  // namespace

Output SquaredError(const Scope& scope, Output x, Output target) {
  return scope.AddNode(SquaredErrorOp(), {x, target}, {}, "SquaredError")->output(0);
}

}  // namespace loom::train::testing
