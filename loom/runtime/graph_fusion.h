#ifndef LOOM_RUNTIME_GRAPH_FUSION_H_
#define LOOM_RUNTIME_GRAPH_FUSION_H_

// The Session's plan-time fusion pass, TF grappler's remapper (_FusedConv2D): chains of
// nn nodes in a plan run as one kernel (loom/ops/nn_fused.h says what each computes):
//   Conv2D -> BiasAdd -> Relu (or a prefix with at least two nodes, or Conv2D -> Relu)
//   MatMul -> BiasAdd -> Relu (likewise: a dense layer)
//   MaxPoolGrad -> ReluGrad -> BiasAddGrad (or MaxPoolGrad -> ReluGrad, ReluGrad -> BiasAddGrad)
// The graph is not changed: the plan holds a step per chain instead of one per node, so
// C++ graphs, job files, imported GraphDefs and Python graphs all get it.
//
// A chain fuses only when nothing else can see what fusion removes: each value the chain
// no longer writes (the Conv2D's, MatMul's and BiasAdd's outputs, the MaxPoolGrad's) has no other
// reader in the plan and is not fetched, and no node of the chain is fed, has or is a
// control dependency, or schedules early; plans with a Switch are not fused.
// A ReluGrad(dy, z) whose z is also the input of a Relu y in the plan reads y instead
// (relu'(z) = [z > 0] = [y > 0], NaN where either is NaN), so that z has no other reader.
// SessionOptions::fuse_ops = false turns the pass off.
// Thread-safety: PlanFusion is a pure function of its arguments.
#include <string>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/graph/op_def.h"

namespace loom {

// The attribute that moves a node up in the plan's order (session_plan.cc); such nodes never fuse.
inline constexpr char kScheduleEarlyAttr[] = "_schedule_early";

// One fused chain.
struct FusedGroup {
  std::vector<const Node*> parts;  // in node order
  const Node* kernel_node;         // the KernelContext's node: attributes and errors
  std::vector<Output> inputs;      // what the kernel reads, in its order
  std::vector<Output> outputs;     // the parts' outputs it writes, in its order
  KernelFn kernel;
  std::string name;  // "conv1/Conv2D+conv1/BiasAdd+conv1/Relu": traces and errors
  std::string op;    // "Conv2D+BiasAdd+Relu"
  int run_at;        // the node id whose place in node order the group's step takes
};

struct FusionPlan {
  std::vector<FusedGroup> groups;
  // Per node id: the index of the group the node belongs to, or -1.
  std::vector<int> group_of;
  // Inputs read from another output than the graph's edge says: (node id, input index,
  // the output read instead). The ReluGrad rewiring above.
  struct Rewire {
    int node;
    int input;
    Output from;
  };
  std::vector<Rewire> rewired;  // in node order
  // Per node id: the index of its first entry in `rewired`, or -1.
  std::vector<int> first_rewire;

  // The output that input `i` of `node` reads in the plan.
  Output Input(const Node* node, int i) const;
};

// The chains to fuse among the `needed` nodes (per node id) of a plan with these fed nodes
// (per node id) and fetches. Targets need no care: a fused node still runs.
FusionPlan PlanFusion(const Graph& graph, const std::vector<char>& needed,
                      const std::vector<char>& fed, const std::vector<Output>& fetches);

}  // namespace loom

#endif  // LOOM_RUNTIME_GRAPH_FUSION_H_
