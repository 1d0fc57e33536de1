#ifndef LOOM_GRAPH_OP_DEF_H_
#define LOOM_GRAPH_OP_DEF_H_

// The op record: one struct holds everything about an op — its signature, shape rule,
// CPU kernel and gradient — side by side in its family file (ops/math.cc, ...). Builders
// pass the record to Scope::AddNode directly; an OpRegistry (filled by explicit Register
// calls) maps names to records only for loading serialized graphs.
//
// The contexts each function receives:
//   InferenceContext  at AddNode: input dtypes/shapes and attrs in, output dtypes/shapes out.
//   KernelContext     at Session::Run: input tensors in, output tensors out.
//   GradContext       in Gradients(): the node, its inputs/outputs and incoming gradients;
//                     the rule builds gradient ops with scope() and returns one GradOutput
//                     per input (invalid where no gradient flows to that input).
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "loom/base/thread_pool.h"
#include "loom/graph/dtype_rule.h"
#include "loom/graph/graph.h"
#include "loom/graph/op_sample.h"
#include "loom/graph/resource.h"
#include "loom/graph/scope.h"

namespace loom {

class InferenceContext;
class KernelContext;
class GradContext;

// A gradient: dense, or sparse as IndexedSlices (rows `values` at `indices` of a tensor
// whose shape is `dense_shape`), as Gather produces for embedding tables.
struct GradOutput {
  Output dense;
  Output indices;
  Output values;
  Output dense_shape;

  GradOutput() = default;
  GradOutput(Output d) : dense(d) {}
  static GradOutput Sparse(Output indices, Output values, Output dense_shape) {
    GradOutput g;
    g.indices = indices;
    g.values = values;
    g.dense_shape = dense_shape;
    return g;
  }
  bool is_sparse() const { return indices.valid(); }
  bool valid() const { return dense.valid() || indices.valid(); }
};

using ShapeFn = std::function<void(InferenceContext&)>;
using KernelFn = std::function<void(KernelContext&)>;
using GradFn = std::function<std::vector<GradOutput>(const GradContext&)>;

// kSwitch and kMerge are the control-flow ops (ops/control.h), which the Session treats
// specially: a Switch leaves one output without a value ("dead"), a node with a dead input
// or control input does not run and its outputs are dead, and a Merge runs when any input
// is live (docs/engine.md, "Conditional execution").
enum class OpRole { kNormal, kConst, kPlaceholder, kVariable, kSwitch, kMerge };

inline constexpr int kVariadic = -1;

struct OpDef {
  std::string name;
  // Number of inputs, or kVariadic.
  int num_inputs = 0;
  // Inputs that name a variable (their producer must be a Variable node) rather than
  // carry a value: the kernel reaches the variable through KernelContext::variable(i),
  // and the producer is not run for them (so an initializer can assign a fresh variable).
  std::vector<int> ref_inputs;
  // Stateful ops (variables, assignments, random numbers, iterators) have effects or
  // results that differ between runs.
  bool stateful = false;
  OpRole role = OpRole::kNormal;
  // The attributes a node of this op takes (declared with Attr<T> keys). Graph::AddNode
  // rejects an undeclared, missing or ill-typed attribute and fills in defaults, so the
  // functions below read attributes without checks. Names starting with '_' are
  // annotations (placement, "_initializer") that no record declares, as in TF.
  std::vector<AttrDef> attrs;
  // How many outputs every node of the op has, or kVariadic when the attributes or inputs
  // decide (IteratorGetNext, Split). Checked against the shape rule at AddNode.
  int num_outputs = 1;
  // How each output's dtype follows from the node (dtype_rule.h): one rule per output, or
  // one rule for every output when num_outputs is kVariadic. Required of every record with
  // outputs (ValidateOpDef); Graph::AddNode fails when the shape rule disagrees.
  std::vector<DTypeRule> output_dtypes;
  ShapeFn shape;
  KernelFn kernel;
  // Empty for ops without a gradient; then `no_gradient` says why (e.g. "integer
  // output"), and Gradients() reports it when asked to differentiate through the op.
  GradFn grad;
  std::string no_gradient;
  // The op sweep's sample (op_sample.h), for an op the sweep cannot sample from the
  // signature alone (a required attribute, integer or shaped inputs); or, in not_swept, why
  // the sweep cannot run the op alone ("needs a variable input") and which test covers it.
  std::function<OpSample()> sample;
  std::string not_swept;
};

// The rule for output `i` of `op` (its own, or the one rule of a variadic op); nullptr
// when the record declares none.
const DTypeRule* OutputDTypeRule(const OpDef& op, int i);

// The attribute reads every context offers, over its node's attributes (checked against
// the record at construction): attr(kKey), find_attr(kKey) for an optional one.
template <typename Context>
class NodeAttrReader {
 public:
  template <typename T>
  const T& attr(const Attr<T>& key) const {
    return self().node().attr(key);
  }
  template <typename T>
  const T* find_attr(const Attr<T>& key) const {
    return self().node().find_attr(key);
  }

 private:
  const Context& self() const { return static_cast<const Context&>(*this); }
};

class InferenceContext : public NodeAttrReader<InferenceContext> {
 public:
  explicit InferenceContext(const Node& node) : node_(node) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return node_.num_inputs(); }
  const Output& input(int i) const { return node_.input(i); }
  DType input_dtype(int i) const { return node_.input(i).dtype(); }
  const Shape& input_shape(int i) const { return node_.input(i).shape(); }
  // The value of input i when its producer is a Const node, else nullptr.
  const Tensor* input_constant(int i) const;

  void set_output(int i, DType dtype, const Shape& shape);
  // Sets output i's shape; its dtype is the one the record's rule gives (output_dtype).
  // REQUIRES: the rule decides output i's dtype (not kByShapeRule).
  void set_output_shape(int i, const Shape& shape);
  // The dtype the record's rule gives output i, or kInvalid where it does not decide.
  DType output_dtype(int i) const;
  const std::vector<DType>& output_dtypes() const { return dtypes_; }
  const std::vector<Shape>& output_shapes() const { return shapes_; }

  // Throws InvalidArgument prefixed with the node's description.
  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    throw InvalidArgument(node_.description(), ": ", args...);
  }
  // Fails unless input i has one of `allowed` dtypes.
  void ExpectDType(int i, std::initializer_list<DType> allowed) const;
  // Fails unless inputs i and j have the same dtype.
  void ExpectSameDType(int i, int j) const;
  // Fails unless input i has rank `rank` (when known).
  void ExpectRank(int i, int rank) const;

 private:
  const Node& node_;
  std::vector<DType> dtypes_;
  std::vector<Shape> shapes_;
};

// NumPy broadcasting of two (partial) shapes; fails naming the node and both shapes.
Shape BroadcastShapes(const InferenceContext& ctx, const Shape& a, const Shape& b);

class KernelContext : public NodeAttrReader<KernelContext> {
 public:
  KernelContext(const Node& node, std::span<Tensor> inputs, std::vector<Tensor>& outputs,
                ThreadPool& pool, ResourceMgr& resources, int64_t step_id)
      : node_(node),
        inputs_(inputs),
        outputs_(outputs),
        pool_(pool),
        resources_(resources),
        step_id_(step_id) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Undefined for ref inputs (use variable(i)).
  const Tensor& input(int i) const { return inputs_[i]; }

  // A new tensor of output i's dtype.
  Tensor AllocateOutput(int i, const Shape& shape);
  // Reuses input `in`'s buffer for output `out` when nothing else views it, it is owned,
  // and dtype and element count match; otherwise allocates. Lets elementwise ops run in
  // place on intermediate values.
  Tensor ForwardInputOrAllocate(int in, int out, const Shape& shape);
  void set_output(int i, Tensor t) { outputs_[i] = std::move(t); }

  ThreadPool& pool() const { return pool_; }
  ResourceMgr& resources() const { return resources_; }
  // The variable that ref input i names. Its value is undefined until initialized.
  VariableResource& variable(int i) const;
  int64_t step_id() const { return step_id_; }

  template <typename... Args>
  [[noreturn]] void Fail(const Args&... args) const {
    throw InvalidArgument(node_.description(), ": ", args...).AtNode(node_.name());
  }

 private:
  const Node& node_;
  std::span<Tensor> inputs_;
  std::vector<Tensor>& outputs_;
  ThreadPool& pool_;
  ResourceMgr& resources_;
  int64_t step_id_;
};

class GradContext : public NodeAttrReader<GradContext> {
 public:
  GradContext(const Scope& scope, const Node& node, std::vector<Output> grads)
      : scope_(scope), node_(node), grads_(std::move(grads)) {}

  // Build gradient ops here (a "gradients/<node name>" name scope).
  const Scope& scope() const { return scope_; }
  const Node& node() const { return node_; }
  Output input(int i) const { return node_.input(i); }
  Output output(int i = 0) const { return Output(const_cast<Node*>(&node_), i); }
  // The incoming gradient of output i; invalid when none flows into it.
  const Output& grad(int i = 0) const { return grads_[i]; }

 private:
  const Scope& scope_;
  const Node& node_;
  std::vector<Output> grads_;
};

// Throws InvalidArgument naming the op and the field when the record is malformed: no
// name, no kernel, neither a gradient nor a reason for none, a ref input out of range,
// outputs without dtype rules, a rule naming an input or an attribute the op lacks, both a
// sample and a not_swept reason,
// duplicate or '_'-prefixed attribute names, a default or allowed value of another kind
// than its attribute, a default that is not among the allowed values.
void ValidateOpDef(const OpDef& op);

// Checks `attrs` against `op`'s declared attributes for node `name` and fills in
// defaults. Throws InvalidArgument naming the op, the node and the attribute for an
// undeclared, missing or ill-typed attribute or a value outside the allowed ones. An
// empty list read from a GraphDef (stored as list(int)) takes the declared list kind.
void CheckNodeAttrs(const OpDef& op, const std::string& name, AttrMap& attrs);

// Maps op names to records, for loading serialized graphs. Filled by explicit calls
// (RegisterMathOps(registry), ...); holds pointers to records that outlive it.
class OpRegistry {
 public:
  // Validates the record (ValidateOpDef) and adds it. Throws InvalidArgument naming the
  // op for an invalid record or for another record already registered under its name.
  void Register(const OpDef& op);
  // nullptr when unknown.
  const OpDef* Find(const std::string& name) const;
  // Throws NotFound naming the op and what to register.
  const OpDef& Get(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, const OpDef*> ops_;
};

}  // namespace loom

#endif  // LOOM_GRAPH_OP_DEF_H_
