#include "loom/runtime/graph_fusion.h"

#include <algorithm>
#include <map>
#include <utility>

#include "loom/ops/nn_fused.h"

namespace loom {
namespace {

// What the pass knows of the plan's nodes.
class PlanView {
 public:
  PlanView(const Graph& graph, const std::vector<char>& needed, const std::vector<char>& fed,
           const std::vector<Output>& fetches, const FusionPlan& plan)
      : needed_(needed), fed_(fed), plan_(plan) {
    const int n = graph.num_nodes();
    readers_.assign(n, {});
    pinned_.assign(n, 0);
    fetched_.assign(n, 0);
    for (const Output& f : fetches) fetched_[f.node->id()] = 1;
    for (int id = 0; id < n; ++id) {
      if (!Runs(id)) continue;
      const Node* node = graph.node(id);
      const auto& refs = node->op_def().ref_inputs;
      for (int i = 0; i < node->num_inputs(); ++i) {
        if (std::find(refs.begin(), refs.end(), i) != refs.end()) continue;
        readers_[plan.Input(node, i).node->id()].push_back({node, i});
      }
      for (const Node* c : node->control_inputs()) pinned_[c->id()] = 1;
      if (!node->control_inputs().empty()) pinned_[id] = 1;
      if (const bool* early = node->attrs().Find<bool>(kScheduleEarlyAttr); early && *early) {
        pinned_[id] = 1;
      }
    }
  }

  // Whether node `id` runs as a kernel in the plan.
  bool Runs(int id) const { return needed_[id] && !fed_[id]; }
  // A node a chain may contain: it runs, is of `op`, and nothing pins it in place.
  bool Fusable(const Node* node, const char* op) const {
    return node != nullptr && Runs(node->id()) && !pinned_[node->id()] &&
           plan_.group_of[node->id()] < 0 && node->op() == op;
  }
  // Fusable, and its output 0 (its only one) is not fetched and has exactly one reader:
  // a value that a chain may leave unwritten.
  bool Internal(const Node* node, const char* op) const {
    return Fusable(node, op) && node->num_outputs() == 1 && !fetched_[node->id()] &&
           readers_[node->id()].size() == 1;
  }
  // The first of `node`'s readers in the plan that is of `op` and reads it as input
  // `index`, or nullptr.
  const Node* OnlyReader(const Node* node, const char* op, int index) const {
    for (const Read& r : readers_[node->id()]) {
      if (r.input == index && r.reader->op() == op) return r.reader;
    }
    return nullptr;
  }

 private:
  struct Read {
    const Node* reader;
    int input;
  };
  const std::vector<char>& needed_;
  const std::vector<char>& fed_;
  const FusionPlan& plan_;
  std::vector<std::vector<Read>> readers_;  // per node: its readers that run
  std::vector<char> pinned_;                // a control edge's end, or scheduled early
  std::vector<char> fetched_;               // an output fetched
};

std::string Joined(const std::vector<const Node*>& parts, bool names) {
  std::string s;
  for (const Node* p : parts) {
    if (!s.empty()) s += '+';
    s += names ? p->name() : p->op();
  }
  return s;
}

void Add(FusionPlan& plan, FusedGroup group) {
  group.name = Joined(group.parts, true);
  group.op = Joined(group.parts, false);
  const int index = static_cast<int>(plan.groups.size());
  for (const Node* p : group.parts) plan.group_of[p->id()] = index;
  plan.groups.push_back(std::move(group));
}

// ReluGrad(dy, z) reads Relu(z)'s output instead of z (graph_fusion.h says why).
void RewireReluGrads(const Graph& graph, const std::vector<char>& needed,
                     const std::vector<char>& fed, FusionPlan& plan) {
  std::map<std::pair<const Node*, int>, Node*> relu_of;  // z -> the first Relu of z
  for (int id = 0; id < graph.num_nodes(); ++id) {
    Node* node = graph.node(id);
    if (!needed[id] || fed[id]) continue;
    if (node->op() == "Relu") {
      relu_of.emplace(std::make_pair(node->input(0).node, node->input(0).index), node);
    } else if (node->op() == "ReluGrad") {
      auto it = relu_of.find({node->input(1).node, node->input(1).index});
      if (it != relu_of.end()) {
        plan.first_rewire[id] = static_cast<int>(plan.rewired.size());
        plan.rewired.push_back({id, 1, it->second->output(0)});
      }
    }
  }
}

// The BiasAdd and Relu that follow `head` (a Conv2D or MatMul) in a chain: head [->
// BiasAdd] [-> Relu], each only where the value before it may stay unwritten. Both null:
// no chain.
struct BiasReluChain {
  const Node* bias_add = nullptr;
  const Node* relu = nullptr;
};
BiasReluChain FindBiasReluChain(const PlanView& view, const Node* head) {
  BiasReluChain chain;
  const Node* last = head;
  if (view.Internal(last, head->op().c_str())) {
    chain.bias_add = view.OnlyReader(last, "BiasAdd", 0);
    if (!view.Fusable(chain.bias_add, "BiasAdd")) chain.bias_add = nullptr;
    if (chain.bias_add != nullptr) last = chain.bias_add;
  }
  if (view.Internal(last, last->op().c_str())) {
    chain.relu = view.OnlyReader(last, "Relu", 0);
    if (!view.Fusable(chain.relu, "Relu")) chain.relu = nullptr;
  }
  return chain;
}

// The group of head [-> BiasAdd] [-> Relu] (node id `id`), run by `kernel`.
FusedGroup BiasReluGroup(Node* head, int id, const BiasReluChain& chain, KernelFn kernel) {
  FusedGroup g;
  g.parts = {head};
  g.kernel_node = head;
  g.inputs = {head->input(0), head->input(1)};
  g.run_at = id;
  if (chain.bias_add != nullptr) {
    g.parts.push_back(chain.bias_add);
    g.inputs.push_back(chain.bias_add->input(1));
    g.run_at = chain.bias_add->id();
  }
  if (chain.relu != nullptr) g.parts.push_back(chain.relu);
  g.outputs = {const_cast<Node*>(g.parts.back())->output(0)};
  g.kernel = std::move(kernel);
  return g;
}

}  // namespace

Output FusionPlan::Input(const Node* node, int i) const {
  const int id = node->id();
  if (id < static_cast<int>(first_rewire.size()) && first_rewire[id] >= 0) {
    for (size_t r = first_rewire[id]; r < rewired.size() && rewired[r].node == id; ++r) {
      if (rewired[r].input == i) return rewired[r].from;
    }
  }
  return node->input(i);
}

FusionPlan PlanFusion(const Graph& graph, const std::vector<char>& needed,
                      const std::vector<char>& fed, const std::vector<Output>& fetches) {
  FusionPlan plan;
  const int n = graph.num_nodes();
  plan.group_of.assign(n, -1);
  plan.first_rewire.assign(n, -1);
  for (int id = 0; id < n; ++id) {
    const OpRole role = graph.node(id)->op_def().role;
    if (needed[id] && (role == OpRole::kSwitch || role == OpRole::kMerge)) return plan;
  }
  RewireReluGrads(graph, needed, fed, plan);
  const PlanView view(graph, needed, fed, fetches, plan);
  for (int id = 0; id < n; ++id) {
    Node* node = graph.node(id);
    if (view.Fusable(node, "Conv2D") && node->num_outputs() == 1) {
      // Conv2D [-> BiasAdd] [-> Relu]
      const BiasReluChain chain = FindBiasReluChain(view, node);
      if (chain.bias_add == nullptr && chain.relu == nullptr) continue;
      Add(plan,
          BiasReluGroup(node, id, chain, FusedConv2DKernel(*node, chain.bias_add, chain.relu)));
    } else if (view.Fusable(node, "MatMul") && node->num_outputs() == 1) {
      // MatMul [-> BiasAdd] [-> Relu]
      const BiasReluChain chain = FindBiasReluChain(view, node);
      if (chain.bias_add == nullptr && chain.relu == nullptr) continue;
      Add(plan,
          BiasReluGroup(node, id, chain, FusedMatMulKernel(*node, chain.bias_add, chain.relu)));
    } else if (view.Fusable(node, "ReluGrad")) {
      // [MaxPoolGrad ->] ReluGrad [-> BiasAddGrad]
      Node* pool_grad = plan.Input(node, 0).node;
      if (!view.Internal(pool_grad, "MaxPoolGrad")) pool_grad = nullptr;
      const Node* bias_grad = view.OnlyReader(node, "BiasAddGrad", 0);
      if (!view.Fusable(bias_grad, "BiasAddGrad")) bias_grad = nullptr;
      if (pool_grad == nullptr && bias_grad == nullptr) continue;
      FusedGroup g;
      g.kernel_node = pool_grad != nullptr ? pool_grad : node;
      if (pool_grad != nullptr) {
        g.parts.push_back(pool_grad);
        g.inputs = {pool_grad->input(0), pool_grad->input(1)};
      } else {
        g.inputs = {plan.Input(node, 0)};
      }
      g.parts.push_back(node);
      g.inputs.push_back(plan.Input(node, 1));
      g.outputs = {node->output(0)};
      g.run_at = id;
      if (bias_grad != nullptr) {
        g.parts.push_back(bias_grad);
        g.outputs.push_back(const_cast<Node*>(bias_grad)->output(0));
      }
      g.kernel = FusedReluGradKernel(pool_grad, *node, bias_grad);
      Add(plan, std::move(g));
    }
  }
  return plan;
}

}  // namespace loom
