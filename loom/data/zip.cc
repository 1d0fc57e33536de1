// Zip: the elements of several datasets merged side by side (component names must be
// distinct); ends with the shortest input.
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class ZipIterator : public Iterator {
 public:
  ZipIterator(ElementSpec spec, std::vector<std::unique_ptr<Iterator>> inputs)
      : Iterator("Zip", std::move(spec)), inputs_(std::move(inputs)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    Element out;
    for (auto& in : inputs_) {
      std::optional<Element> e = in->GetNext();
      if (!e) return std::nullopt;
      out.merge(*e);
    }
    return out;
  }
  void SaveInternal(StateWriter& w) override {
    for (auto& in : inputs_) in->SaveState(w);
  }
  void RestoreInternal(StateReader& r) override {
    for (auto& in : inputs_) in->RestoreState(r);
  }

 private:
  std::vector<std::unique_ptr<Iterator>> inputs_;
};

ElementSpec ZipSpec(const std::vector<std::shared_ptr<const DatasetImpl>>& inputs) {
  CheckArg(!inputs.empty(), "Zip", "needs at least one dataset");
  ElementSpec spec;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const auto& [name, ts] : inputs[i]->spec()) {
      CheckArg(!spec.count(name), "Zip", "component '", name, "' of dataset ", i, " (",
               inputs[i]->DebugString(),
               ") is already taken by an earlier dataset; "
               "rename it with Map first");
      spec[name] = ts;
    }
  }
  return spec;
}

class ZipDataset : public DatasetImpl {
 public:
  explicit ZipDataset(const std::vector<std::shared_ptr<const DatasetImpl>>& inputs)
      : DatasetImpl("Zip", ZipSpec(inputs), inputs) {}

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    std::vector<std::unique_ptr<Iterator>> its;
    for (const auto& in : inputs()) its.push_back(in->MakeIterator(ctx));
    return std::make_unique<ZipIterator>(spec(), std::move(its));
  }
};

}  // namespace

Dataset Zip(const std::vector<Dataset>& datasets) {
  std::vector<std::shared_ptr<const DatasetImpl>> impls;
  impls.reserve(datasets.size());
  for (const Dataset& d : datasets) impls.push_back(d.impl());
  return Dataset(std::make_shared<ZipDataset>(impls));
}

}  // namespace loom::data
