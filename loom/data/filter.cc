// Filter: the elements for which predicate returns true.
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class FilterIterator : public Iterator {
 public:
  FilterIterator(ElementSpec spec, std::unique_ptr<Iterator> input, PredicateFn pred)
      : Iterator("Filter", std::move(spec)), input_(std::move(input)), pred_(std::move(pred)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    while (std::optional<Element> e = input_->GetNext()) {
      if (pred_(*e)) return e;
    }
    return std::nullopt;
  }
  void SaveInternal(StateWriter& w) override { input_->SaveState(w); }
  void RestoreInternal(StateReader& r) override { input_->RestoreState(r); }

 private:
  std::unique_ptr<Iterator> input_;
  PredicateFn pred_;
};

class FilterDataset : public DatasetImpl {
 public:
  FilterDataset(const std::shared_ptr<const DatasetImpl>& input, PredicateFn pred)
      : DatasetImpl("Filter", input->spec(), {input}), pred_(std::move(pred)) {
    CheckArg(static_cast<bool>(pred_), "Filter", "predicate is empty");
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<FilterIterator>(spec(), inputs()[0]->MakeIterator(ctx), pred_);
  }

 private:
  PredicateFn pred_;
};

}  // namespace

Dataset Dataset::Filter(PredicateFn predicate) const {
  return Dataset(std::make_shared<FilterDataset>(impl(), std::move(predicate)));
}

}  // namespace loom::data
