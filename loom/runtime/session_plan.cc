// Session::BuildPlan and GetPlan: the pruned, ordered steps of one signature (session_plan.h).
#include "loom/runtime/session_plan.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"
#include "loom/runtime/region_executor.h"  // IsVariable
#include "loom/runtime/session.h"

namespace loom {

std::unique_ptr<Session::Plan> Session::BuildPlan(const FeedList& feeds,
                                                  const std::vector<Output>& fetches,
                                                  const std::vector<Operation>& targets) const {
  const int n = graph_.num_nodes();
  std::vector<char> fed_node(n, 0);
  for (const auto& [out, value] : feeds) fed_node[out.node->id()] = 1;

  // Reverse reachability from fetches and targets; fed nodes are sources.
  std::vector<char> needed(n, 0);
  std::vector<Node*> stack;
  auto want = [&](Node* node) {
    if (!needed[node->id()]) {
      needed[node->id()] = 1;
      stack.push_back(node);
    }
  };
  for (const Output& f : fetches) want(f.node);
  for (const Operation& t : targets) want(t.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (fed_node[node->id()]) continue;
    const auto& refs = node->op_def().ref_inputs;
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (std::find(refs.begin(), refs.end(), i) != refs.end()) continue;
      want(node->input(i).node);
    }
    for (Node* c : node->control_inputs()) want(c);
  }

  auto plan = std::make_unique<Plan>();
  if (options_.fuse_ops) plan->fusion = PlanFusion(graph_, needed, fed_node, fetches);
  const FusionPlan& fusion = plan->fusion;
  std::vector<int> slot_base(n, -1);
  for (int id = 0; id < n; ++id) {
    if (!needed[id]) continue;
    slot_base[id] = plan->num_slots;
    plan->num_slots += graph_.node(id)->num_outputs();
  }
  for (const auto& [out, value] : feeds) {
    if (out.index >= out.node->num_outputs()) throw InvalidArgument("bad feed ", out.name());
    if (slot_base[out.node->id()] < 0) {  // fed but not needed: still give it a slot
      slot_base[out.node->id()] = plan->num_slots;
      plan->num_slots += out.node->num_outputs();
    }
    plan->feed_slots.push_back(slot_base[out.node->id()] + out.index);
  }
  // Kernels run in node order (a topological order: inputs precede their consumers),
  // except that a node with the attribute `_schedule_early` (true) moves up to right
  // after the last of its inputs and control inputs; its consumers follow its old place,
  // so the order stays topological. It is for an op that starts work on another thread
  // (a collective's start, distribute/collective_ops.h): the kernels that node order puts
  // before it run while that work does.
  std::vector<int> order;
  std::vector<int> position(n, -1);
  for (int id = 0; id < n; ++id) {
    if (!needed[id] || fed_node[id] || IsVariable(graph_.node(id))) continue;
    const Node* node = graph_.node(id);
    size_t at = order.size();
    if (const bool* early = node->attrs().Find<bool>(kScheduleEarlyAttr); early && *early) {
      int after = -1;
      for (int i = 0; i < node->num_inputs(); ++i)
        after = std::max(after, position[node->input(i).node->id()]);
      for (const Node* c : node->control_inputs()) after = std::max(after, position[c->id()]);
      at = after < 0 ? 0 : static_cast<size_t>(after) + 1;
    }
    order.insert(order.begin() + at, id);
    for (size_t p = at; p < order.size(); ++p) position[order[p]] = static_cast<int>(p);
  }
  std::vector<int> last_reader(plan->num_slots, -1);
  std::vector<int> step_of(n, -1);
  for (int id : order) {
    Node* node = graph_.node(id);
    const int group = fusion.group_of.empty() ? -1 : fusion.group_of[id];
    // A fused chain's step takes the place of its node `run_at`; its other nodes have none.
    if (group >= 0 && fusion.groups[group].run_at != id) continue;
    step_of[id] = static_cast<int>(plan->steps.size());
    plan->has_switch |= node->op_def().role == OpRole::kSwitch;
    if (!node->op_def().kernel) {
      throw Unimplemented(node->description(), " has no CPU kernel");
    }
    Step step;
    step.node = node;
    step.kernel = &node->op_def().kernel;
    step.first_output_slot = slot_base[id];
    step.num_outputs = node->num_outputs();
    std::vector<Output> inputs;  // what the step reads (a ReluGrad may read a Relu's output)
    inputs.reserve(node->num_inputs());
    for (int i = 0; i < node->num_inputs(); ++i) inputs.push_back(fusion.Input(node, i));
    if (group >= 0) {
      const FusedGroup& g = fusion.groups[group];
      step.fused = &g;
      step.node = g.kernel_node;
      step.kernel = &g.kernel;
      step.num_outputs = static_cast<int>(g.outputs.size());
      for (const Output& o : g.outputs)
        step.output_slots.push_back(slot_base[o.node->id()] + o.index);
      inputs = g.inputs;
    }
    const auto& refs = step.node->op_def().ref_inputs;
    for (int i = 0; i < static_cast<int>(inputs.size()); ++i) {
      const Output& in = inputs[i];
      step.input_variables.push_back(nullptr);
      if (step.fused == nullptr && std::find(refs.begin(), refs.end(), i) != refs.end()) {
        step.input_slots.push_back(-1);
      } else if (IsVariable(in.node) && !fed_node[in.node->id()]) {
        step.input_slots.push_back(-1);
        step.input_variables.back() = &plan->variable_reads.emplace_back(in.node);
      } else {
        int slot = slot_base[in.node->id()] + in.index;
        step.input_slots.push_back(slot);
        last_reader[slot] = static_cast<int>(plan->steps.size());
      }
    }
    step.input_moves.assign(step.input_slots.size(), 0);
    plan->steps.push_back(std::move(step));
  }
  if (plan->has_switch) {
    for (Step& step : plan->steps) {
      for (const Node* c : step.node->control_inputs()) {
        if (step_of[c->id()] >= 0) step.control_steps.push_back(step_of[c->id()]);
      }
    }
  }
  for (const Output& f : fetches) {
    int slot = slot_base[f.node->id()] + f.index;
    plan->fetch_slots.push_back(slot);
    plan->fetch_variables.push_back(IsVariable(f.node) && !fed_node[f.node->id()]
                                        ? &plan->variable_reads.emplace_back(f.node)
                                        : nullptr);
    last_reader[slot] = -2;  // fetched: never moved out
  }
  for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s) {
    Step& step = plan->steps[s];
    for (size_t i = 0; i < step.input_slots.size(); ++i) {
      int slot = step.input_slots[i];
      if (slot < 0 || last_reader[slot] != s) continue;
      // Move only on the last use within this step too (an input may repeat: Mul(x, x)).
      bool later_in_step = false;
      for (size_t j = i + 1; j < step.input_slots.size(); ++j)
        if (step.input_slots[j] == slot) later_in_step = true;
      if (!later_in_step) step.input_moves[i] = 1;
    }
  }
  return plan;
}

const Session::Plan& Session::GetPlan(const FeedList& feeds, const std::vector<Output>& fetches,
                                      const std::vector<Operation>& targets) {
  // The signature: each feed's, fetch's and target's node and output index, in order, as
  // bytes. Built in this thread's buffer, which keeps its capacity: no allocation per Run.
  thread_local std::string key;
  key.clear();
  auto add = [](const void* p, int index) {
    key.append(reinterpret_cast<const char*>(&p), sizeof(p));
    key.append(reinterpret_cast<const char*>(&index), sizeof(index));
  };
  for (const auto& f : feeds) add(f.first.node, f.first.index);
  key.push_back('|');
  for (const auto& f : fetches) add(f.node, f.index);
  key.push_back('|');
  for (const auto& t : targets) add(t.node, 0);
  std::lock_guard<std::mutex> lock(plans_mu_);
  auto& slot = plans_[key];
  if (!slot) slot = BuildPlan(feeds, fetches, targets);
  return *slot;
}

}  // namespace loom
