#include "loom/data/iterator_ops.h"

#include "loom/base/check.h"
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

inline constexpr Attr<std::string> kSharedName{"shared_name"};
inline constexpr Attr<HostObject> kDataset{"dataset"};

const DatasetImpl& DatasetFromAttr(const KernelContext& c) {
  return HostObjectAttr(c, kDataset).As<DatasetImpl>(c.node().description());
}

IteratorResource& ResourceOf(const KernelContext& c) {
  return *c.resources().LookupOrCreate<IteratorResource>(
      StrCat(kIteratorResourcePrefix, c.attr(kSharedName)));
}

std::unique_ptr<Iterator> CreateIterator(const KernelContext& c, const DatasetImpl& dataset,
                                         std::shared_ptr<const Bindings> bindings) {
  return MakeTopLevelIterator(dataset, std::move(bindings),
                              IteratorSeed(*c.node().graph(), c.attr(kSharedName)));
}

const OpDef& MakeIteratorOp() {
  static const OpDef op = {
      .name = "MakeIterator",
      .num_inputs = kVariadic,
      .stateful = true,
      .attrs = {kSharedName.Required(), kDataset.Optional()},
      .num_outputs = 0,
      .shape = [](InferenceContext&) {},
      .kernel =
          [](KernelContext& c) {
            const DatasetImpl& dataset = DatasetFromAttr(c);
            auto bindings = std::make_shared<Bindings>();
            for (int i = 0; i < c.num_inputs(); ++i) {
              const Output& in = c.node().input(i);
              (*bindings)[{in.node, in.index}] = c.input(i);
            }
            ResourceOf(c).Reset(CreateIterator(c, dataset, std::move(bindings)));
          },
      .no_gradient = "iterator initializers have no outputs",
      .not_swept = "needs a host-side dataset (iterator_ops_test covers it)",
  };
  return op;
}

const OpDef& IteratorGetNextOp() {
  static const OpDef op = {
      .name = "IteratorGetNext",
      .num_inputs = 0,
      .stateful = true,
      // A one-shot iterator carries its dataset; a reinitializable one gets it from
      // MakeIterator.
      .attrs = {kSharedName.Required(), kOutputTypes.Required(), kOutputShapes.Required(),
                kDataset.Optional()},
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::FromAttrList(kOutputTypes)},
      .shape = ElementOutputShapes,
      .kernel =
          [](KernelContext& c) {
            std::optional<Element> e = ResourceOf(c).GetNext([&] {
              if (c.find_attr(kDataset) == nullptr) {
                throw FailedPrecondition(
                    c.node().description(), ": GetNext() on iterator '", c.attr(kSharedName),
                    "', which has not been initialized; run its initializer first")
                    .AtNode(c.node().name());
              }
              return CreateIterator(c, DatasetFromAttr(c), nullptr);
            });
            if (!e) {
              throw OutOfRange("End of sequence: iterator '", c.attr(kSharedName),
                               "' has no more elements (in ", c.node().description(), ")")
                  .AtNode(c.node().name());
            }
            int i = 0;
            for (auto& [name, t] : *e) c.set_output(i++, std::move(t));
          },
      .no_gradient = "iterator outputs are inputs",
      .not_swept = "needs an initialized iterator (iterator_ops_test covers it)",
  };
  return op;
}

void CheckStructure(const ElementSpec& structure, const ElementSpec& spec,
                    const std::string& what) {
  bool ok = structure.size() == spec.size();
  for (const auto& [name, ts] : structure) {
    auto it = spec.find(name);
    ok = ok && it != spec.end() && it->second.dtype == ts.dtype &&
         it->second.shape.IsCompatibleWith(ts.shape);
  }
  if (!ok) {
    throw InvalidArgument(what, ": dataset spec ", SpecString(spec),
                          " does not match the iterator's structure ", SpecString(structure));
  }
}

}  // namespace

void ElementOutputShapes(InferenceContext& c) {
  const auto& dtypes = c.attr(kOutputTypes);
  const auto& shapes = c.attr(kOutputShapes);
  if (dtypes.size() != shapes.size()) c.Fail("output_types and output_shapes differ in length");
  for (size_t i = 0; i < dtypes.size(); ++i) c.set_output(i, dtypes[i], shapes[i]);
}

const HostObject& HostObjectAttr(const KernelContext& c, const Attr<HostObject>& key) {
  const HostObject* object = c.find_attr(key);
  if (object == nullptr) {
    throw FailedPrecondition(c.node().description(),
                             ": this graph was loaded without its host-side dataset; datasets "
                             "are not serialized with graphs, so rebuild the input pipeline")
        .AtNode(c.node().name());
  }
  return *object;
}

namespace {
void RestoreFrom(Iterator& iterator, std::string_view blob, const std::string& origin) {
  try {
    iterator.Restore(blob);
  } catch (const Error& e) {
    if (origin.empty()) throw;
    throw WithContext(e, "restoring the input position saved in '", origin, "'");
  }
}
}  // namespace

void IteratorResource::ApplyPendingRestore() {
  if (pending_restore_.empty() || !iterator_) return;
  std::string blob, origin;
  blob.swap(pending_restore_);
  origin.swap(pending_origin_);
  RestoreFrom(*iterator_, blob, origin);
}

void IteratorResource::Reset(std::unique_ptr<Iterator> it) {
  MutexLock lock(mu_);
  iterator_ = std::move(it);
  ApplyPendingRestore();
}

std::optional<Element> IteratorResource::GetNext(
    const std::function<std::unique_ptr<Iterator>()>& make) {
  MutexLock lock(mu_);
  if (!iterator_) {
    iterator_ = make();
    LOOM_CHECK(iterator_ != nullptr) << "IteratorResource::GetNext: `make` returned no iterator";
    ApplyPendingRestore();
  }
  return iterator_->GetNext();
}

bool IteratorResource::initialized() const {
  MutexLock lock(mu_);
  return iterator_ != nullptr;
}

std::string IteratorResource::Save() {
  MutexLock lock(mu_);
  if (!iterator_) throw FailedPrecondition("cannot save an iterator that has not been initialized");
  return iterator_->Save();
}

void IteratorResource::Restore(std::string_view blob, std::string origin) {
  MutexLock lock(mu_);
  if (iterator_) {
    RestoreFrom(*iterator_, blob, origin);
  } else {
    pending_restore_ = std::string(blob);
    pending_origin_ = std::move(origin);
  }
}

std::optional<std::string> IteratorResource::SaveOrPending() {
  MutexLock lock(mu_);
  if (iterator_) return iterator_->Save();
  if (!pending_restore_.empty()) return pending_restore_;
  return std::nullopt;
}

IteratorResource::PendingRestore IteratorResource::TakePendingRestore() {
  MutexLock lock(mu_);
  PendingRestore taken;
  taken.blob.swap(pending_restore_);
  taken.origin.swap(pending_origin_);
  return taken;
}

std::optional<uint64_t> IteratorSeed(const Graph& graph, std::string_view resource_name) {
  if (graph.seed() < 0) return std::nullopt;
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: stable across builds, unlike std::hash
  for (unsigned char ch : resource_name) h = (h ^ ch) * 0x100000001b3ULL;
  return MixSeed(static_cast<uint64_t>(graph.seed()), h);
}

std::vector<std::string> IteratorResourceNames(const ResourceMgr& resources) {
  std::vector<std::string> out;
  for (const std::string& name : resources.Names()) {
    if (name.starts_with(kIteratorResourcePrefix)) out.push_back(name);
  }
  return out;
}

GraphIterator::GraphIterator(const Scope& scope, ElementSpec spec)
    : scope_(scope), spec_(std::move(spec)) {
  CheckArg(!spec_.empty(), "Iterator", "the element structure has no components");
  for (const auto& [name, ts] : spec_) {
    CheckArg(ts.dtype != DType::kInvalid, "Iterator", "component '", name, "' has no dtype");
  }
  resource_name_ = scope.graph().UniqueName(scope.FullName("Iterator"));
}

GraphIterator GraphIterator::FromStructure(const Scope& scope, ElementSpec spec) {
  return GraphIterator(scope, std::move(spec));
}

Operation GraphIterator::MakeInitializer(const Dataset& dataset) const {
  CheckStructure(spec_, dataset.spec(), "MakeInitializer");
  std::vector<Output> inputs;
  std::vector<const DatasetImpl*> stack = {dataset.impl().get()};
  while (!stack.empty()) {
    const DatasetImpl* d = stack.back();
    stack.pop_back();
    for (const Output& o : d->symbolic_inputs()) {
      if (o.node->graph() != &scope_.graph()) {
        throw InvalidArgument("MakeInitializer: dataset reads ", o.name(),
                              ", which belongs to another graph");
      }
      inputs.push_back(o);
    }
    for (const auto& in : d->inputs()) stack.push_back(in.get());
  }
  return scope_.AddNode(MakeIteratorOp(), inputs,
                        {kSharedName(resource_name_), kDataset(HostObject::Of(dataset.impl()))},
                        "MakeIterator");
}

std::map<std::string, Output> GraphIterator::GetNext() const {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const auto& [name, ts] : spec_) {
    dtypes.push_back(ts.dtype);
    shapes.push_back(ts.shape);
  }
  AttrMap attrs = {kSharedName(resource_name_), kOutputTypes(dtypes), kOutputShapes(shapes)};
  if (!one_shot_dataset_.empty()) attrs.Set(kDataset(one_shot_dataset_));
  Node* node = scope_.AddNode(IteratorGetNextOp(), {}, std::move(attrs), "IteratorGetNext");
  std::map<std::string, Output> out;
  int i = 0;
  for (const auto& [name, ts] : spec_) out[name] = node->output(i++);
  return out;
}

GraphIterator Dataset::MakeOneShotIterator(const Scope& scope) const {
  GraphIterator it(scope, spec());
  std::vector<const DatasetImpl*> stack = {impl().get()};
  while (!stack.empty()) {
    const DatasetImpl* d = stack.back();
    stack.pop_back();
    if (!d->symbolic_inputs().empty()) {
      throw InvalidArgument("MakeOneShotIterator: the dataset reads placeholder '",
                            d->symbolic_inputs()[0].node->name(),
                            "'; use MakeInitializableIterator and feed it to the initializer");
    }
    for (const auto& in : d->inputs()) stack.push_back(in.get());
  }
  it.one_shot_dataset_ = HostObject::Of(impl());
  return it;
}

GraphIterator Dataset::MakeInitializableIterator(const Scope& scope) const {
  GraphIterator it(scope, spec());
  it.initializer_ = it.MakeInitializer(*this);
  return it;
}

void RegisterDataOps(OpRegistry& registry) {
  registry.Register(MakeIteratorOp());
  registry.Register(IteratorGetNextOp());
  registry.Register(ReduceDatasetOp());
}

}  // namespace loom::data
