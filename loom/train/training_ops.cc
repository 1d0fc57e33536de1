#include "loom/train/training_ops.h"

#include <cmath>

#include "loom/train/learning_rate.h"
#include "loom/train/training_kernels.h"
#include "loom/train/training_updates.h"

namespace loom::train {
namespace {

inline constexpr Attr<DType> kDType{"dtype"};
inline constexpr Attr<Shape> kShape{"shape"};
inline constexpr Attr<double> kValue{"value"};

using namespace internal;  // the drivers and update rules

// Shape rule shared by the Apply ops: refs of one float dtype and shape, scalar
// hyperparameters, then the dense or sparse gradient. No outputs.
ShapeFn ApplyShape(int num_refs, std::vector<std::string> scalars, bool sparse) {
  return [num_refs, scalars = std::move(scalars), sparse](InferenceContext& c) {
    c.ExpectDType(0, {kFloat32, kFloat64});
    const Shape& var_shape = c.input_shape(0);
    const std::string& var_name = c.input(0).node->name();
    for (int i = 1; i < num_refs; ++i) {
      c.ExpectSameDType(0, i);
      if (!c.input_shape(i).IsCompatibleWith(var_shape)) {
        c.Fail("slot '", c.input(i).node->name(), "' has shape ", c.input_shape(i),
               " but variable '", var_name, "' has shape ", var_shape);
      }
    }
    for (size_t k = 0; k < scalars.size(); ++k) {
      const int i = num_refs + static_cast<int>(k);
      c.ExpectDType(i, {kFloat32, kFloat64});
      const Shape& s = c.input_shape(i);
      if (s.rank_known() && s.rank() != 0) {
        c.Fail(scalars[k], " must be a scalar, got ", c.input(i).name(), " of shape ", s);
      }
    }
    const int g = num_refs + static_cast<int>(scalars.size());
    c.ExpectSameDType(0, g);
    if (!sparse) {
      if (!c.input_shape(g).IsCompatibleWith(var_shape)) {
        c.Fail("gradient ", c.input(g).name(), " has shape ", c.input_shape(g), " but variable '",
               var_name, "' has shape ", var_shape);
      }
      return;
    }
    c.ExpectDType(g + 1, {kInt32, kInt64});
    c.ExpectRank(g + 1, 1);
    if (var_shape.rank_known() && var_shape.rank() == 0) {
      c.Fail("variable '", var_name, "' is a scalar; sparse updates need rows");
    }
    const Shape& values = c.input_shape(g);
    if (values.rank_known() && var_shape.rank_known()) {
      bool ok = values.rank() == var_shape.rank();
      for (int d = 1; ok && d < values.rank(); ++d) {
        ok = values.dim(d) == kUnknownDim || var_shape.dim(d) == kUnknownDim ||
             values.dim(d) == var_shape.dim(d);
      }
      if (!ok) {
        c.Fail("sparse gradient rows ", c.input(g).name(), " of shape ", values,
               " do not match the rows of variable '", var_name, "' of shape ", var_shape);
      }
    }
  };
}

OpDef MakeApplyOp(std::string name, int num_refs, std::vector<std::string> scalars, bool sparse,
                  std::vector<AttrDef> attrs, KernelFn kernel) {
  OpDef op;
  op.name = std::move(name);
  op.num_inputs = num_refs + static_cast<int>(scalars.size()) + (sparse ? 2 : 1);
  for (int i = 0; i < num_refs; ++i) op.ref_inputs.push_back(i);
  op.stateful = true;
  op.attrs = std::move(attrs);
  op.num_outputs = 0;
  op.shape = ApplyShape(num_refs, std::move(scalars), sparse);
  op.kernel = std::move(kernel);
  op.no_gradient = "variable updates are not differentiable";
  op.not_swept =
      "an optimizer update: its ref inputs need initialized variables "
      "(optimizer_test covers every Apply op, dense and sparse)";
  return op;
}

// The dense and sparse op of one update rule.
struct ApplyOps {
  OpDef dense;
  OpDef sparse;
};

template <template <typename> class Update>
ApplyOps MakeApplyOps(const std::string& name, const std::vector<std::string>& scalars,
                      const std::vector<AttrDef>& attrs = {}) {
  constexpr int kRefs = Update<float>::kNumRefs;
  return {
      MakeApplyOp("Apply" + name, kRefs, scalars, false, attrs, DenseApplyKernel<Update>),
      MakeApplyOp("SparseApply" + name, kRefs, scalars, true, attrs, SparseApplyKernel<Update>)};
}

const ApplyOps& GradientDescentOps() {
  static const ApplyOps ops = MakeApplyOps<GradientDescentUpdate>("GradientDescent", {"lr"});
  return ops;
}
const ApplyOps& MomentumOps() {
  static const ApplyOps ops =
      MakeApplyOps<MomentumUpdate>("Momentum", {"lr", "momentum"}, {kUseNesterov.Default(false)});
  return ops;
}
const ApplyOps& AdamOps() {
  static const ApplyOps ops = MakeApplyOps<AdamUpdate>(
      "Adam", {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"});
  return ops;
}
const ApplyOps& AdagradOps() {
  static const ApplyOps ops = MakeApplyOps<AdagradUpdate>("Adagrad", {"lr"});
  return ops;
}
const ApplyOps& RMSPropOps() {
  static const ApplyOps ops =
      MakeApplyOps<RMSPropUpdate>("RMSProp", {"lr", "rho", "momentum", "epsilon"});
  return ops;
}
const ApplyOps& CenteredRMSPropOps() {
  static const ApplyOps ops =
      MakeApplyOps<CenteredRMSPropUpdate>("CenteredRMSProp", {"lr", "rho", "momentum", "epsilon"});
  return ops;
}
const ApplyOps& FtrlOps() {
  static const ApplyOps ops = MakeApplyOps<FtrlUpdate>("Ftrl", {"lr", "l1", "l2", "lr_power"});
  return ops;
}

const OpDef& ScaleVariableOp() {
  static const OpDef op = {
      .name = "ScaleVariable",
      .num_inputs = 2,
      .ref_inputs = {0},
      .stateful = true,
      .num_outputs = 0,
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectDType(1, {kFloat32, kFloat64});
            c.ExpectRank(1, 0);
          },
      .kernel =
          [](KernelContext& c) {
            internal::LockedRefs refs(c, 1);
            Tensor& var = refs.value(0);
            const double factor = ScalarInput(c, 1);
            SwitchFloat(var.dtype(), "ScaleVariable", [&](auto tag) {
              using T = decltype(tag);
              T* v = var.data<T>();
              for (int64_t i = 0; i < var.NumElements(); ++i) v[i] *= T(factor);
              return 0;
            });
          },
      .no_gradient = "variable updates are not differentiable",
      .not_swept =
          "needs a variable input (ref input); optimizer_test covers it (Adam's beta powers)",
  };
  return op;
}

const OpDef& ConstantFillOp() {
  static const OpDef op = {
      .name = "ConstantFill",
      .num_inputs = 0,
      .attrs = {kDType.Required(), kShape.Required(), kValue.Required()},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.attr(kDType), c.attr(kShape)); },
      .kernel =
          [](KernelContext& c) {
            Tensor out = c.AllocateOutput(0, c.node().output_shape(0));
            const double value = c.attr(kValue);
            SwitchNumeric(out.dtype(), "ConstantFill", [&](auto tag) {
              using T = decltype(tag);
              T* o = out.data<T>();
              const T v = static_cast<T>(value);
              c.pool().ParallelFor(out.NumElements(), internal::kMinParallelChunk,
                                   [&](int64_t b, int64_t e) { std::fill(o + b, o + e, v); });
              return 0;
            });
            c.set_output(0, out);
          },
      .no_gradient = "ConstantFill has no inputs",
      .sample =
          [] {
            return OpSample{{}, {kDType(kFloat32), kShape(Shape{2}), kValue(3.0)}};
          },
  };
  return op;
}

// Builds an Apply op: literal scalars take the variable's dtype.
Operation AddApply(const Scope& scope, const OpDef& op, std::vector<Output> refs,
                   const std::vector<Input>& scalars, const std::vector<Output>& grad,
                   AttrMap attrs = {}) {
  std::vector<Output> inputs = std::move(refs);
  const DType dtype = inputs[0].dtype();
  for (const Input& s : scalars) inputs.push_back(AsOutput(scope, s, dtype));
  for (const Output& g : grad) inputs.push_back(g);
  return scope.AddNode(op, std::move(inputs), std::move(attrs), op.name);
}

}  // namespace

Operation ApplyGradientDescent(const Scope& scope, Output var, Input lr, Output grad) {
  return AddApply(scope, GradientDescentOps().dense, {var}, {lr}, {grad});
}
Operation SparseApplyGradientDescent(const Scope& scope, Output var, Input lr, Output values,
                                     Output indices) {
  return AddApply(scope, GradientDescentOps().sparse, {var}, {lr}, {values, indices});
}

Operation ApplyMomentum(const Scope& scope, Output var, Output accum, Input lr, Input momentum,
                        Output grad, bool use_nesterov) {
  return AddApply(scope, MomentumOps().dense, {var, accum}, {lr, momentum}, {grad},
                  {kUseNesterov(use_nesterov)});
}
Operation SparseApplyMomentum(const Scope& scope, Output var, Output accum, Input lr,
                              Input momentum, Output values, Output indices, bool use_nesterov) {
  return AddApply(scope, MomentumOps().sparse, {var, accum}, {lr, momentum}, {values, indices},
                  {kUseNesterov(use_nesterov)});
}

Operation ApplyAdam(const Scope& scope, Output var, Output m, Output v, Input beta1_power,
                    Input beta2_power, Input lr, Input beta1, Input beta2, Input epsilon,
                    Output grad) {
  return AddApply(scope, AdamOps().dense, {var, m, v},
                  {beta1_power, beta2_power, lr, beta1, beta2, epsilon}, {grad});
}
Operation SparseApplyAdam(const Scope& scope, Output var, Output m, Output v, Input beta1_power,
                          Input beta2_power, Input lr, Input beta1, Input beta2, Input epsilon,
                          Output values, Output indices) {
  return AddApply(scope, AdamOps().sparse, {var, m, v},
                  {beta1_power, beta2_power, lr, beta1, beta2, epsilon}, {values, indices});
}

Operation ApplyAdagrad(const Scope& scope, Output var, Output accum, Input lr, Output grad) {
  return AddApply(scope, AdagradOps().dense, {var, accum}, {lr}, {grad});
}
Operation SparseApplyAdagrad(const Scope& scope, Output var, Output accum, Input lr, Output values,
                             Output indices) {
  return AddApply(scope, AdagradOps().sparse, {var, accum}, {lr}, {values, indices});
}

Operation ApplyRMSProp(const Scope& scope, Output var, Output ms, Output mom, Input lr, Input rho,
                       Input momentum, Input epsilon, Output grad) {
  return AddApply(scope, RMSPropOps().dense, {var, ms, mom}, {lr, rho, momentum, epsilon}, {grad});
}
Operation SparseApplyRMSProp(const Scope& scope, Output var, Output ms, Output mom, Input lr,
                             Input rho, Input momentum, Input epsilon, Output values,
                             Output indices) {
  return AddApply(scope, RMSPropOps().sparse, {var, ms, mom}, {lr, rho, momentum, epsilon},
                  {values, indices});
}
Operation ApplyCenteredRMSProp(const Scope& scope, Output var, Output mg, Output ms, Output mom,
                               Input lr, Input rho, Input momentum, Input epsilon, Output grad) {
  return AddApply(scope, CenteredRMSPropOps().dense, {var, mg, ms, mom},
                  {lr, rho, momentum, epsilon}, {grad});
}
Operation SparseApplyCenteredRMSProp(const Scope& scope, Output var, Output mg, Output ms,
                                     Output mom, Input lr, Input rho, Input momentum, Input epsilon,
                                     Output values, Output indices) {
  return AddApply(scope, CenteredRMSPropOps().sparse, {var, mg, ms, mom},
                  {lr, rho, momentum, epsilon}, {values, indices});
}

Operation ApplyFtrl(const Scope& scope, Output var, Output accum, Output linear, Input lr, Input l1,
                    Input l2, Input lr_power, Output grad) {
  return AddApply(scope, FtrlOps().dense, {var, accum, linear}, {lr, l1, l2, lr_power}, {grad});
}
Operation SparseApplyFtrl(const Scope& scope, Output var, Output accum, Output linear, Input lr,
                          Input l1, Input l2, Input lr_power, Output values, Output indices) {
  return AddApply(scope, FtrlOps().sparse, {var, accum, linear}, {lr, l1, l2, lr_power},
                  {values, indices});
}

Operation ScaleVariable(const Scope& scope, Output var, Input factor) {
  return scope.AddNode(ScaleVariableOp(), {var, AsOutput(scope, factor, var.dtype())}, {},
                       "ScaleVariable");
}

Output ConstantFill(const Scope& scope, DType dtype, const Shape& shape, double value) {
  if (!shape.fully_defined()) {
    throw InvalidArgument("ConstantFill '", scope.FullName("ConstantFill"),
                          "' needs a fully defined shape, got ", shape);
  }
  return scope
      .AddNode(ConstantFillOp(), {}, {kDType(dtype), kShape(shape), kValue(value)}, "ConstantFill")
      ->output(0);
}

void RegisterTrainOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&GradientDescentOps().dense, &GradientDescentOps().sparse, &MomentumOps().dense,
        &MomentumOps().sparse, &AdamOps().dense, &AdamOps().sparse, &AdagradOps().dense,
        &AdagradOps().sparse, &RMSPropOps().dense, &RMSPropOps().sparse,
        &CenteredRMSPropOps().dense, &CenteredRMSPropOps().sparse, &FtrlOps().dense,
        &FtrlOps().sparse, &ScaleVariableOp(), &ConstantFillOp()}) {
    registry.Register(*op);
  }
  RegisterLearningRateOps(registry);
}

}  // namespace loom::train
