#ifndef LOOM_RUNTIME_WHILE_LOOP_H_
#define LOOM_RUNTIME_WHILE_LOOP_H_

// tf.while_loop as a functional While op over a region of the same graph.
//
// The loop's condition and body are built into the graph like any other ops (so
// variables, name scopes, collections and layers work as usual), between the loop's
// LoopVar nodes (placeholder-like: the While kernel feeds them each iteration) and the
// While node. Nodes created in that id range are the loop's region. The While node
// references the region's outputs by attribute (node names), not by edges, so a
// Session's plan never schedules region nodes itself; its inputs are the loop variables'
// initial values and the region's captures: every outside tensor a region node reads and
// every variable it reads (read once, when the While starts). Control inputs from region
// nodes to outside nodes move to the While node.
//
// Each iteration runs the condition's nodes, then (while it is true and fewer than
// maximum_iterations iterations ran) the body's nodes, in node order, with the Session's
// resources and thread pool. A loop variable's shape may change between iterations only
// where its shape invariant leaves the dimension unknown. Errors inside the loop name the
// node and the iteration.
//
// Gradients: with back_prop, the While keeps every body value of every iteration while a
// gradient of the loop exists in the graph (a step-scoped record), and its gradient is a
// WhileGrad node that runs the body's gradient region in reverse over the iterations,
// summing the gradients of the captures (a weight used by every step of an RNN).
//
//   WhileBuilder loop(root, {i0, x0});
//   Output i = loop.loop_vars()[0], x = loop.loop_vars()[1];
//   std::vector<Output> result = loop.Finish(Less(loop.scope(), i, 5),
//                                            {Add(loop.scope(), i, 1), Mul(loop.scope(), x, x)});
//   // or, the same: WhileLoop(root, cond_fn, body_fn, {i0, x0});
//
// Thread-safety: building is single-threaded, as for any graph.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/graph/op_def.h"

namespace loom {

struct WhileOptions {
  // Stop after this many iterations even when the condition holds (TF's
  // maximum_iterations). Default: -1, no limit.
  int64_t maximum_iterations = -1;
  // Accepted for TF compatibility; iterations run one after another. Default: 10.
  int64_t parallel_iterations = 10;
  // Whether gradients flow through the loop; false makes them absent (TF's None) and
  // keeps no per-iteration record. Default: true.
  bool back_prop = true;
  // Per loop variable, the shape it keeps across iterations; nullopt (or a shorter list)
  // means the initial value's inferred shape. Default: empty.
  std::vector<std::optional<Shape>> shape_invariants;
  // The loop's name scope. Default: "while".
  std::string name = "while";
};

// Builds one loop in two phases: the constructor adds the loop variables, the caller
// builds the condition and the body on them (with scope(), or any scope of the graph),
// and Finish adds the While node. Nothing else may be added to the graph in between that
// does not belong to the loop.
class WhileBuilder {
 public:
  // Throws InvalidArgument for an invariant incompatible with its initial value.
  WhileBuilder(const Scope& scope, const std::vector<Output>& initial_values,
               WhileOptions options = {});
  WhileBuilder(const WhileBuilder&) = delete;
  WhileBuilder& operator=(const WhileBuilder&) = delete;

  // The loop's name scope ("while", "while_1", ...).
  const Scope& scope() const { return scope_; }
  // The values of the loop variables inside the loop (LoopVar nodes).
  const std::vector<Output>& loop_vars() const { return loop_vars_; }

  // Adds the While node and returns its outputs, the loop variables' final values.
  // `cond` is a scalar bool, `body_outputs` has one value per loop variable of its dtype
  // and a shape its invariant allows. Throws InvalidArgument naming the loop variable
  // otherwise. REQUIRES: called once.
  std::vector<Output> Finish(Output cond, const std::vector<Output>& body_outputs);

 private:
  Scope scope_;
  WhileOptions options_;
  std::vector<Output> initial_values_;
  std::vector<Output> loop_vars_;
  int first_node_id_ = 0;
  bool finished_ = false;
};

using WhileCondFn = std::function<Output(const Scope&, const std::vector<Output>& loop_vars)>;
using WhileBodyFn =
    std::function<std::vector<Output>(const Scope&, const std::vector<Output>& loop_vars)>;

// tf.while_loop(cond, body, loop_vars): WhileBuilder in one call.
std::vector<Output> WhileLoop(const Scope& scope, const WhileCondFn& cond, const WhileBodyFn& body,
                              const std::vector<Output>& initial_values, WhileOptions options = {});

// The op records LoopVar, While and WhileGrad.
const OpDef& LoopVarOp();
const OpDef& WhileOp();
const OpDef& WhileGradOp();
void RegisterWhileOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_RUNTIME_WHILE_LOOP_H_
