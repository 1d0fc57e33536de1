#include "loom/ops/state.h"

#include "loom/graph/collections.h"
#include "loom/ops/attr_keys.h"

namespace loom {
namespace {

using op_attrs::kDType;
using op_attrs::kShape;
inline constexpr Attr<bool> kTrainable{"trainable"};
inline constexpr Attr<bool> kLocal{"local"};
inline constexpr Attr<bool> kValidateShape{"validate_shape"};

// Adds value into dst element-wise, sign = +1 or -1.
void AddInPlace(Tensor& dst, const Tensor& value, int sign) {
  SwitchNumeric(dst.dtype(), "AssignAdd", [&](auto tag) {
    using T = decltype(tag);
    T* d = dst.data<T>();
    const T* v = value.data<T>();
    const int64_t n = dst.NumElements();
    if (value.NumElements() == 1) {
      for (int64_t i = 0; i < n; ++i) d[i] += static_cast<T>(sign) * v[0];
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] += static_cast<T>(sign) * v[i];
    }
    return 0;
  });
}

const OpDef& PlaceholderOp() {
  static const OpDef op = {
      .name = "Placeholder",
      .num_inputs = 0,
      .role = OpRole::kPlaceholder,
      .attrs = {kDType.Required(), kShape.Default(Shape::Unknown())},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.attr(kDType), c.attr(kShape)); },
      .kernel =
          [](KernelContext& c) {
            throw InvalidArgument("you must feed a value for placeholder '", c.node().name(),
                                  "' with dtype ", DTypeName(c.node().output_dtype(0)),
                                  " and shape ", c.node().output_shape(0),
                                  ": pass it in Session::Run's feeds")
                .AtNode(c.node().name());
          },
      .no_gradient = "placeholders are inputs",
      .not_swept = "must be fed; fed placeholders carry every other sample",
  };
  return op;
}

const OpDef& PlaceholderWithDefaultOp() {
  static const OpDef op = {
      .name = "PlaceholderWithDefault",
      .num_inputs = 1,
      .attrs = {kShape.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& declared = c.attr(kShape);
            if (!declared.IsCompatibleWith(c.input_shape(0))) {
              c.Fail("default value shape ", c.input_shape(0),
                     " is incompatible with the declared shape ", declared);
            }
            c.set_output(0, c.input_dtype(0), declared);
          },
      .kernel = [](KernelContext& c) { c.set_output(0, c.input(0)); },
      .no_gradient = "placeholders are inputs",
      .sample =
          [] {
            return OpSample{{SampleDoubles({2})}, {kShape(Shape{-1})}};
          },
  };
  return op;
}

const OpDef& VariableOp() {
  static const OpDef op = {
      .name = "VariableV2",
      .num_inputs = 0,
      .stateful = true,
      .role = OpRole::kVariable,
      .attrs = {kDType.Required(), kShape.Required(), kTrainable.Default(true),
                kLocal.Default(false)},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.attr(kDType), c.attr(kShape)); },
      .kernel =
          [](KernelContext& c) {
            auto* var = c.resources().Lookup<VariableResource>(c.node().name());
            Tensor value = var != nullptr ? var->Read() : Tensor();
            if (!value.defined()) {
              throw FailedPrecondition(
                  "attempting to use uninitialized variable '", c.node().name(),
                  "': run GlobalVariablesInitializer() or restore a checkpoint first");
            }
            c.set_output(0, std::move(value));
          },
      .no_gradient = "variables are leaves; ask Gradients for d/d(variable) directly",
      .not_swept = "a variable needs an initializer run first (session_test covers it)",
  };
  return op;
}

void AssignShape(InferenceContext& c) {
  c.ExpectSameDType(0, 1);
  if (c.attr(kValidateShape) && !c.input_shape(0).IsCompatibleWith(c.input_shape(1))) {
    c.Fail("cannot assign a value of shape ", c.input_shape(1), " to variable '",
           c.input(0).node->name(), "' of shape ", c.input_shape(0));
  }
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
}

const OpDef& AssignOp() {
  static const OpDef op = {
      .name = "Assign",
      .num_inputs = 2,
      .ref_inputs = {0},
      .stateful = true,
      .attrs = {kValidateShape.Default(true)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = AssignShape,
      .kernel =
          [](KernelContext& c) {
            VariableResource& var = c.variable(0);
            const Tensor& value = c.input(1);
            const Shape& declared = c.node().input(0).shape();
            if (!value.shape().IsCompatibleWith(declared)) {
              c.Fail("cannot assign a value of shape ", value.shape(), " to variable '",
                     c.node().input(0).node->name(), "' of shape ", declared);
            }
            MutexLock lock(var.mu());
            // Take ownership of a fresh intermediate; copy anything someone else views.
            var.SetValue(value.BufferIsUnique() && value.buffer()->owned() ? value : value.Clone());
            c.set_output(0, var.value());
          },
      .no_gradient = "assignments are not differentiable",
      .not_swept = "needs a variable input (ref input); covered by state and saver tests",
  };
  return op;
}

// AssignAdd / AssignSub: the value has the variable's shape, or is a scalar added to
// every element (a Loom extension; TF1 requires the same shape).
void AssignUpdateShape(InferenceContext& c) {
  c.ExpectSameDType(0, 1);
  const Shape& value = c.input_shape(1);
  const bool scalar = value.rank_known() && value.rank() == 0;
  if (!scalar && !c.input_shape(0).IsCompatibleWith(value)) {
    c.Fail("cannot update variable '", c.input(0).node->name(), "' of shape ", c.input_shape(0),
           " with a value of shape ", value, ": use the variable's shape or a scalar");
  }
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
}

void AssignUpdateKernel(KernelContext& c, int sign) {
  VariableResource& var = c.variable(0);
  MutexLock lock(var.mu());
  CheckInitialized(c, var, 0);
  Tensor& dst = var.MutableValue();
  const Tensor& value = c.input(1);
  if (value.shape() != dst.shape() && value.NumElements() != 1) {
    c.Fail("update of shape ", value.shape(), " does not match variable shape ", dst.shape());
  }
  AddInPlace(dst, value, sign);
  c.set_output(0, dst);
}

const OpDef& AssignAddOp() {
  static const OpDef op = {
      .name = "AssignAdd",
      .num_inputs = 2,
      .ref_inputs = {0},
      .stateful = true,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = AssignUpdateShape,
      .kernel = [](KernelContext& c) { AssignUpdateKernel(c, +1); },
      .no_gradient = "assignments are not differentiable",
      .not_swept = "needs a variable input (ref input); session_test covers it",
  };
  return op;
}

const OpDef& AssignSubOp() {
  static const OpDef op = {
      .name = "AssignSub",
      .num_inputs = 2,
      .ref_inputs = {0},
      .stateful = true,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = AssignUpdateShape,
      .kernel = [](KernelContext& c) { AssignUpdateKernel(c, -1); },
      .no_gradient = "assignments are not differentiable",
      .not_swept = "needs a variable input (ref input); session_test covers it",
  };
  return op;
}

const OpDef& IdentityOp() {
  static const OpDef op = {
      .name = "Identity",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(0)); },
      .kernel = [](KernelContext& c) { c.set_output(0, c.input(0)); },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> { return {g.grad(0)}; },
  };
  return op;
}

const OpDef& StopGradientOp() {
  static const OpDef op = {
      .name = "StopGradient",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(0)); },
      .kernel = [](KernelContext& c) { c.set_output(0, c.input(0)); },
      // No gradient flows, by definition (not an error).
      .grad = [](const GradContext&) -> std::vector<GradOutput> { return {GradOutput()}; },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {}, /*check_gradient=*/false};
          },
  };
  return op;
}

const OpDef& NoOpOp() {
  static const OpDef op = {
      .name = "NoOp",
      .num_inputs = 0,
      .num_outputs = 0,
      .shape = [](InferenceContext&) {},
      .kernel = [](KernelContext&) {},
      .no_gradient = "NoOp has no outputs",
      .not_swept = "no inputs, no outputs",
  };
  return op;
}

// The initializers of the variables the graph's collection lists (each Variable adds
// itself), never a scan of the graph for marked Assign nodes.
Operation VariablesInitializer(const Scope& scope, bool local, std::string_view name) {
  std::vector<Operation> inits;
  const auto& key = local ? GraphKeys::kLocalVariables : GraphKeys::kGlobalVariables;
  for (const VariableRef& v : scope.graph().collections().Get(key)) {
    inits.push_back(v.initializer);
  }
  return Group(scope.WithOpName(name), inits);
}

}  // namespace

void CheckInitialized(const KernelContext& ctx, const VariableResource& var, int ref_input) {
  if (!var.initialized()) {
    throw FailedPrecondition("attempting to update uninitialized variable '",
                             ctx.node().input(ref_input).node->name(),
                             "': run GlobalVariablesInitializer() or restore a checkpoint first");
  }
}

Output Placeholder(const Scope& scope, DType dtype, const Shape& shape) {
  return scope.AddNode(PlaceholderOp(), {}, {kDType(dtype), kShape(shape)}, "Placeholder")
      ->output(0);
}

Output PlaceholderWithDefault(const Scope& scope, Input default_value, const Shape& shape) {
  Output d = AsOutput(scope, default_value);
  return scope.AddNode(PlaceholderWithDefaultOp(), {d}, {kShape(shape)}, "PlaceholderWithDefault")
      ->output(0);
}

Variable::Variable(const Scope& scope, Input initial_value, const VariableOptions& options) {
  // Variables, their initializers and an initial value given as a literal are built
  // outside every cond branch and control_dependencies block (TF's init_scope).
  Graph::ContextOverride outside(scope.graph(), nullptr);
  Output init = AsOutput(scope.WithNoControlDependencies(), initial_value);
  Shape shape = options.shape.rank_known() ? options.shape : init.shape();
  if (!shape.fully_defined()) {
    throw InvalidArgument("variable '", scope.FullName("Variable"),
                          "' needs a fully defined shape; its initial value has shape ",
                          init.shape(), ", so pass VariableOptions::shape");
  }
  if (init.node->context() != nullptr) {
    throw InvalidArgument("the initial value of variable '", scope.FullName("Variable"), "' (",
                          init.name(),
                          ") is built inside a cond branch; a variable lives outside every "
                          "branch: build its initial value outside tf.cond (layers and "
                          "get_variable do)");
  }
  Node* var = scope.WithNoControlDependencies().AddNode(
      VariableOp(), {},
      {kDType(init.dtype()), kShape(shape), kTrainable(options.trainable && !options.local),
       kLocal(options.local)},
      "Variable");
  node = var;
  index = 0;
  Graph& graph = scope.graph();
  initializer = graph.AddNode(AssignOp(), graph.UniqueName(var->name() + "/Assign"),
                              {Output(var, 0), init}, {{"_initializer", true}});
  graph.collections().Add(options.local ? GraphKeys::kLocalVariables : GraphKeys::kGlobalVariables,
                          VariableRef{Output(var, 0), initializer});
}

Output Assign(const Scope& scope, Output variable, Input value) {
  Output v = AsOutput(scope, value, variable.dtype());
  return scope.AddNode(AssignOp(), {variable, v}, {}, "Assign")->output(0);
}

Output AssignAdd(const Scope& scope, Output variable, Input value) {
  Output v = AsOutput(scope, value, variable.dtype());
  return scope.AddNode(AssignAddOp(), {variable, v}, {}, "AssignAdd")->output(0);
}

Output AssignSub(const Scope& scope, Output variable, Input value) {
  Output v = AsOutput(scope, value, variable.dtype());
  return scope.AddNode(AssignSubOp(), {variable, v}, {}, "AssignSub")->output(0);
}

Operation GlobalVariablesInitializer(const Scope& scope) {
  return VariablesInitializer(scope, /*local=*/false, "init");
}

Operation LocalVariablesInitializer(const Scope& scope) {
  return VariablesInitializer(scope, /*local=*/true, "init_local");
}

Output Identity(const Scope& scope, Input x) {
  return scope.AddNode(IdentityOp(), {AsOutput(scope, x)}, {}, "Identity")->output(0);
}

Output StopGradient(const Scope& scope, Input x) {
  return scope.AddNode(StopGradientOp(), {AsOutput(scope, x)}, {}, "StopGradient")->output(0);
}

Operation NoOp(const Scope& scope) { return scope.AddNode(NoOpOp(), {}, {}, "NoOp"); }

Operation Group(const Scope& scope, const std::vector<Operation>& deps) {
  return scope.WithControlDependencies(deps).AddNode(NoOpOp(), {}, {}, "group_deps");
}

void RegisterStateOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&PlaceholderOp(), &PlaceholderWithDefaultOp(), &VariableOp(), &AssignOp(), &AssignAddOp(),
        &AssignSubOp(), &IdentityOp(), &StopGradientOp(), &NoOpOp(), &ConstOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
