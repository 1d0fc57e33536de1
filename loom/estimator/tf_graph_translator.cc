#include "loom/estimator/tf_graph_translator.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <stdexcept>

#include "loom/estimator/all_ops.h"
#include "loom/estimator/tf_ops.h"
#include "loom/graph/graph_def_proto.h"

namespace loom::tf_import {

std::pair<std::string, int> ParseTensorName(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < name.size() &&
      std::all_of(name.begin() + colon + 1, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    int index = 0;
    const auto [end, ec] =
        std::from_chars(name.data() + colon + 1, name.data() + name.size(), index);
    if (ec != std::errc() || end != name.data() + name.size()) {
      throw InvalidArgument("TF tensor name '", name, "': output index ", name.substr(colon + 1),
                            " is out of range; the GraphDef is damaged");
    }
    return {std::string(name.substr(0, colon)), index};
  }
  return {std::string(name), 0};
}

std::string CanonicalTensorName(std::string_view name) {
  auto [node, index] = ParseTensorName(name);
  return StrCat(node, ":", index);
}

GraphTranslator::GraphTranslator(const proto::GraphDef& def, const TfCheckpointReader* variables,
                                 Graph& graph, const std::string& source)
    : variables_(variables), graph_(graph), source_(source) {
  for (const proto::NodeDef& n : def.node()) nodes_[n.name()] = &n;
}

const proto::NodeDef& GraphTranslator::NodeDef(const std::string& name) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) throw NotFound(source_, ": the graph has no node '", name, "'");
  return *it->second;
}

std::vector<const proto::NodeDef*> GraphTranslator::Needed(
    const std::vector<std::string>& outputs) const {
  std::vector<const proto::NodeDef*> needed;
  std::set<std::string> seen;
  std::vector<std::string> stack;
  for (const std::string& t : outputs) {
    if (!fed_.count(CanonicalTensorName(t))) stack.push_back(ParseTensorName(t).first);
  }
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (!seen.insert(name).second) continue;
    const proto::NodeDef& n = NodeDef(name);
    needed.push_back(&n);
    for (const std::string& input : n.input()) {
      const bool control = input.starts_with("^");
      const std::string source = control ? input.substr(1) : ParseTensorName(input).first;
      if (control ? IsFedNode(source) : fed_.count(CanonicalTensorName(input)) > 0) continue;
      if (!nodes_.count(source)) {
        throw InvalidArgument(source_, ": TF node '", n.name(), "' (", n.op(), ") has ",
                              control ? "control input '" : "input '", input,
                              "', but the graph has no node '", source,
                              "'; the GraphDef is incomplete (freeze or export it again, "
                              "keeping the nodes its outputs depend on)");
      }
      stack.push_back(source);
    }
  }
  return needed;
}

std::string GraphTranslator::Resolve(const std::string& tensor) const {
  std::string t = CanonicalTensorName(tensor);
  for (int hops = 0; hops < 100 && !fed_.count(t); ++hops) {
    auto it = nodes_.find(ParseTensorName(t).first);
    if (it == nodes_.end() || it->second->op() != "Identity" || it->second->input_size() == 0) {
      break;
    }
    t = CanonicalTensorName(it->second->input(0));
  }
  return t;
}

std::optional<std::vector<TfExampleFeature>> GraphTranslator::ExampleFeatures(
    const proto::NodeDef& n) const {
  auto attr_i = [&](const char* name) {
    return n.attr().count(name) ? n.attr().at(name).i() : int64_t{0};
  };
  const int64_t num_sparse = attr_i("Nsparse"), num_dense = attr_i("Ndense");
  if (n.input_size() < 2 + num_sparse + 2 * num_dense) return std::nullopt;
  // A constant's TensorProto, or nullptr.
  auto constant = [&](int input) -> const proto::TensorProto* {
    auto it = nodes_.find(ParseTensorName(Resolve(n.input(input))).first);
    if (it == nodes_.end() || it->second->op() != "Const" || !it->second->attr().count("value")) {
      return nullptr;
    }
    return &it->second->attr().at("value").tensor();
  };
  auto type = [&](const char* attr, int64_t i) {
    if (!n.attr().count(attr) || i >= n.attr().at(attr).list().type_size()) return kFloat32;
    return DTypeFromTf(n.attr().at(attr).list().type(i), n.name());
  };
  std::vector<TfExampleFeature> features;
  for (int64_t i = 0; i < num_sparse + num_dense; ++i) {
    const proto::TensorProto* key = constant(2 + i);
    if (key == nullptr || key->string_val_size() != 1) return std::nullopt;
    TfExampleFeature f{.key = key->string_val(0)};
    if (i < num_sparse) {
      f.var_len = true;
      f.dtype = type("sparse_types", i);
      f.shape = Shape::Unknown();
    } else {
      const int64_t d = i - num_sparse;
      f.dtype = type("Tdense", d);
      if (n.attr().count("dense_shapes") && d < n.attr().at("dense_shapes").list().shape_size()) {
        f.shape = ShapeFromTf(n.attr().at("dense_shapes").list().shape(d));
      }
      const proto::TensorProto* fallback = constant(2 + num_sparse + num_dense + d);
      int64_t elements = 1;
      if (fallback != nullptr) {
        for (const auto& dim : fallback->tensor_shape().dim()) elements *= dim.size();
      }
      f.has_default = fallback == nullptr || elements > 0;
    }
    features.push_back(std::move(f));
  }
  std::sort(features.begin(), features.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  return features;
}

bool GraphTranslator::IsFedNode(const std::string& name) const {
  auto it = fed_.lower_bound(name + ":");
  return it != fed_.end() && it->first.starts_with(name + ":");
}

Output GraphTranslator::Tensor(const std::string& tensor) {
  const std::string canonical = CanonicalTensorName(tensor);
  if (auto it = fed_.find(canonical); it != fed_.end()) return it->second;
  auto [name, index] = ParseTensorName(tensor);
  Node* node = Translate(name);
  if (index >= node->num_outputs()) {
    throw Unimplemented(source_, ": output ", index, " of TF node '", name,
                        "' is used; its Loom translation has ", node->num_outputs());
  }
  return Output(node, index);
}

Node* GraphTranslator::Translate(const std::string& name) {
  if (auto it = done_.find(name); it != done_.end()) return it->second;
  std::vector<std::pair<std::string, bool>> stack = {{name, false}};  // (node, inputs done)
  std::set<std::string> on_path;  // expanded, not yet translated: the current DFS path
  while (!stack.empty()) {
    auto [node, inputs_done] = stack.back();
    stack.pop_back();
    if (done_.count(node)) continue;
    if (inputs_done) {
      on_path.erase(node);
      TranslateNode(node);
      continue;
    }
    if (on_path.count(node)) {
      const proto::NodeDef& n = NodeDef(node);
      throw InvalidArgument(source_, ": TF node '", n.name(), "' (", n.op(),
                            ") depends on itself through its inputs (a cycle; TF1 graphs have "
                            "one only in a while loop, which Loom does not import)");
    }
    on_path.insert(node);
    stack.emplace_back(node, true);
    for (const std::string& input : NodeDef(node).input()) {
      const bool control = input.starts_with("^");
      if (control ? IsFedNode(input.substr(1)) : fed_.count(CanonicalTensorName(input)) > 0) {
        continue;
      }
      std::string source = control ? input.substr(1) : ParseTensorName(input).first;
      if (!done_.count(source)) stack.emplace_back(std::move(source), false);
    }
  }
  return done_.at(name);
}

Node* GraphTranslator::TranslateNode(const std::string& name) {
  const proto::NodeDef& n = NodeDef(name);
  // Control inputs first, in the node's order (TF's `^name` inputs; a fed node's is its
  // placeholder): the Session runs the node after them and not at all when one is dead
  // (a branch constant hanging off a cond's pivot).
  std::vector<Node*> controls;
  for (const std::string& input : n.input()) {
    if (!input.starts_with("^")) continue;
    const std::string dep = input.substr(1);
    Node* node = nullptr;
    if (IsFedNode(dep)) {
      node = fed_.lower_bound(dep + ":")->second.node;
    } else {
      node = Translate(dep);
    }
    if (std::find(controls.begin(), controls.end(), node) == controls.end()) {
      controls.push_back(node);
    }
  }
  Node* result = nullptr;
  if (n.op() == "Const") {
    // Loom's Const has TF's attributes (value, dtype); the graph importer converts the
    // TensorProto.
    proto::GraphDef one;
    proto::NodeDef* c = one.add_node();
    c->set_name(n.name());
    c->set_op("Const");
    for (const Node* dep : controls) c->add_input("^" + dep->name());
    for (const char* attr : {"value", "dtype"}) {
      auto it = n.attr().find(attr);
      if (it == n.attr().end()) {
        throw InvalidArgument(source_, ": TF Const node '", n.name(), "' has no '", attr,
                              "' attribute; the GraphDef is damaged");
      }
      (*c->mutable_attr())[attr] = it->second;
    }
    try {
      ImportGraphDef(one, AllOps(), graph_);
    } catch (const Error& e) {
      throw WithContext(e, source_);
    }
    result = graph_.FindNode(n.name());
  } else if (n.op() == "Placeholder") {
    throw InvalidArgument(source_, ": placeholder '", n.name(),
                          "' is needed but is not an input of the signature");
  } else {
    std::vector<Output> inputs;
    for (const std::string& input : n.input()) {
      if (!input.starts_with("^")) inputs.push_back(Tensor(input));
    }
    try {
      result =
          tf_import::TranslateTfNode(n, std::move(inputs), controls, graph_, variables_, source_)
              .node;
    } catch (const std::logic_error& e) {
      // A malformed node the op's translation did not check (std::length_error and the
      // like): the loader's contract is loom::Error naming the node.
      throw InvalidArgument(source_, ": TF node '", n.name(), "' (", n.op(),
                            ") has inputs or attributes its op cannot take (", e.what(),
                            "); the GraphDef is damaged");
    }
  }
  done_[name] = result;
  return result;
}

}  // namespace loom::tf_import
