#ifndef LOOM_RUNTIME_REGION_EXECUTOR_H_
#define LOOM_RUNTIME_REGION_EXECUTOR_H_

// The executor of a loop's region (while_loop.h): the nodes of a node-id range that
// `targets` need, in node order, each value in a slot. Values that the caller supplies
// (loop variables, captures, a forward iteration's values) are `fed`; a node outside the
// range that is neither fed nor a variable is a bug of the builder (Internal). Control
// inputs to nodes outside the range are skipped (the builder moved them to the loop's
// node). A small loop over kernels. By default no value moves out of its slot, so every
// slot still holds its value after Run (the While's gradient record keeps them); with
// `move_last_reads` (a plan whose slots nobody keeps: the gradient region) a step that is
// the last to read a slot that is no target takes the value, so a kernel may reuse its
// buffer in place (KernelContext::ForwardInputOrAllocate).
// Dead values (a tf.cond inside the region), as the Session's executor has them: a
// Switch gives a value only to its taken output; a slot left without a value (an
// undefined Tensor) is dead, and so is every node that reads a dead value or has a dead
// node as a control input, except a Merge, which runs when any data input is live and
// sees its dead inputs as undefined tensors. A fed slot may be dead (a gradient region
// fed a forward iteration's values); a dead target is left undefined for the caller.
// Thread-safety: a plan is immutable after Build; Run may be called from several
// threads with separate slot vectors.
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

// The node roles the executors (Session's plan, a loop's region) ask about.
inline bool IsVariable(const Node* node) { return node->op_def().role == OpRole::kVariable; }
inline bool IsRefInput(const Node* node, int i) {
  const auto& refs = node->op_def().ref_inputs;
  return std::find(refs.begin(), refs.end(), i) != refs.end();
}

class RegionPlan {
 public:
  // REQUIRES: every target is fed or reachable inside [first_id, end_id).
  RegionPlan(const Graph& graph, const std::vector<Output>& fed, const std::vector<Output>& targets,
             int first_id, int end_id, const std::string& owner, bool move_last_reads = false);

  int num_slots() const { return num_slots_; }
  // The slot of fed[i] and of targets[i].
  int fed_slot(int i) const { return fed_slots_[i]; }
  int target_slot(int i) const { return target_slots_[i]; }
  // The slot holding `out` after Run, or -1 when the plan neither feeds nor computes it.
  int SlotOf(const Output& out) const;
  bool Runs(const Node* node) const;
  // The output each slot holds, by slot.
  const std::vector<Output>& slot_outputs() const { return slot_outputs_; }

  // Runs the plan's kernels over `slots` (num_slots() long, fed slots filled) in the
  // context of the loop's own kernel `outer`. A kernel error is rethrown naming the
  // node and "iteration <iteration> of <loop>" (loop: "While 'while/While'"), and marked
  // as the outer node's.
  void Run(std::vector<Tensor>& slots, const KernelContext& outer, int64_t iteration,
           std::string_view loop) const;

 private:
  struct Step {
    const Node* node;
    std::vector<int> input_slots;              // -1: ref input or variable read
    std::vector<const Node*> input_variables;  // the variable read, or nullptr
    int first_output_slot;
    std::vector<int> control_steps;  // the steps of its control inputs inside the region
    std::vector<char> input_moves;   // 1: this step is the slot's last reader (and moves it)
  };
  static int64_t Key(const Output& out) {
    return (static_cast<int64_t>(out.node->id()) << 16) | out.index;
  }

  std::vector<Step> steps_;
  std::unordered_map<int64_t, int> slot_of_;  // Key(output) -> slot
  std::vector<int> fed_slots_;
  std::vector<int> target_slots_;
  std::vector<Output> slot_outputs_;
  int num_slots_ = 0;
};

}  // namespace loom

#endif  // LOOM_RUNTIME_REGION_EXECUTOR_H_
