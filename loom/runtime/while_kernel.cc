// The While and WhileGrad kernels (while_loop.h) and the per-Session state they share.
#include <algorithm>
#include <utility>

#include "loom/runtime/while_internal.h"

namespace loom::while_internal {
namespace {

// acc += v, elementwise. REQUIRES: same dtype (float32 or float64) and shape.
void Accumulate(Tensor& acc, const Tensor& v, const Node& node) {
  if (!acc.defined()) {
    acc = v.Clone();
    return;
  }
  if (acc.shape() != v.shape() || acc.dtype() != v.dtype()) {
    throw Internal(node.description(), ": a capture's gradient changed from ", acc.shape(), " to ",
                   v.shape(), " between iterations");
  }
  if (acc.dtype() == kFloat64) {
    double* a = acc.data<double>();
    const double* b = v.data<double>();
    for (int64_t i = 0; i < acc.NumElements(); ++i) a[i] += b[i];
  } else {
    float* a = acc.data<float>();
    const float* b = v.data<float>();
    for (int64_t i = 0; i < acc.NumElements(); ++i) a[i] += b[i];
  }
}

// acc[rows[i]] += values[i] for each row index i: a Gather's gradient added row by row.
// REQUIRES: acc float32 or float64, values of its dtype holding rows.NumElements() rows.
void AccumulateRows(Tensor& acc, const Tensor& rows, const Tensor& values, const Node& node) {
  const int64_t n = acc.rank() == 0 ? 0 : acc.dim(0);
  const int64_t row_size = n == 0 ? 0 : acc.NumElements() / n;
  const int64_t count = rows.NumElements();
  if (values.dtype() != acc.dtype() || values.NumElements() != count * row_size) {
    throw Internal(node.description(), ": a capture's row gradient ", values.shape(),
                   " does not hold ", count, " rows of ", acc.shape());
  }
  auto add = [&](auto* a, const auto* v) {
    for (int64_t i = 0; i < count; ++i) {
      const int64_t row =
          rows.dtype() == kInt32 ? rows.data<int32_t>()[i] : rows.data<int64_t>()[i];
      if (row < 0 || row >= n) {
        throw Internal(node.description(), ": row ", row,
                       " of a capture's gradient is outside [0, ", n, ")");
      }
      for (int64_t j = 0; j < row_size; ++j) a[row * row_size + j] += v[i * row_size + j];
    }
  };
  if (acc.dtype() == kFloat64) {
    add(acc.data<double>(), values.data<double>());
  } else {
    add(acc.data<float>(), values.data<float>());
  }
}

}  // namespace

std::shared_ptr<const ForwardPlans> WhileState::Forward(const Node& node) {
  MutexLock lock(mu_);
  auto& slot = forward_[&node];
  if (slot) return slot;
  const Graph& graph = *node.graph();
  std::vector<Output> fed;
  for (const std::string& name : node.attr(kLoopVars)) fed.push_back(graph.GetOutput(name));
  for (int j = static_cast<int>(fed.size()); j < node.num_inputs(); ++j)
    fed.push_back(node.input(j));
  const int first = fed[0].node->id();
  std::vector<Output> body;
  for (const std::string& name : node.attr(kBody)) body.push_back(graph.GetOutput(name));
  const std::string owner = node.description();
  slot = std::make_shared<const ForwardPlans>(ForwardPlans{
      RegionPlan(graph, fed, {graph.GetOutput(node.attr(kCond))}, first, node.id(), owner),
      RegionPlan(graph, fed, body, first, node.id(), owner)});
  return slot;
}

std::shared_ptr<const GradPlan> WhileState::Grad(const Node& node) {
  const Graph& graph = *node.graph();
  const Node* forward = graph.FindNode(node.attr(kForward));
  if (forward == nullptr || &forward->op_def() != &WhileOp()) {
    throw InvalidArgument(node.description(), ": its forward loop '", node.attr(kForward),
                          "' is not a While node of the graph");
  }
  std::shared_ptr<const ForwardPlans> fwd = Forward(*forward);
  MutexLock lock(mu_);
  auto& slot = grad_[&node];
  if (slot) return slot;
  const int num_grad_vars = static_cast<int>(node.attr(kGradVars).size());
  std::vector<Output> fed;
  for (const std::string& name : node.attr(kGradVars)) fed.push_back(graph.GetOutput(name));
  for (int j = num_grad_vars; j < node.num_inputs(); ++j) fed.push_back(node.input(j));
  const std::vector<Output>& tape_outputs = fwd->body.slot_outputs();
  fed.insert(fed.end(), tape_outputs.begin(), tape_outputs.end());
  std::vector<Output> targets;
  for (const std::string& name : node.attr(kVarGrads)) {
    if (!name.empty()) targets.push_back(graph.GetOutput(name));
  }
  const auto& capture_grads = node.attr(kCaptureGrads);
  const auto& indices = node.attr(kCaptureGradIndices);
  for (size_t k = 0; k < capture_grads.size(); ++k) {
    if (capture_grads[k].empty()) continue;
    targets.push_back(graph.GetOutput(capture_grads[k]));
    if (k < indices.size() && !indices[k].empty()) targets.push_back(graph.GetOutput(indices[k]));
  }
  auto plan = std::make_shared<GradPlan>(
      GradPlan{forward, fwd,
               RegionPlan(graph, fed, targets, fed[0].node->id(), node.id(), node.description(),
                          /*move_last_reads=*/true),
               num_grad_vars, node.num_inputs() - num_grad_vars});
  slot = plan;
  return slot;
}

bool WhileState::HasGradient(const Node& node) {
  MutexLock lock(mu_);
  const Graph& graph = *node.graph();
  auto& [scanned, has] = has_grad_[&node];
  if (scanned == graph.num_nodes()) return has;
  for (int id = std::max(scanned, node.id()); id < graph.num_nodes() && !has; ++id) {
    const Node* other = graph.node(id);
    has = &other->op_def() == &WhileGradOp() && other->attr(kForward) == node.name();
  }
  scanned = graph.num_nodes();
  return has;
}

void WhileState::PutTape(const std::string& loop, int64_t step, std::shared_ptr<Tape> tape) {
  MutexLock lock(mu_);
  tapes_[{loop, step}] = std::move(tape);
  auto first = tapes_.lower_bound({loop, INT64_MIN});
  auto end = tapes_.lower_bound({loop, INT64_MAX});
  size_t count = static_cast<size_t>(std::distance(first, end));
  while (count-- > kTapesPerLoop) first = tapes_.erase(first);  // the oldest steps first
}

std::shared_ptr<Tape> WhileState::TakeTape(const std::string& loop, int64_t step) {
  MutexLock lock(mu_);
  auto it = tapes_.find({loop, step});
  if (it == tapes_.end()) return nullptr;
  std::shared_ptr<Tape> tape = std::move(it->second);
  tapes_.erase(it);
  return tape;
}

void WhileKernel(KernelContext& c) {
  const Node& node = c.node();
  WhileState& state = c.resources().Unnamed<WhileState>();
  std::shared_ptr<const ForwardPlans> plans = state.Forward(node);
  const auto& invariants = c.attr(kShapeInvariants);
  const int n = static_cast<int>(invariants.size());
  const int64_t max_iterations = c.attr(kMaximumIterations);
  const bool record = c.attr(kBackProp) && state.HasGradient(node);
  auto tape = record ? std::make_shared<Tape>() : nullptr;
  std::vector<Tensor> values(n);
  std::vector<Tensor> captures(c.num_inputs() - n);
  for (int i = 0; i < n; ++i) values[i] = c.input(i);
  for (int j = n; j < c.num_inputs(); ++j) captures[j - n] = c.input(j);
  auto feed = [&](const RegionPlan& plan, std::vector<Tensor>& slots) {
    slots.assign(plan.num_slots(), Tensor());
    for (int i = 0; i < n; ++i) slots[plan.fed_slot(i)] = values[i];
    for (size_t j = 0; j < captures.size(); ++j) slots[plan.fed_slot(n + j)] = captures[j];
  };
  std::vector<Tensor> slots;
  const std::string loop = node.description();
  for (int64_t it = 0; max_iterations < 0 || it < max_iterations; ++it) {
    feed(plans->cond, slots);
    plans->cond.Run(slots, c, it, loop);
    const Tensor& go = slots[plans->cond.target_slot(0)];
    if (!go.defined()) {
      c.Fail("the condition has no value at iteration ", it,
             ": it is on the untaken side of a tf.cond; return the cond's result instead");
    }
    if (go.dtype() != kBool || go.NumElements() != 1) {
      c.Fail("the condition gave ", DTypeName(go.dtype()), go.shape(), " at iteration ", it,
             "; it must be a scalar bool");
    }
    if (!go.scalar<bool>()) break;
    feed(plans->body, slots);
    plans->body.Run(slots, c, it, loop);
    for (int i = 0; i < n; ++i) {
      Tensor next = slots[plans->body.target_slot(i)];
      if (!next.defined()) {
        c.Fail("loop variable ", i, " ('", c.attr(kLoopVars)[i], "') has no value after iteration ",
               it, ": the body's result ", c.attr(kBody)[i],
               " is on the untaken side of a tf.cond; return the cond's result instead");
      }
      if (!invariants[i].IsCompatibleWith(next.shape())) {
        c.Fail("loop variable ", i, " ('", c.attr(kLoopVars)[i], "') has shape ", next.shape(),
               " after iteration ", it, ", but its shape invariant is ", invariants[i],
               "; declare the dimensions that change as unknown in shape_invariants");
      }
      values[i] = std::move(next);
    }
    if (tape) tape->iterations.push_back(slots);
  }
  for (int i = 0; i < n; ++i) c.set_output(i, values[i]);
  if (tape) {
    tape->captures = std::move(captures);
    state.PutTape(node.name(), c.step_id(), std::move(tape));
  }
}

void WhileGradKernel(KernelContext& c) {
  const Node& node = c.node();
  WhileState& state = c.resources().Unnamed<WhileState>();
  std::shared_ptr<const GradPlan> g = state.Grad(node);
  std::shared_ptr<Tape> tape = state.TakeTape(g->forward->name(), c.step_id());
  if (!tape) {
    throw FailedPrecondition(node.description(), ": no record of ", g->forward->description(),
                             " in this step; the forward loop ran with back_prop=false, or more "
                             "than ",
                             WhileState::kTapesPerLoop,
                             " steps ran it at once before their gradients")
        .AtNode(node.name());
  }
  const auto& float_vars = c.attr(kFloatVars);
  const auto& float_captures = c.attr(kFloatCaptures);
  const auto& var_grads = c.attr(kVarGrads);
  const auto& capture_grads = c.attr(kCaptureGrads);
  const auto& grad_indices = c.attr(kCaptureGradIndices);
  const int nv = g->num_grad_vars;
  const RegionPlan& body = g->forward_plans->body;
  std::vector<Tensor> grads(nv);
  for (int k = 0; k < nv; ++k) grads[k] = c.input(k);
  std::vector<Tensor> acc(float_captures.size());
  std::vector<Tensor> slots;
  const int tape_fed = nv + g->num_captures;
  const int num_iterations = static_cast<int>(tape->iterations.size());
  const std::string loop = StrCat("the gradient of ", g->forward->description());
  for (int it = num_iterations - 1; it >= 0; --it) {
    const std::vector<Tensor>& forward = tape->iterations[it];
    slots.assign(g->plan.num_slots(), Tensor());
    for (size_t s = 0; s < forward.size(); ++s) slots[g->plan.fed_slot(tape_fed + s)] = forward[s];
    // Moved: the region is the last to hold the incoming gradients, so a gradient kernel
    // may update one in place (a TensorArray's row gradient, an elementwise op).
    for (int k = 0; k < nv; ++k) slots[g->plan.fed_slot(k)] = std::move(grads[k]);
    for (int j = 0; j < g->num_captures; ++j) slots[g->plan.fed_slot(nv + j)] = c.input(nv + j);
    g->plan.Run(slots, c, it, loop);
    // A gradient left dead (it flows only through a cond's untaken side this iteration)
    // is zero.
    int target = 0;
    for (int k = 0; k < nv; ++k) {
      const Tensor* dv = var_grads[k].empty() ? nullptr : &slots[g->plan.target_slot(target++)];
      if (dv != nullptr && dv->defined()) {
        grads[k] = *dv;
      } else {
        const Tensor& v = forward[body.fed_slot(static_cast<int>(float_vars[k]))];
        grads[k] = Tensor::Zeros(v.dtype(), v.shape());
      }
    }
    for (size_t k = 0; k < float_captures.size(); ++k) {
      if (capture_grads[k].empty()) continue;
      const Tensor& dc = slots[g->plan.target_slot(target++)];
      if (k < grad_indices.size() && !grad_indices[k].empty()) {
        const Tensor& rows = slots[g->plan.target_slot(target++)];
        if (!dc.defined() || !rows.defined()) continue;
        const Tensor& capture = tape->captures[float_captures[k]];
        if (!acc[k].defined()) acc[k] = Tensor::Zeros(capture.dtype(), capture.shape());
        AccumulateRows(acc[k], rows, dc, node);
      } else if (dc.defined()) {
        Accumulate(acc[k], dc, node);
      }
    }
  }
  for (int k = 0; k < nv; ++k) c.set_output(k, grads[k]);
  for (size_t k = 0; k < float_captures.size(); ++k) {
    const Tensor& capture = tape->captures[float_captures[k]];
    c.set_output(nv + static_cast<int>(k),
                 acc[k].defined() ? acc[k] : Tensor::Zeros(capture.dtype(), capture.shape()));
  }
}

}  // namespace loom::while_internal
