#ifndef LOOM_RUNTIME_SESSION_PLAN_H_
#define LOOM_RUNTIME_SESSION_PLAN_H_

// What a Session runs for one (feeds, fetches, targets) signature: the steps in order, the
// value slots they read and write, the variables they read. Built once per signature by
// Session::BuildPlan (session_plan.cc) and run by Session::Run (session.cc); internal to
// the runtime.
#include <atomic>
#include <deque>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/graph/resource.h"
#include "loom/runtime/graph_fusion.h"
#include "loom/runtime/session.h"

namespace loom {

// A variable a plan reads, with its resource once found: the ResourceMgr never removes a
// resource (graph/resource.h), so the pointer stays valid for the Session's lifetime, and
// later reads skip the manager's lock and name lookup. Found on the first read that sees
// the variable (it may be created after the plan, by an initializer or a restore).
struct VariableRead {
  explicit VariableRead(const Node* n) : node(n) {}
  const Node* node;
  mutable std::atomic<VariableResource*> resource{nullptr};
};

// One kernel invocation in a plan.
struct Step {
  const Node* node;
  const KernelFn* kernel;
  std::vector<int> input_slots;                      // -1 for ref inputs and variable reads
  std::vector<const VariableRead*> input_variables;  // the variable read at this step, or nullptr
  std::vector<char> input_moves;                     // 1 when this step is the slot's last reader
  int first_output_slot;
  int num_outputs;
  // Filled only in a plan with a Switch (Plan::has_switch): the steps of this node's
  // control inputs (a control input that is no step, a variable or a fed node, is live).
  std::vector<int> control_steps;
  // A fused chain's step (graph_fusion.h): `node` is its kernel's node, and its outputs go
  // to these slots (the parts' outputs, not contiguous). nullptr for a node's own step.
  const FusedGroup* fused = nullptr;
  std::vector<int> output_slots;
};

inline int OutputSlot(const Step& step, int o) {
  return step.fused == nullptr ? step.first_output_slot + o : step.output_slots[o];
}

struct Session::Plan {
  std::vector<Step> steps;
  // A Switch among the steps: the run tracks dead values (RunWithDeadness). Without one no
  // value can be dead, and the plain loop runs.
  bool has_switch = false;
  int num_slots = 0;
  std::vector<int> feed_slots;
  std::vector<int> fetch_slots;
  std::vector<const VariableRead*> fetch_variables;  // per fetch: a variable read at the end
  std::deque<VariableRead> variable_reads;  // what input_variables and fetch_variables point to
  FusionPlan fusion;                        // what fused steps point to
};

}  // namespace loom

#endif  // LOOM_RUNTIME_SESSION_PLAN_H_
