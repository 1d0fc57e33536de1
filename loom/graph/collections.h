#ifndef LOOM_GRAPH_COLLECTIONS_H_
#define LOOM_GRAPH_COLLECTIONS_H_

// Collections: a Graph's explicit registry of named, typed lists of its members (TF1's
// graph collections, tf.GraphKeys, without a default graph). Code that makes something
// other code must find later adds it under a key; the reader gets it back by the same
// key, never by scanning the graph for a node name or an op type:
//
//   graph.collections().Add(GraphKeys::kUpdateOps, moving_average_update);   // a layer
//   auto updates = graph.collections().Get(GraphKeys::kUpdateOps);  // the model function
//
// A key's type says what its items are: Output (a tensor), Operation (a node run for its
// effect) or VariableRef (a variable and its initializer, TF's VariableDef), so a reader
// gets them back typed. A key's name is the collection's name in files: TF's tf.GraphKeys
// value where TF has one. Collections are written with the graph (ToGraphDef) and read
// back with it (ImportGraphDef), so a SavedModel or exported graph keeps them.
// Thread-safety: as the Graph's: filled while building, read-only once it is finalized.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/graph/graph.h"

namespace loom {

// A variable as a collection holds it: its node's output and the op that assigns its
// initial value (what train::Variable holds; TF's VariableDef).
struct VariableRef {
  Output variable;
  Operation initializer;
};

// A collection's name with the type of its items.
template <typename T>
struct CollectionKey {
  std::string_view name;
};

// The keys Loom itself fills, named as TF's tf.GraphKeys.
struct GraphKeys {
  // GLOBAL_STEP: the one global step variable (train::GlobalStep adds it).
  static constexpr CollectionKey<VariableRef> kGlobalStep{"global_step"};
  // GLOBAL_VARIABLES: every variable that is not local, with the op that assigns its
  // initial value (a Variable adds itself; GlobalVariablesInitializer runs them).
  static constexpr CollectionKey<VariableRef> kGlobalVariables{"variables"};
  // LOCAL_VARIABLES: the local variables (metric counters), likewise for
  // LocalVariablesInitializer.
  static constexpr CollectionKey<VariableRef> kLocalVariables{"local_variables"};
  // UPDATE_OPS: ops a training step must run besides the optimizer's update (batch
  // normalization's moving statistics; layers::BatchNormalization adds one per layer).
  static constexpr CollectionKey<Operation> kUpdateOps{"update_ops"};
  // REGULARIZATION_LOSSES: penalties a model adds to its loss (a layer's
  // kernel_regularizer adds one per regularized variable).
  static constexpr CollectionKey<Output> kRegularizationLosses{"regularization_losses"};
  // The loss a training graph minimizes (Loom's own key): Estimator::Train adds its
  // EstimatorSpec's loss, so a hook that reports it (the loom command's progress line)
  // fetches it from here rather than finding it by a summary's tag.
  static constexpr CollectionKey<Output> kLoss{"loom_loss"};
};

class Collections {
 public:
  // What a collection holds, as files record it (graph.proto's GraphCollection.Kind).
  enum class Kind { kOutput = 0, kOperation = 1, kVariable = 2 };
  // One item, untyped: `index` is used by kOutput, `initializer` by kVariable.
  struct Member {
    Node* node = nullptr;
    int index = 0;
    Node* initializer = nullptr;
    bool operator==(const Member&) const = default;
  };
  struct Collection {
    Kind kind;
    std::vector<Member> members;  // in the order they were added
  };

  explicit Collections(const Graph& graph) : graph_(graph) {}
  Collections(const Collections&) = delete;
  Collections& operator=(const Collections&) = delete;

  // Appends `item` to the key's collection (an item already there is not added again).
  // Throws FailedPrecondition once the graph is finalized, InvalidArgument when the item
  // is empty or from another graph, or (for a VariableRef) not a variable node and an
  // op whose first input is that variable.
  void Add(const CollectionKey<Output>& key, Output item);
  void Add(const CollectionKey<Operation>& key, Operation item);
  void Add(const CollectionKey<VariableRef>& key, VariableRef item);

  // The key's items in the order added; empty when nothing was added. Throws
  // InvalidArgument when the collection of that name holds another kind (a file's).
  std::vector<Output> Get(const CollectionKey<Output>& key) const;
  std::vector<Operation> Get(const CollectionKey<Operation>& key) const;
  std::vector<VariableRef> Get(const CollectionKey<VariableRef>& key) const;

  // Every collection by name, for serialization (graph_def.cc).
  const std::map<std::string, Collection, std::less<>>& all() const { return collections_; }
  // Adds an untyped member, with the checks Add makes; for deserialization.
  void AddMember(std::string_view name, Kind kind, Member member);

  // Makes `initializer` the initializer of `variable` in every variable collection that
  // holds it (TF's init_from_checkpoint overriding variable._initializer_op). Throws
  // FailedPrecondition once the graph is finalized, NotFound when no collection holds the
  // variable, InvalidArgument when `initializer` is not an op whose first input is it.
  void SetInitializer(Node* variable, Node* initializer);

 private:
  const Collection* Find(std::string_view name, Kind kind) const;

  const Graph& graph_;
  std::map<std::string, Collection, std::less<>> collections_;
};

// "output", "operation", "variable".
std::string_view CollectionKindName(Collections::Kind kind);

}  // namespace loom

#endif  // LOOM_GRAPH_COLLECTIONS_H_
