#ifndef LOOM_OPS_CONTROL_H_
#define LOOM_OPS_CONTROL_H_

// Conditional execution, TF1's tf.cond: the Switch and Merge ops and the Cond builder.
//
//   Output lr = Cond(s, Less(s, step, warmup),
//                    [&](const Scope& b) { return std::vector<Output>{Mul(b, base, frac)}; },
//                    [&](const Scope& b) { return std::vector<Output>{Identity(b, base)}; })[0];
//
// Switch(data, pred) forwards data to output_true when pred is true, else to
// output_false; the other output is dead (has no value). The Session does not run a node
// with a dead input or control input, and its outputs are dead in turn; Merge(inputs)
// forwards its one live input, and its value_index says which. So only the chosen branch
// of a Cond runs: its assignments, summaries and random draws happen, the other's do not.
// Fetching a dead value fails (InvalidArgument naming the Switch); a dead target does not
// run.
//
// Cond builds each branch inside a build context (graph.h's BuildContext) that puts every
// tensor from outside the branch through a Switch on pred (one per tensor and branch) and
// gives each op without a data input a control input on the branch's pivot (an Identity of
// Switch(pred, pred)'s output for that branch), so that C++ builders, layers and the Python
// front end all build branches the same way. Variables are not built inside a branch: the
// Variable builder lifts the variable and its initializer out of every context (TF's
// init_scope), and its initial value must not come from inside a branch (InvalidArgument).
// Gradients flow through both ops: d/d(data) of Switch is Merge of its outputs' gradients
// (zeros for the side without one), and Merge's gradient reaches input i through a Switch on
// value_index == i, so a variable used in one branch gets a zero gradient when the other
// one runs, as in TF1.
#include <functional>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

struct SwitchOutputs {
  Output output_false;
  Output output_true;
};
// REQUIRES: pred is a bool scalar.
SwitchOutputs Switch(const Scope& scope, Input data, Output pred);

struct MergeOutputs {
  Output output;
  Output value_index;  // int32 scalar: which input was live
};
// Inputs of one dtype; the output's shape is what they share. REQUIRES: inputs non-empty.
MergeOutputs Merge(const Scope& scope, const std::vector<Output>& inputs);

// A branch: builds its ops with the scope it is given and returns its results.
using BranchFn = std::function<std::vector<Output>(const Scope&)>;

// tf.cond: the results of true_fn when pred (a bool scalar) is true at run time, else
// false_fn's; only that branch's ops run. Nodes go under the name scope `name` (made
// unique), which both branch functions get. Both branches must return as many results, of
// the same dtypes (InvalidArgument naming the result otherwise); a result that is a tensor
// from outside the branch is passed through.
std::vector<Output> Cond(const Scope& scope, Output pred, const BranchFn& true_fn,
                         const BranchFn& false_fn, std::string_view name = "cond");

// True while `graph` builds a Cond branch (its current build context is one).
bool InCondBranch(const Graph& graph);

// TF's Assert (tf.debugging.Assert): when run with `condition` (a bool scalar) false, the
// Run fails with InvalidArgument naming the node and showing up to `summarize` elements of
// each `data` tensor; true does nothing. It has no outputs: make it a control input of
// what must wait for it (Scope::WithControlDependencies), as TF1 code does, or run it as
// a target. Inside a cond branch it checks only when its branch runs.
Operation Assert(const Scope& scope, Output condition, const std::vector<Output>& data,
                 int64_t summarize = 3);

void RegisterControlOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_CONTROL_H_
