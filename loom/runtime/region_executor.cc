#include "loom/runtime/region_executor.h"

#include <algorithm>
#include <utility>

namespace loom {

RegionPlan::RegionPlan(const Graph& graph, const std::vector<Output>& fed,
                       const std::vector<Output>& targets, int first_id, int end_id,
                       const std::string& owner, bool move_last_reads) {
  auto in_range = [&](const Node* n) { return n->id() >= first_id && n->id() < end_id; };
  for (const Output& f : fed) {
    auto [it, inserted] = slot_of_.emplace(Key(f), num_slots_);
    if (inserted) {
      ++num_slots_;
      slot_outputs_.push_back(f);
    }
    fed_slots_.push_back(it->second);
  }
  // Reverse reachability from the targets, stopping at fed values and variables.
  const int n = graph.num_nodes();
  std::vector<char> needed(n, 0);
  std::vector<const Node*> stack;
  auto want_value = [&](const Output& out) {
    if (slot_of_.count(Key(out)) || IsVariable(out.node)) return;
    if (!in_range(out.node)) {
      throw Internal(owner, ": ", out.name(),
                     " is read inside the loop but is neither inside it nor captured");
    }
    if (!needed[out.node->id()]) {
      needed[out.node->id()] = 1;
      stack.push_back(out.node);
    }
  };
  for (const Output& t : targets) want_value(t);
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (!IsRefInput(node, i)) want_value(node->input(i));
    }
    for (const Node* c : node->control_inputs()) {
      if (in_range(c) && !needed[c->id()]) {
        needed[c->id()] = 1;
        stack.push_back(c);
      }
    }
  }
  for (int id = first_id; id < end_id && id < n; ++id) {
    if (!needed[id]) continue;
    const Node* node = graph.node(id);
    if (!node->op_def().kernel) throw Unimplemented(node->description(), " has no CPU kernel");
    Step step{.node = node, .first_output_slot = num_slots_};
    for (int o = 0; o < node->num_outputs(); ++o) {
      slot_of_.emplace(Key(Output(graph.node(id), o)), num_slots_++);
      slot_outputs_.push_back(Output(graph.node(id), o));
    }
    steps_.push_back(std::move(step));
  }
  std::vector<int> step_of(n, -1);
  for (size_t s = 0; s < steps_.size(); ++s) step_of[steps_[s].node->id()] = static_cast<int>(s);
  for (Step& step : steps_) {
    const Node* node = step.node;
    for (const Node* c : node->control_inputs()) {
      if (in_range(c) && step_of[c->id()] >= 0) step.control_steps.push_back(step_of[c->id()]);
    }
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Output& in = node->input(i);
      step.input_variables.push_back(nullptr);
      if (IsRefInput(node, i)) {
        step.input_slots.push_back(-1);
      } else if (auto it = slot_of_.find(Key(in)); it != slot_of_.end()) {
        step.input_slots.push_back(it->second);
      } else {  // a variable that is not captured: read when its reader runs
        step.input_slots.push_back(-1);
        step.input_variables.back() = in.node;
      }
    }
  }
  for (const Output& t : targets) target_slots_.push_back(SlotOf(t));
  std::vector<int> last_reader(num_slots_, -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int slot : steps_[s].input_slots) {
      if (slot >= 0) last_reader[slot] = static_cast<int>(s);
    }
  }
  for (int slot : target_slots_) {
    if (slot >= 0) last_reader[slot] = -2;  // read after Run: never moved
  }
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& step = steps_[s];
    step.input_moves.assign(step.input_slots.size(), 0);
    if (!move_last_reads) continue;
    for (size_t i = 0; i < step.input_slots.size(); ++i) {
      const int slot = step.input_slots[i];
      if (slot < 0 || last_reader[slot] != static_cast<int>(s)) continue;
      // Only the last use within the step moves (an input may repeat: Mul(x, x)).
      bool later = false;
      for (size_t j = i + 1; j < step.input_slots.size(); ++j) later |= step.input_slots[j] == slot;
      step.input_moves[i] = later ? 0 : 1;
    }
  }
}

int RegionPlan::SlotOf(const Output& out) const {
  auto it = slot_of_.find(Key(out));
  return it == slot_of_.end() ? -1 : it->second;
}

bool RegionPlan::Runs(const Node* node) const {
  return std::any_of(steps_.begin(), steps_.end(), [&](const Step& s) { return s.node == node; });
}

void RegionPlan::Run(std::vector<Tensor>& slots, const KernelContext& outer, int64_t iteration,
                     std::string_view loop) const {
  auto what = [&] { return StrCat("iteration ", iteration, " of ", loop); };
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::vector<char> step_dead(steps_.size(), 0);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    const Node& node = *step.node;
    const bool merge = node.op_def().role == OpRole::kMerge;
    // Dead (not run, outputs left undefined) when a data input is dead (a Merge: when
    // every one is) or, except for a Merge, a control input's node is.
    bool any_live = false;
    bool any_dead = false;
    for (int slot : step.input_slots) {
      if (slot < 0 || slots[slot].defined()) {  // a variable or ref input is never dead
        any_live = true;
      } else {
        any_dead = true;
      }
    }
    bool dead = merge ? !any_live : any_dead;
    if (!merge) {
      for (int c : step.control_steps) dead = dead || step_dead[c] != 0;
    }
    if (dead) {
      step_dead[s] = 1;
      continue;
    }
    inputs.assign(step.input_slots.size(), Tensor());
    for (size_t i = 0; i < step.input_slots.size(); ++i) {
      if (step.input_slots[i] >= 0) {
        Tensor& slot = slots[step.input_slots[i]];
        inputs[i] = step.input_moves[i] ? std::move(slot) : slot;
      } else if (const Node* var = step.input_variables[i]) {
        auto* resource = outer.resources().Lookup<VariableResource>(var->name());
        inputs[i] = resource != nullptr ? resource->Read() : Tensor();
        if (!inputs[i].defined()) {
          throw FailedPrecondition("attempting to use uninitialized variable '", var->name(),
                                   "' in ", node.description(), ", ", what(),
                                   ": run GlobalVariablesInitializer() or restore a checkpoint "
                                   "first")
              .AtNode(outer.node().name());
        }
      }
    }
    outputs.assign(node.num_outputs(), Tensor());
    KernelContext ctx(node, std::span<Tensor>(inputs.data(), inputs.size()), outputs, outer.pool(),
                      outer.resources(), outer.step_id());
    try {
      node.op_def().kernel(ctx);
    } catch (const Error& e) {
      if (e.node() == outer.node().name()) throw;  // a nested loop already named it
      std::string message = e.message();
      if (e.node() != node.name()) message += StrCat(" [in ", node.description(), "]");
      throw Error(e.code(), StrCat(message, " [", what(), "]")).AtNode(outer.node().name());
    }
    const bool is_switch = node.op_def().role == OpRole::kSwitch;
    for (int o = 0; o < node.num_outputs(); ++o) {
      Tensor& t = outputs[o];
      if (is_switch && !t.defined()) continue;  // the untaken side: dead
      if (!t.defined() || t.dtype() != node.output_dtype(o)) {
        throw Internal(node.description(), " produced ",
                       t.defined() ? DTypeName(t.dtype()) : "no value", " for output ", o,
                       ", expected ", DTypeName(node.output_dtype(o)), " [", what(), "]");
      }
      slots[step.first_output_slot + o] = std::move(t);
    }
  }
}

}  // namespace loom
