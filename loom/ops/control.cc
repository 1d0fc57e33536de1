#include "loom/ops/control.h"

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/state.h"

namespace loom {
namespace {

void SwitchShape(InferenceContext& c) {
  if (c.input_dtype(1) != kBool) {
    c.Fail("the predicate (input 1, ", c.input(1).name(), ") must be bool, got ",
           DTypeName(c.input_dtype(1)));
  }
  const Shape& pred = c.input_shape(1);
  if (pred.rank_known() && pred.rank() != 0) {
    c.Fail("the predicate ", c.input(1).name(), " must be a scalar, got shape ", pred,
           "; reduce it (reduce_all / reduce_any) or pick one element");
  }
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
  c.set_output(1, c.input_dtype(0), c.input_shape(0));
}

// TF's Switch output order: (output_false, output_true). Only the chosen output gets a
// value; the Session marks the other one dead.
const OpDef& SwitchOp() {
  static const OpDef op = {
      .name = "Switch",
      .num_inputs = 2,
      .role = OpRole::kSwitch,
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(0)},
      .shape = SwitchShape,
      .kernel =
          [](KernelContext& c) {
            const Tensor& pred = c.input(1);
            if (pred.NumElements() != 1) {
              c.Fail("the predicate must be a scalar, got shape ", pred.shape());
            }
            c.set_output(pred.data<bool>()[0] ? 1 : 0, c.input(0));
          },
      // d/d(data) = the gradient of whichever output was live: Merge(g_false, g_true), with
      // zeros like the output for a side no gradient reaches (a zeros tensor that is itself
      // dead unless that side was taken, so Merge sees exactly one live input).
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        if (!g.grad(0).valid() && !g.grad(1).valid()) return {GradOutput(), GradOutput()};
        Output g_false = g.grad(0).valid() ? g.grad(0) : ZerosLike(g.scope(), g.output(0));
        Output g_true = g.grad(1).valid() ? g.grad(1) : ZerosLike(g.scope(), g.output(1));
        return {Merge(g.scope(), {g_false, g_true}).output, GradOutput()};
      },
      .not_swept =
          "one output is always dead, so it cannot be fetched alone; control_test "
          "covers both outputs, the shapes and the gradient",
  };
  return op;
}

void MergeShape(InferenceContext& c) {
  if (c.num_inputs() == 0) c.Fail("needs at least one input");
  Shape shape = c.input_shape(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    c.ExpectSameDType(0, i);
    const Shape& other = c.input_shape(i);
    if (!shape.rank_known() || !other.rank_known() || shape.rank() != other.rank()) {
      shape = Shape::Unknown();
      break;
    }
    std::vector<int64_t> dims = shape.dims();
    for (int d = 0; d < shape.rank(); ++d) {
      if (dims[d] != other.dim(d)) dims[d] = kUnknownDim;
    }
    shape = Shape(std::move(dims));
  }
  c.set_output(0, c.input_dtype(0), shape);
  c.set_output(1, kInt32, Shape{});
}

// Forwards its first live input (an undefined input tensor is a dead one: the Session only
// runs a Merge with at least one live input).
const OpDef& MergeOp() {
  static const OpDef op = {
      .name = "Merge",
      .num_inputs = kVariadic,
      .role = OpRole::kMerge,
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::Fixed(kInt32)},
      .shape = MergeShape,
      .kernel =
          [](KernelContext& c) {
            for (int i = 0; i < c.num_inputs(); ++i) {
              if (!c.input(i).defined()) continue;
              c.set_output(0, c.input(i));
              c.set_output(1, Tensor::Scalar<int32_t>(i));
              return;
            }
            throw Internal(c.node().description(), " ran with every input dead");
          },
      // d/d(input i) = g where input i was the live one: Switch(g, value_index == i)'s true
      // output, dead in a run that took another input.
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        const int n = g.node().num_inputs();
        std::vector<GradOutput> grads(n);
        if (!g.grad(0).valid()) return grads;
        for (int i = 0; i < n; ++i) {
          Output taken = Equal(g.scope(), g.output(1), i);
          grads[i] = Switch(g.scope(), g.grad(0), taken).output_true;
        }
        return grads;
      },
      // Shapes and GraphDef round trip on two live inputs; the gradient of the input not
      // taken is dead, so control_test checks gradients inside a Cond.
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({2, 3}, 2)},
                            {},
                            /*check_gradient=*/false};
          },
  };
  return op;
}

inline constexpr Attr<int64_t> kSummarize{"summarize"};

const OpDef& AssertOp() {
  static const OpDef op = {
      .name = "Assert",
      .num_inputs = kVariadic,
      .stateful = true,
      .attrs = {kSummarize.Default(3)},
      .num_outputs = 0,
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() == 0) c.Fail("needs a condition (input 0)");
            c.ExpectDType(0, {kBool});
            c.ExpectRank(0, 0);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& condition = c.input(0);
            if (condition.NumElements() != 1) {
              c.Fail("the condition must be a bool scalar, got shape ", condition.shape());
            }
            if (condition.data<bool>()[0]) return;
            std::vector<std::string> data;
            for (int i = 1; i < c.num_inputs(); ++i) {
              data.push_back(c.input(i).DebugString(static_cast<int>(c.attr(kSummarize))));
            }
            c.Fail("assertion failed: ", StrJoin(data, ", "));
          },
      .no_gradient = "an assertion has no outputs",
      .not_swept = "no outputs; control_test runs it true and false",
  };
  return op;
}

// One branch of a Cond while it is built: external tensors go through a Switch on the
// predicate (built in the context around this one, once per tensor), and ops without a
// data input get the pivot as a control input so they are dead when the other branch runs.
class CondContext : public BuildContext {
 public:
  CondContext(const Scope& scope, Output pred, Output pivot, int branch)
      : scope_(scope.WithNoControlDependencies()), pred_(pred), pivot_(pivot), branch_(branch) {
    own_.insert(pivot.node);
  }

  void AdaptNode(Graph& graph, const OpDef& op, const std::string& name,
                 std::vector<Output>& inputs, std::vector<Node*>& control_inputs) override {
    if (op.role == OpRole::kVariable) {
      throw InvalidArgument("variable '", name, "' is built inside a cond branch (",
                            pivot_.node->name(),
                            "); build variables outside tf.cond (Variable and get_variable "
                            "lift themselves out)");
    }
    bool has_data_input = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (IsRefInput(op, static_cast<int>(i))) continue;
      inputs[i] = Capture(graph, inputs[i]);
      has_data_input = true;
    }
    if (!has_data_input) control_inputs.push_back(pivot_.node);
  }

  // `value` as seen inside this branch: itself when built here, else this branch's Switch
  // output for it.
  Output Capture(Graph& graph, const Output& value) {
    if (own_.count(value.node) || Contains(value.node)) return value;
    auto it = switched_.find({value.node, value.index});
    if (it != switched_.end()) return it->second;
    Output taken;
    {
      Graph::ContextOverride around(graph, outer());
      SwitchOutputs s = Switch(scope_.WithOpName("Switch"), value, pred_);
      taken = branch_ == 1 ? s.output_true : s.output_false;
    }
    own_.insert(taken.node);
    switched_[{value.node, value.index}] = taken;
    return taken;
  }

 private:
  static bool IsRefInput(const OpDef& op, int i) {
    for (int r : op.ref_inputs)
      if (r == i) return true;
    return false;
  }

  Scope scope_;
  Output pred_;
  Output pivot_;
  int branch_;
  std::set<const Node*> own_;  // the pivot and the Switches: in the branch, built outside it
  std::map<std::pair<const Node*, int>, Output> switched_;
};

std::vector<Output> BuildBranch(const Scope& cond, Output pred, Output pivot, int branch,
                                const BranchFn& fn) {
  Graph& graph = cond.graph();
  auto* context = static_cast<CondContext*>(
      graph.PushContext(std::make_unique<CondContext>(cond, pred, pivot, branch)));
  struct Pop {
    Graph& graph;
    const BuildContext* context;
    ~Pop() { graph.PopContext(context); }
  } pop{graph, context};
  std::vector<Output> results = fn(cond);
  for (Output& r : results) {
    if (!r.valid()) {
      throw InvalidArgument("tf.cond '", cond.prefix(), "': the ", branch ? "true" : "false",
                            " branch returned an empty Output");
    }
    r = context->Capture(graph, r);
  }
  return results;
}

}  // namespace

SwitchOutputs Switch(const Scope& scope, Input data, Output pred) {
  Node* node = scope.AddNode(SwitchOp(), {AsOutput(scope, data), pred}, {}, "Switch");
  return {node->output(0), node->output(1)};
}

MergeOutputs Merge(const Scope& scope, const std::vector<Output>& inputs) {
  LOOM_CHECK(!inputs.empty()) << "Merge of no inputs";
  Node* node = scope.AddNode(MergeOp(), inputs, {}, "Merge");
  return {node->output(0), node->output(1)};
}

bool InCondBranch(const Graph& graph) {
  return dynamic_cast<const CondContext*>(graph.context()) != nullptr;
}

std::vector<Output> Cond(const Scope& scope, Output pred, const BranchFn& true_fn,
                         const BranchFn& false_fn, std::string_view name) {
  if (!pred.valid()) throw InvalidArgument("tf.cond: the predicate is an empty Output");
  if (pred.dtype() != kBool || (pred.shape().rank_known() && pred.shape().rank() != 0)) {
    throw InvalidArgument("tf.cond: the predicate ", pred.name(), " must be a bool scalar, got ",
                          DTypeName(pred.dtype()), " ", pred.shape());
  }
  Scope cond = scope.NewSubScope(name);
  // TF's names: Switch(pred, pred) and the pivots switch_t / switch_f.
  SwitchOutputs p = Switch(cond.WithOpName("Switch"), pred, pred);
  Output pivot_t = Identity(cond.WithOpName("switch_t"), p.output_true);
  Output pivot_f = Identity(cond.WithOpName("switch_f"), p.output_false);
  std::vector<Output> on_true = BuildBranch(cond, pred, pivot_t, 1, true_fn);
  std::vector<Output> on_false = BuildBranch(cond, pred, pivot_f, 0, false_fn);
  if (on_true.size() != on_false.size()) {
    throw InvalidArgument("tf.cond '", cond.prefix(), "': the true branch returned ",
                          on_true.size(), " results and the false branch ", on_false.size(),
                          "; both must return the same structure");
  }
  std::vector<Output> results;
  for (size_t i = 0; i < on_true.size(); ++i) {
    if (on_true[i].dtype() != on_false[i].dtype()) {
      throw InvalidArgument("tf.cond '", cond.prefix(), "': result ", i, " is ",
                            DTypeName(on_true[i].dtype()), " in the true branch (",
                            on_true[i].name(), ") and ", DTypeName(on_false[i].dtype()),
                            " in the false branch (", on_false[i].name(), ")");
    }
    // TF's input order: the false branch's value first.
    results.push_back(Merge(cond.WithOpName("Merge"), {on_false[i], on_true[i]}).output);
  }
  return results;
}

Operation Assert(const Scope& scope, Output condition, const std::vector<Output>& data,
                 int64_t summarize) {
  std::vector<Output> inputs = {condition};
  inputs.insert(inputs.end(), data.begin(), data.end());
  return scope.AddNode(AssertOp(), std::move(inputs), {kSummarize(summarize)}, "Assert");
}

void RegisterControlOps(OpRegistry& registry) {
  for (const OpDef* op : {&SwitchOp(), &MergeOp(), &AssertOp()}) registry.Register(*op);
}

}  // namespace loom
