#include "loom/runtime/while_loop.h"

#include <algorithm>
#include <set>

#include "loom/autodiff/gradients.h"
#include "loom/ops/grad_support.h"
#include "loom/runtime/while_internal.h"

namespace loom {

using namespace while_internal;  // NOLINT(google-build-using-namespace): this file's keys

namespace {

constexpr char kNotSwept[] =
    "needs a loop region built by WhileBuilder; runtime/while_loop_test.cc covers it (forward, "
    "errors, gradients against the numeric checker, GraphDef round trip)";

// What a region [first_id, end_id) reads from outside: the values (outside outputs and
// every variable, in first-use order) and the control inputs to outside nodes.
struct RegionInputs {
  std::vector<Output> captures;
  std::vector<Operation> control;
};

RegionInputs FindRegionInputs(const Graph& graph, int first_id, int end_id,
                              const std::vector<Output>& results,
                              const std::function<bool(const Node*)>& inside_elsewhere) {
  RegionInputs r;
  std::set<std::pair<int, int>> seen;
  std::set<int> seen_control;
  auto inside = [&](const Node* n) { return n->id() >= first_id && n->id() < end_id; };
  auto read = [&](const Output& out) {
    if ((inside(out.node) && !IsVariable(out.node)) || inside_elsewhere(out.node)) return;
    if (seen.insert({out.node->id(), out.index}).second) r.captures.push_back(out);
  };
  for (int id = first_id; id < end_id; ++id) {
    const Node* node = graph.node(id);
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (!IsRefInput(node, i)) read(node->input(i));
    }
    for (Node* c : node->control_inputs()) {
      if (!inside(c) && seen_control.insert(c->id()).second) r.control.push_back(Operation(c));
    }
  }
  for (const Output& out : results) read(out);
  return r;
}

std::vector<GradOutput> WhileGradRule(const GradContext& ctx);

}  // namespace

const OpDef& LoopVarOp() {
  static const OpDef op = {
      .name = "LoopVar",
      .num_inputs = 0,
      .role = OpRole::kPlaceholder,
      .attrs = {kDType.Required(), kShape.Required(), kIndex.Required()},
      .output_dtypes = {DTypeRule::FromAttr(kDType)},
      .shape = [](InferenceContext& c) { c.set_output_shape(0, c.attr(kShape)); },
      .kernel =
          [](KernelContext& c) {
            const std::string& name = c.node().name();
            const size_t slash = name.rfind('/');
            throw InvalidArgument(
                c.node().description(), " is loop variable ", c.attr(kIndex),
                " of the while loop '", slash == std::string::npos ? name : name.substr(0, slash),
                "' and has a value only inside the loop; fetch the loop's outputs (the While "
                "node's) or a value computed outside the loop")
                .AtNode(name);
          },
      .no_gradient =
          "a loop variable is a source inside its loop; the While's gradient "
          "differentiates to it",
      .not_swept = kNotSwept,
  };
  return op;
}

const OpDef& WhileOp() {
  static const OpDef op = {
      .name = "While",
      .num_inputs = kVariadic,
      .stateful = true,  // the body may hold stateful ops
      .attrs = {kLoopVars.Required(), kCond.Required(), kBody.Required(),
                kShapeInvariants.Required(), kMaximumIterations.Default(-1),
                kParallelIterations.Default(10), kBackProp.Default(true)},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::SameAsEachInput()},
      .shape =
          [](InferenceContext& c) {
            const auto& vars = c.attr(kLoopVars);
            const auto& shapes = c.attr(kShapeInvariants);
            if (vars.empty()) c.Fail("a while loop needs at least one loop variable");
            if (shapes.size() != vars.size() || c.attr(kBody).size() != vars.size()) {
              c.Fail(vars.size(), " loop variables, but ", shapes.size(), " shape invariants and ",
                     c.attr(kBody).size(), " body outputs");
            }
            if (c.num_inputs() < static_cast<int>(vars.size())) {
              c.Fail(c.num_inputs(), " inputs for ", vars.size(), " loop variables");
            }
            for (size_t i = 0; i < vars.size(); ++i) c.set_output(i, c.input_dtype(i), shapes[i]);
          },
      .kernel = WhileKernel,
      .grad = WhileGradRule,
      .not_swept = kNotSwept,
  };
  return op;
}

const OpDef& WhileGradOp() {
  static const OpDef op = {
      .name = "WhileGrad",
      .num_inputs = kVariadic,
      .stateful = true,  // reads the forward loop's record of this step
      .attrs = {kForward.Required(), kGradVars.Required(), kFloatVars.Required(),
                kFloatCaptures.Required(), kVarGrads.Required(), kCaptureGrads.Required(),
                kCaptureGradIndices.Default(std::vector<std::string>{}), kOutputTypes.Required(),
                kOutputShapes.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::FromAttrList(kOutputTypes)},
      .shape =
          [](InferenceContext& c) {
            const auto& types = c.attr(kOutputTypes);
            const auto& shapes = c.attr(kOutputShapes);
            if (types.size() != shapes.size()) c.Fail("output_types and output_shapes differ");
            for (size_t i = 0; i < types.size(); ++i) c.set_output(i, types[i], shapes[i]);
          },
      .kernel = WhileGradKernel,
      .no_gradient = "second-order gradients through a while loop are not supported",
      .not_swept = kNotSwept,
  };
  return op;
}

void RegisterWhileOps(OpRegistry& registry) {
  registry.Register(LoopVarOp());
  registry.Register(WhileOp());
  registry.Register(WhileGradOp());
}

WhileBuilder::WhileBuilder(const Scope& scope, const std::vector<Output>& initial_values,
                           WhileOptions options)
    : scope_(scope.NewSubScope(options.name.empty() ? "while" : options.name)),
      options_(std::move(options)),
      initial_values_(initial_values) {
  if (initial_values.empty()) {
    throw InvalidArgument("while loop '", scope_.prefix(), "': needs at least one loop variable");
  }
  if (options_.shape_invariants.size() > initial_values.size()) {
    throw InvalidArgument("while loop '", scope_.prefix(), "': ", options_.shape_invariants.size(),
                          " shape invariants for ", initial_values.size(), " loop variables");
  }
  options_.shape_invariants.resize(initial_values.size());
  first_node_id_ = scope_.graph().num_nodes();
  for (size_t i = 0; i < initial_values.size(); ++i) {
    const Output& init = initial_values[i];
    if (!init.valid()) {
      throw InvalidArgument("while loop '", scope_.prefix(), "': loop variable ", i, " is empty");
    }
    std::optional<Shape>& invariant = options_.shape_invariants[i];
    if (!invariant) invariant = init.shape();
    if (!invariant->IsCompatibleWith(init.shape())) {
      throw InvalidArgument("while loop '", scope_.prefix(), "': loop variable ", i,
                            " has initial shape ", init.shape(), ", which its shape invariant ",
                            *invariant, " does not allow");
    }
    const int64_t index = static_cast<int64_t>(i);
    Node* var = scope_.WithNoControlDependencies().AddNode(
        LoopVarOp(), {}, {kDType(init.dtype()), kShape(*invariant), kIndex(index)}, "loop_var");
    loop_vars_.push_back(var->output(0));
  }
}

std::vector<Output> WhileBuilder::Finish(Output cond, const std::vector<Output>& body_outputs) {
  LOOM_CHECK(!finished_) << "WhileBuilder::Finish called twice";
  finished_ = true;
  const std::string& loop = scope_.prefix();
  if (!cond.valid() || cond.dtype() != kBool ||
      (cond.shape().rank_known() && cond.shape().rank() != 0)) {
    throw InvalidArgument("while loop '", loop, "': the condition must be a scalar bool, got ",
                          cond.valid() ? StrCat(DTypeName(cond.dtype()), cond.shape().ToString())
                                       : std::string("no value"));
  }
  if (body_outputs.size() != loop_vars_.size()) {
    throw InvalidArgument("while loop '", loop, "': the body returned ", body_outputs.size(),
                          " values for ", loop_vars_.size(), " loop variables");
  }
  for (size_t i = 0; i < body_outputs.size(); ++i) {
    const Output& out = body_outputs[i];
    if (!out.valid() || out.dtype() != loop_vars_[i].dtype()) {
      throw InvalidArgument("while loop '", loop, "': the body's value for loop variable ", i,
                            " is ", out.valid() ? DTypeName(out.dtype()) : "empty",
                            ", but the loop variable is ", DTypeName(loop_vars_[i].dtype()));
    }
    if (!out.shape().IsCompatibleWith(*options_.shape_invariants[i])) {
      throw InvalidArgument("while loop '", loop, "': loop variable ", i, " ('",
                            loop_vars_[i].node->name(), "') has shape ",
                            *options_.shape_invariants[i], " entering the loop but shape ",
                            out.shape(), " after one iteration; declare the dimensions that ",
                            "change as unknown in shape_invariants");
    }
  }
  Graph& graph = scope_.graph();
  const int end_id = graph.num_nodes();
  std::vector<Output> results = body_outputs;
  results.push_back(cond);
  RegionInputs in =
      FindRegionInputs(graph, first_node_id_, end_id, results, [](const Node*) { return false; });
  std::vector<Output> inputs = initial_values_;
  inputs.insert(inputs.end(), in.captures.begin(), in.captures.end());
  std::vector<std::string> vars, body;
  std::vector<Shape> invariants;
  for (size_t i = 0; i < loop_vars_.size(); ++i) {
    vars.push_back(loop_vars_[i].node->name());
    body.push_back(body_outputs[i].name());
    invariants.push_back(*options_.shape_invariants[i]);
  }
  Node* node =
      scope_.WithControlDependencies(in.control)
          .AddNode(
              WhileOp(), inputs,
              {kLoopVars(vars), kCond(cond.name()), kBody(body), kShapeInvariants(invariants),
               kMaximumIterations(options_.maximum_iterations),
               kParallelIterations(options_.parallel_iterations), kBackProp(options_.back_prop)},
              "While");
  std::vector<Output> outputs;
  outputs.reserve(node->num_outputs());
  for (int i = 0; i < node->num_outputs(); ++i) outputs.push_back(node->output(i));
  return outputs;
}

std::vector<Output> WhileLoop(const Scope& scope, const WhileCondFn& cond, const WhileBodyFn& body,
                              const std::vector<Output>& initial_values, WhileOptions options) {
  WhileBuilder loop(scope, initial_values, std::move(options));
  Output c = cond(loop.scope(), loop.loop_vars());
  std::vector<Output> next = body(loop.scope(), loop.loop_vars());
  return loop.Finish(c, next);
}

namespace {

// The gradient of a While: a region (built here, after every forward node) that maps the
// gradients of one iteration's body outputs to those of its loop variables and captures,
// run by WhileGrad in reverse over the iterations the forward run recorded:
//   g_T = incoming;  g_i = (d body / d v_i)^T g_{i+1};  d capture = sum_i (d body / d c)^T g_{i+1}
std::vector<GradOutput> WhileGradRule(const GradContext& ctx) {
  const Node& w = ctx.node();
  Graph& graph = *w.graph();
  std::vector<GradOutput> result(w.num_inputs());
  if (!w.attr(kBackProp)) return result;
  const auto& var_names = w.attr(kLoopVars);
  const int n = static_cast<int>(var_names.size());
  const int forward_first = graph.FindNode(var_names[0])->id();
  for (int id = forward_first; id < w.id(); ++id) {
    if (&graph.node(id)->op_def() == &WhileOp() && graph.node(id)->attr(kBackProp)) {
      throw Unimplemented("Gradients: ", w.description(), " contains the while loop ",
                          graph.node(id)->description(),
                          "; gradients of nested while loops are not supported. Compute the "
                          "inner loop outside, or pass back_prop=false to it");
    }
  }
  const Scope& s = ctx.scope();
  std::vector<int64_t> float_vars, float_captures;
  std::vector<Output> incoming, ys, xs;
  for (int i = 0; i < n; ++i) {
    if (!IsFloating(w.output_dtype(i))) continue;
    float_vars.push_back(i);
    incoming.push_back(ctx.grad(i).valid() ? ctx.grad(i) : ZerosLike(s, ctx.output(i)));
    ys.push_back(graph.GetOutput(w.attr(kBody)[i]));
    xs.push_back(graph.GetOutput(var_names[i]));
  }
  for (int j = n; j < w.num_inputs(); ++j) {
    if (!IsFloating(w.input(j).dtype())) continue;
    float_captures.push_back(j - n);
    xs.push_back(w.input(j));
  }
  if (float_vars.empty()) return result;

  const int grad_first = graph.num_nodes();
  std::vector<Output> grad_vars;
  std::vector<std::string> grad_var_names;
  for (int64_t i : float_vars) {
    Node* g = s.WithNoControlDependencies().AddNode(
        LoopVarOp(), {},
        {kDType(w.output_dtype(i)), kShape(w.attr(kShapeInvariants)[i]), kIndex(i)}, "grad_var");
    grad_vars.push_back(g->output(0));
    grad_var_names.push_back(g->name());
  }
  std::vector<Output> dxs = GradientsWithinRegion(s, ys, xs, grad_vars, forward_first);
  const int grad_end = graph.num_nodes();

  std::vector<std::string> var_grads, capture_grads, capture_grad_indices;
  std::vector<DType> types;
  std::vector<Shape> shapes;
  std::vector<Output> results;
  for (size_t k = 0; k < dxs.size(); ++k) {
    const bool capture = k >= float_vars.size();
    std::vector<std::string>& names = capture ? capture_grads : var_grads;
    Output dx = dxs[k];
    // A capture's gradient made dense from rows (IndexedSlicesToDense of a Gather's
    // gradient): the WhileGrad adds the rows itself; the dense node does not run.
    if (capture && dx.valid() && dx.node->op() == "IndexedSlicesToDense") {
      capture_grad_indices.push_back(dx.node->input(0).name());
      results.push_back(dx.node->input(0));
      dx = dx.node->input(1);
    } else if (capture) {
      capture_grad_indices.emplace_back();
    }
    names.push_back(dx.valid() ? dx.name() : "");
    if (dx.valid()) results.push_back(dx);
    const Output& x = k < float_vars.size() ? w.input(static_cast<int>(float_vars[k])) : xs[k];
    types.push_back(x.dtype());
    shapes.push_back(x.shape());
  }
  // The forward region's values come from the forward run's record, not from captures.
  RegionInputs in = FindRegionInputs(graph, grad_first, grad_end, results, [&](const Node* node) {
    return node->id() >= forward_first && node->id() < w.id();
  });
  std::vector<Output> inputs = incoming;
  inputs.insert(inputs.end(), in.captures.begin(), in.captures.end());
  std::vector<Operation> control = in.control;
  control.push_back(Operation(const_cast<Node*>(&w)));
  Node* grad = s.WithControlDependencies(control).AddNode(
      WhileGradOp(), inputs,
      {kForward(w.name()), kGradVars(grad_var_names), kFloatVars(float_vars),
       kFloatCaptures(float_captures), kVarGrads(var_grads), kCaptureGrads(capture_grads),
       kCaptureGradIndices(capture_grad_indices), kOutputTypes(types), kOutputShapes(shapes)},
      "WhileGrad");
  for (size_t k = 0; k < float_vars.size(); ++k) {
    result[float_vars[k]] = grad->output(static_cast<int>(k));
  }
  for (size_t k = 0; k < float_captures.size(); ++k) {
    if (dxs[float_vars.size() + k].valid()) {
      result[n + float_captures[k]] = grad->output(static_cast<int>(float_vars.size() + k));
    }
  }
  return result;
}

}  // namespace

}  // namespace loom
