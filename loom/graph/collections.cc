#include "loom/graph/collections.h"

#include <algorithm>

#include "loom/graph/op_def.h"

namespace loom {

std::string_view CollectionKindName(Collections::Kind kind) {
  switch (kind) {
    case Collections::Kind::kOutput:
      return "output";
    case Collections::Kind::kOperation:
      return "operation";
    case Collections::Kind::kVariable:
      return "variable";
  }
  return "unknown";
}

void Collections::AddMember(std::string_view name, Kind kind, Member member) {
  const auto where = [&] { return StrCat("collection '", name, "'"); };
  if (graph_.finalized()) {
    throw FailedPrecondition("cannot add to ", where(),
                             ": the graph is finalized; add to "
                             "collections while building the graph");
  }
  if (member.node == nullptr || member.node->graph() != &graph_) {
    throw InvalidArgument("cannot add to ", where(),
                          ": the item is empty or belongs to "
                          "another graph");
  }
  if (kind == Kind::kOutput && (member.index < 0 || member.index >= member.node->num_outputs())) {
    throw InvalidArgument("cannot add output ", member.index, " of ", member.node->description(),
                          " to ", where(), ": it has ", member.node->num_outputs(), " outputs");
  }
  if (kind != Kind::kOutput) member.index = 0;
  if (kind == Kind::kVariable) {
    Node* init = member.initializer;
    if (member.node->op_def().role != OpRole::kVariable || init == nullptr ||
        init->graph() != &graph_ || init->num_inputs() < 1 || init->input(0).node != member.node) {
      throw InvalidArgument("cannot add ", member.node->description(), " to ", where(),
                            " as a variable: it needs a variable node and the op that assigns "
                            "its initial value (a train::Variable)");
    }
  } else {
    member.initializer = nullptr;
  }
  auto it = collections_.find(name);
  if (it == collections_.end()) {
    it = collections_.emplace(std::string(name), Collection{kind, {}}).first;
  } else if (it->second.kind != kind) {
    throw InvalidArgument(where(), " holds ", CollectionKindName(it->second.kind), "s; cannot add ",
                          CollectionKindName(kind), " ", member.node->description(), " to it");
  }
  std::vector<Member>& members = it->second.members;
  if (std::find(members.begin(), members.end(), member) == members.end()) members.push_back(member);
}

void Collections::SetInitializer(Node* variable, Node* initializer) {
  if (variable == nullptr || initializer == nullptr) {
    throw InvalidArgument("SetInitializer: the variable or the initializer is empty");
  }
  if (graph_.finalized()) {
    throw FailedPrecondition("cannot change the initializer of ", variable->description(),
                             ": the graph is finalized");
  }
  if (initializer->graph() != &graph_ || initializer->num_inputs() < 1 ||
      initializer->input(0).node != variable) {
    throw InvalidArgument("cannot make ", initializer->description(), " the initializer of ",
                          variable->description(), ": its first input must be that variable");
  }
  bool found = false;
  for (auto& [name, collection] : collections_) {
    if (collection.kind != Kind::kVariable) continue;
    for (Member& m : collection.members) {
      if (m.node == variable) {
        m.initializer = initializer;
        found = true;
      }
    }
  }
  if (!found) {
    throw NotFound("cannot change the initializer of ", variable->description(),
                   ": no variable collection holds it (is it a variable of this graph?)");
  }
}

void Collections::Add(const CollectionKey<Output>& key, Output item) {
  AddMember(key.name, Kind::kOutput, {item.node, item.index, nullptr});
}

void Collections::Add(const CollectionKey<Operation>& key, Operation item) {
  AddMember(key.name, Kind::kOperation, {item.node, 0, nullptr});
}

void Collections::Add(const CollectionKey<VariableRef>& key, VariableRef item) {
  AddMember(key.name, Kind::kVariable,
            {item.variable.node, item.variable.index, item.initializer.node});
}

const Collections::Collection* Collections::Find(std::string_view name, Kind kind) const {
  auto it = collections_.find(name);
  if (it == collections_.end()) return nullptr;
  if (it->second.kind != kind) {
    throw InvalidArgument("collection '", name, "' holds ", CollectionKindName(it->second.kind),
                          "s, not ", CollectionKindName(kind),
                          "s; was the graph file written by another program?");
  }
  return &it->second;
}

std::vector<Output> Collections::Get(const CollectionKey<Output>& key) const {
  std::vector<Output> items;
  if (const Collection* c = Find(key.name, Kind::kOutput)) {
    for (const Member& m : c->members) items.push_back(Output(m.node, m.index));
  }
  return items;
}

std::vector<Operation> Collections::Get(const CollectionKey<Operation>& key) const {
  std::vector<Operation> items;
  if (const Collection* c = Find(key.name, Kind::kOperation)) {
    for (const Member& m : c->members) items.push_back(Operation(m.node));
  }
  return items;
}

std::vector<VariableRef> Collections::Get(const CollectionKey<VariableRef>& key) const {
  std::vector<VariableRef> items;
  if (const Collection* c = Find(key.name, Kind::kVariable)) {
    for (const Member& m : c->members)
      items.push_back({Output(m.node, 0), Operation(m.initializer)});
  }
  return items;
}

}  // namespace loom
