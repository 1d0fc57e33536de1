#include "loom/graph/graph.h"

#include <algorithm>
#include <charconv>

#include "loom/base/check.h"
#include "loom/graph/collections.h"
#include "loom/graph/op_def.h"

namespace loom {

DType Output::dtype() const { return node->output_dtype(index); }
const Shape& Output::shape() const { return node->output_shape(index); }
std::string Output::name() const { return StrCat(node->name(), ":", index); }
const std::string& Operation::name() const { return node->name(); }

const std::string& Node::op() const { return op_def_->name; }
std::string Node::description() const { return StrCat(op(), " '", name_, "'"); }

std::ostream& operator<<(std::ostream& os, const Output& output) {
  return os << (output.valid() ? output.name() : "<no output>");
}

bool BuildContext::Contains(const Node* node) const {
  for (const BuildContext* c = node->context(); c != nullptr; c = c->outer_) {
    if (c == this) return true;
  }
  return false;
}

BuildContext* Graph::PushContext(std::unique_ptr<BuildContext> context) {
  context->outer_ = context_;
  context_ = context.get();
  contexts_.push_back(std::move(context));
  return context_;
}

void Graph::PopContext(const BuildContext* context) {
  LOOM_CHECK(context_ == context) << "PopContext of a build context that is not the current one";
  context_ = context_->outer_;
}

void Graph::PushControlDependencies(std::vector<Node*> deps) {
  for (size_t i = 0; i < deps.size(); ++i) {
    if (deps[i] == nullptr || deps[i]->graph() != this) {
      throw InvalidArgument("control_dependencies: entry ", i,
                            deps[i] == nullptr ? " is empty" : " belongs to another graph",
                            "; pass ops or tensors of this graph");
    }
  }
  control_blocks_.push_back(ControlBlock{std::move(deps), {}});
}

void Graph::PopControlDependencies() {
  // A loom error, not a check: the Python front end's with-blocks call this, and a block
  // left out of order (inside a ContextOverride it did not open) must not abort the process.
  if (control_blocks_.empty()) {
    throw FailedPrecondition(
        "control_dependencies: no open block to close here (a block opened outside "
        "control_dependencies(None) / init_scope was closed inside it); close blocks in the "
        "order they were opened");
  }
  control_blocks_.pop_back();
}

std::vector<Node*> Graph::CurrentControlDependencies() const {
  std::vector<Node*> all;
  for (const ControlBlock& block : control_blocks_) {
    for (Node* dep : block.deps) {
      if (std::find(all.begin(), all.end(), dep) == all.end()) all.push_back(dep);
    }
  }
  return all;
}

Graph::Graph(GraphOptions options)
    : options_(options), collections_(std::make_unique<Collections>(*this)) {}
Graph::~Graph() = default;

std::string Graph::UniqueName(std::string_view base) {
  std::string name(base);
  int& counter = name_counters_[name];
  if (counter == 0 && !by_name_.count(name)) {
    counter = 1;
    return name;
  }
  for (;;) {
    std::string candidate = StrCat(name, "_", counter++);
    if (!by_name_.count(candidate) && !name_counters_.count(candidate)) {
      name_counters_[candidate] = 1;
      return candidate;
    }
  }
}

Node* Graph::AddNode(const OpDef& op, const std::string& name, std::vector<Output> inputs,
                     AttrMap attrs, std::vector<Node*> control_inputs) {
  if (finalized_) {
    throw FailedPrecondition("cannot add ", op.name, " '", name,
                             "': the graph is finalized (a MonitoredSession or Session "
                             "owns it now); build every op before the session starts");
  }
  if (name.empty() || by_name_.count(name)) {
    throw InvalidArgument("cannot add ", op.name, " '", name,
                          "': the name is empty or already used; use Graph::UniqueName");
  }
  // The open control_dependencies blocks' deps (TF1's _control_dependencies_for_inputs).
  for (const ControlBlock& block : control_blocks_) {
    bool dominated = false;
    for (const Output& in : inputs) dominated |= in.valid() && block.built.count(in.node) > 0;
    if (dominated) continue;
    for (Node* dep : block.deps) {
      bool is_input = false;
      for (const Output& in : inputs) is_input |= in.node == dep;
      if (!is_input &&
          std::find(control_inputs.begin(), control_inputs.end(), dep) == control_inputs.end()) {
        control_inputs.push_back(dep);
      }
    }
  }
  BuildContext* const context = context_;
  if (context != nullptr) {
    // Inputs first: an invalid or foreign one fails below, with the same message.
    bool inputs_ok = true;
    for (const Output& in : inputs) inputs_ok &= in.valid() && in.node->graph() == this;
    if (inputs_ok) context->AdaptNode(*this, op, name, inputs, control_inputs);
  }
  if (op.num_inputs != kVariadic && static_cast<int>(inputs.size()) != op.num_inputs) {
    throw InvalidArgument(op.name, " '", name, "' takes ", op.num_inputs, " inputs, got ",
                          inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) throw InvalidArgument(op.name, " '", name, "': input ", i, " is empty");
    if (inputs[i].node->graph() != this) {
      throw InvalidArgument(op.name, " '", name, "': input ", i, " (", inputs[i].name(),
                            ") belongs to another graph");
    }
  }
  for (int r : op.ref_inputs) {
    const Node* producer = inputs[r].node;
    if (producer->op_def().role != OpRole::kVariable) {
      throw InvalidArgument(op.name, " '", name, "': input ", r, " must be a variable, got ",
                            producer->description());
    }
  }
  CheckNodeAttrs(op, name, attrs);
  auto node = std::unique_ptr<Node>(new Node());
  node->id_ = static_cast<int>(nodes_.size());
  node->name_ = name;
  node->op_def_ = &op;
  node->graph_ = this;
  node->inputs_ = std::move(inputs);
  node->control_inputs_ = std::move(control_inputs);
  node->attrs_ = std::move(attrs);
  node->context_ = context;
  if (op.shape) {
    InferenceContext ctx(*node);
    op.shape(ctx);
    node->output_dtypes_ = ctx.output_dtypes();
    node->output_shapes_ = ctx.output_shapes();
    for (size_t i = 0; i < node->output_dtypes_.size(); ++i) {
      LOOM_CHECK(node->output_dtypes_[i] != DType::kInvalid)
          << node->description() << " shape function left output " << i << " unset";
      // The record's dtype rule against what the shape rule set: a disagreement is a
      // record that lets inputs of mixed dtypes through, or a rule that says otherwise.
      const DTypeRule* rule = OutputDTypeRule(op, static_cast<int>(i));
      const DType want = rule ? rule->Resolve(*node, static_cast<int>(i)) : DType::kInvalid;
      if (want != DType::kInvalid && want != node->output_dtypes_[i]) {
        throw InvalidArgument(node->description(), ": output ", i, " has dtype ",
                              DTypeName(node->output_dtypes_[i]), ", but the record's rule says ",
                              rule->ToString(), " (", DTypeName(want),
                              "); check the inputs' dtypes (insert a Cast) or fix the rule");
      }
    }
  }
  LOOM_CHECK(op.num_outputs == kVariadic || node->num_outputs() == op.num_outputs)
      << node->description() << " declares " << op.num_outputs << " outputs; its shape rule set "
      << node->num_outputs();
  Node* raw = node.get();
  for (ControlBlock& block : control_blocks_) block.built.insert(raw);
  by_name_[name] = raw;
  name_counters_.try_emplace(name, 1);
  nodes_.push_back(std::move(node));
  return raw;
}

Node* Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

Output Graph::GetOutput(std::string_view name) const {
  std::string node_name(name);
  int index = 0;
  auto colon = name.rfind(':');
  if (colon != std::string_view::npos) {
    node_name = std::string(name.substr(0, colon));
    // A name comes from files (GraphDef inputs, signatures): from_chars, never std::stoi,
    // whose invalid_argument / out_of_range would escape as non-loom errors.
    const std::string_view digits = name.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      throw InvalidArgument("tensor name '", name, "': '", digits,
                            "' after the ':' is not an output index; write 'node' or 'node:N'");
    }
  }
  Node* node = FindNode(node_name);
  if (node == nullptr) {
    std::vector<std::string> similar;
    for (const auto& n : nodes_) {
      if (n->name().find(node_name) != std::string::npos ||
          node_name.find(n->name()) != std::string::npos) {
        similar.push_back(n->name());
        if (similar.size() == 5) break;
      }
    }
    throw NotFound("no node named '", node_name, "' in the graph",
                   similar.empty() ? "" : "; similar names: ", StrJoin(similar, ", "));
  }
  if (index < 0 || index >= node->num_outputs()) {
    throw NotFound(node->description(), " has ", node->num_outputs(), " outputs; ", name,
                   " does not exist");
  }
  return Output(node, index);
}

std::vector<Node*> Graph::Variables() const {
  std::vector<Node*> result;
  for (const auto& n : nodes_)
    if (n->op_def().role == OpRole::kVariable) result.push_back(n.get());
  return result;
}

std::vector<Node*> Graph::TrainableVariables() const {
  std::vector<Node*> result;
  for (Node* n : Variables())
    if (n->attrs().GetOr<bool>("trainable", true)) result.push_back(n);
  return result;
}

}  // namespace loom
