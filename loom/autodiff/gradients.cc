#include "loom/autodiff/gradients.h"

#include <map>

#include "loom/ops/grad_support.h"

namespace loom {
namespace {

Output Densify(const Scope& scope, const GradOutput& g) {
  if (!g.is_sparse()) return g.dense;
  return IndexedSlicesToDense(scope, g.indices, g.values, g.dense_shape);
}

// Sums the gradients reaching one output. A single sparse part stays sparse; several
// parts are densified and summed (an embedding table read twice is rare).
GradOutput Aggregate(const Scope& scope, const std::vector<GradOutput>& parts) {
  if (parts.empty()) return GradOutput();
  if (parts.size() == 1) return parts[0];
  std::vector<Output> dense;
  dense.reserve(parts.size());
  for (const auto& p : parts) dense.push_back(Densify(scope, p));
  return AddN(scope, dense);
}

std::vector<GradOutput> Walk(const Scope& outer, const std::vector<Output>& ys,
                             const std::vector<Output>& xs, const std::vector<Output>& grad_ys,
                             int first_id) {
  if (!grad_ys.empty() && grad_ys.size() != ys.size()) {
    throw InvalidArgument("Gradients: ", grad_ys.size(), " grad_ys for ", ys.size(), " ys");
  }
  Graph& graph = outer.graph();
  const int n = graph.num_nodes();
  Scope scope = outer.NewSubScope("gradients");

  // Nodes reachable forward from xs (data edges), and backward from ys.
  std::vector<char> from_x(n, 0), to_y(n, 0);
  for (const Output& x : xs) from_x[x.node->id()] = 1;
  for (int id = 0; id < n; ++id) {
    if (from_x[id]) continue;
    // A StopGradient ends every path through it (its output is a constant to Gradients),
    // so an op past it without a gradient (Fill of tf.shape(x)) is not on a path to x.
    if (graph.node(id)->op() == "StopGradient") continue;
    for (const Output& in : graph.node(id)->inputs()) {
      if (in.node->id() < n && from_x[in.node->id()]) {
        from_x[id] = 1;
        break;
      }
    }
  }
  for (const Output& y : ys) to_y[y.node->id()] = 1;
  for (int id = n - 1; id >= 0; --id) {
    if (!to_y[id]) continue;
    for (const Output& in : graph.node(id)->inputs()) to_y[in.node->id()] = 1;
  }

  std::map<std::pair<int, int>, std::vector<GradOutput>> pending;
  for (size_t i = 0; i < ys.size(); ++i) {
    const Output& y = ys[i];
    if (!IsFloating(y.dtype())) {
      throw InvalidArgument("Gradients: y ", y.name(), " has dtype ", DTypeName(y.dtype()),
                            "; only float32/float64 values can be differentiated");
    }
    Output seed = grad_ys.empty() ? OnesLike(scope, y) : grad_ys[i];
    pending[{y.node->id(), y.index}].push_back(seed);
  }

  std::map<std::pair<int, int>, GradOutput> result_of;
  std::vector<char> is_x(n, 0);
  for (const Output& x : xs) is_x[x.node->id()] = 1;

  for (int id = n - 1; id >= 0; --id) {
    if (!from_x[id] || !to_y[id]) continue;
    Node* node = graph.node(id);
    std::vector<Output> grads(node->num_outputs());
    bool any = false;
    for (int o = 0; o < node->num_outputs(); ++o) {
      auto it = pending.find({id, o});
      if (it == pending.end()) continue;
      GradOutput total = Aggregate(scope, it->second);
      pending.erase(it);
      if (is_x[id]) result_of[{id, o}] = total;
      if (total.valid()) {
        grads[o] = Densify(scope, total);
        any = true;
      }
    }
    if (!any || id < first_id) continue;
    // Does any input lead back to an x? If not, there is nothing to propagate.
    bool needs_inputs = false;
    for (const Output& in : node->inputs())
      needs_inputs |= static_cast<bool>(from_x[in.node->id()]);
    if (!needs_inputs) continue;
    const OpDef& op = node->op_def();
    if (!op.grad) {
      throw InvalidArgument("Gradients: cannot differentiate through ", node->description(), ": ",
                            op.no_gradient.empty() ? "no gradient is defined" : op.no_gradient,
                            ". Wrap the path in StopGradient or compute it outside the path to "
                            "the variables");
    }
    Scope node_scope = scope.NewSubScope(node->name());
    GradContext ctx(node_scope, *node, grads);
    std::vector<GradOutput> input_grads = op.grad(ctx);
    if (static_cast<int>(input_grads.size()) != node->num_inputs()) {
      throw Internal("gradient of ", node->description(), " returned ", input_grads.size(),
                     " values for ", node->num_inputs(), " inputs");
    }
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Output& in = node->input(i);
      if (!input_grads[i].valid() || !from_x[in.node->id()]) continue;
      pending[{in.node->id(), in.index}].push_back(input_grads[i]);
    }
  }

  std::vector<GradOutput> result;
  for (const Output& x : xs) {
    auto it = result_of.find({x.node->id(), x.index});
    result.push_back(it == result_of.end() ? GradOutput() : it->second);
  }
  return result;
}

std::vector<Output> Densified(const Scope& scope, const std::vector<GradOutput>& sparse) {
  std::vector<Output> dense;
  dense.reserve(sparse.size());
  Scope s = scope.NewSubScope("gradients_dense");
  for (const auto& g : sparse) dense.push_back(g.is_sparse() ? Densify(s, g) : g.dense);
  return dense;
}

}  // namespace

std::vector<GradOutput> GradientsWithSparse(const Scope& scope, const std::vector<Output>& ys,
                                            const std::vector<Output>& xs,
                                            const std::vector<Output>& grad_ys) {
  return Walk(scope, ys, xs, grad_ys, 0);
}

std::vector<Output> GradientsWithinRegion(const Scope& scope, const std::vector<Output>& ys,
                                          const std::vector<Output>& xs,
                                          const std::vector<Output>& grad_ys, int first_id) {
  return Densified(scope, Walk(scope, ys, xs, grad_ys, first_id));
}

std::vector<Output> Gradients(const Scope& scope, const std::vector<Output>& ys,
                              const std::vector<Output>& xs, const std::vector<Output>& grad_ys) {
  return Densified(scope, GradientsWithSparse(scope, ys, xs, grad_ys));
}

}  // namespace loom
