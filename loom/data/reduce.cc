// Dataset::Reduce: tf.data's reduce, a fold over every element of a fresh iterator, on the
// host or as the ReduceDataset graph op (which holds the dataset and fn as a host object,
// as the iterator ops hold their dataset: a serialized graph holds no data).
#include "loom/base/check.h"
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

Element Fold(Iterator& it, Element state, const ReduceFn& fn) {
  const ElementSpec state_spec = SpecOf(state);
  int64_t index = 0;
  while (std::optional<Element> e = it.GetNext()) {
    Element next = fn(std::move(state), std::move(*e));
    // The state keeps its structure and dtypes, as TF's reduce requires of reduce_func.
    bool same = next.size() == state_spec.size();
    for (const auto& [name, ts] : state_spec) {
      auto n = next.find(name);
      same = same && n != next.end() && n->second.defined() && n->second.dtype() == ts.dtype;
    }
    if (!same) {
      throw InvalidArgument("Reduce: fn returned a state with components ",
                            SpecString(SpecOf(next)), " for element ", index, " but the state has ",
                            SpecString(state_spec),
                            "; return the state's components with their dtypes");
    }
    state = std::move(next);
    ++index;
  }
  return state;
}

// What a ReduceDataset node folds: the dataset, fn, and the state's component names (the
// node's first inputs and its outputs, in this order).
struct ReduceTask {
  std::shared_ptr<const DatasetImpl> dataset;
  ReduceFn fn;
  std::vector<std::string> state_names;
};

inline constexpr Attr<HostObject> kTask{"task"};

}  // namespace

const OpDef& ReduceDatasetOp() {
  static const OpDef op = {
      .name = "ReduceDataset",
      .num_inputs = kVariadic,
      .stateful = true,  // each run reads the dataset again (it may shuffle, read files)
      .attrs = {kTask.Optional(), kOutputTypes.Required(), kOutputShapes.Required()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::FromAttrList(kOutputTypes)},
      .shape = ElementOutputShapes,
      .kernel =
          [](KernelContext& c) {
            const auto& task = HostObjectAttr(c, kTask).As<ReduceTask>(c.node().description());
            const int num_state = static_cast<int>(task.state_names.size());
            Element state;
            for (int i = 0; i < num_state; ++i) state[task.state_names[i]] = c.input(i);
            auto bindings = std::make_shared<Bindings>();
            for (int i = num_state; i < c.num_inputs(); ++i) {
              const Output& in = c.node().input(i);
              (*bindings)[{in.node, in.index}] = c.input(i);
            }
            auto it = MakeTopLevelIterator(*task.dataset, std::move(bindings),
                                           IteratorSeed(*c.node().graph(), c.node().name()));
            Element out = Fold(*it, std::move(state), task.fn);
            for (int i = 0; i < num_state; ++i) c.set_output(i, out.at(task.state_names[i]));
          },
      .no_gradient = "a fold over host-side data",
      .not_swept = "needs a host-side dataset (window_test covers it)",
  };
  return op;
}

Element Dataset::Reduce(Element initial_state, const ReduceFn& fn,
                        std::optional<uint64_t> seed) const {
  CheckArg(static_cast<bool>(fn), "Reduce", "fn is empty");
  CheckArg(!initial_state.empty(), "Reduce", "initial_state has no components");
  auto it = MakeIterator(seed);
  return Fold(*it, std::move(initial_state), fn);
}

std::map<std::string, Output> Dataset::Reduce(const Scope& scope,
                                              const std::map<std::string, Output>& initial_state,
                                              ReduceFn fn, const ElementSpec& state_spec) const {
  CheckArg(static_cast<bool>(fn), "Reduce", "fn is empty");
  CheckArg(!initial_state.empty(), "Reduce", "initial_state has no components");
  auto task = std::make_shared<ReduceTask>();
  task->dataset = impl();
  task->fn = std::move(fn);
  std::vector<Output> inputs;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const auto& [name, out] : initial_state) {
    auto s = state_spec.find(name);
    CheckArg(s != state_spec.end() && s->second.dtype == out.dtype(), "Reduce", "state_spec ",
             SpecString(state_spec), " does not give component '", name, "' as ",
             DTypeName(out.dtype()), ", the dtype of its initial value");
    task->state_names.push_back(name);
    inputs.push_back(out);
    dtypes.push_back(out.dtype());
    shapes.push_back(s->second.shape);
  }
  CheckArg(state_spec.size() == initial_state.size(), "Reduce", "state_spec ",
           SpecString(state_spec), " has components that initial_state lacks");
  // The placeholders the dataset reads, bound when the node runs.
  std::vector<const DatasetImpl*> stack = {impl().get()};
  while (!stack.empty()) {
    const DatasetImpl* d = stack.back();
    stack.pop_back();
    for (const Output& o : d->symbolic_inputs()) {
      CheckArg(o.node->graph() == &scope.graph(), "Reduce", "the dataset reads ", o.name(),
               ", which belongs to another graph");
      inputs.push_back(o);
    }
    for (const auto& in : d->inputs()) stack.push_back(in.get());
  }
  Node* node = scope.AddNode(ReduceDatasetOp(), inputs,
                             {kTask(HostObject::Of<ReduceTask>(std::move(task))),
                              kOutputTypes(dtypes), kOutputShapes(shapes)},
                             "ReduceDataset");
  std::map<std::string, Output> out;
  int i = 0;
  for (const auto& [name, ts] : initial_state) out[name] = node->output(i++);
  return out;
}

}  // namespace loom::data
