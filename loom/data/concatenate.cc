// Concatenate: this dataset's elements, then other's. Both need the same component names
// and dtypes; shapes become the most general of the two.
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class ConcatenateIterator : public Iterator {
 public:
  ConcatenateIterator(ElementSpec spec, std::vector<std::shared_ptr<const DatasetImpl>> inputs,
                      IteratorContext ctx)
      : Iterator("Concatenate", std::move(spec)),
        inputs_(std::move(inputs)),
        ctx_(std::move(ctx)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    while (which_ < inputs_.size()) {
      if (!current_) current_ = inputs_[which_]->MakeIterator(ctx_);
      if (std::optional<Element> e = current_->GetNext()) return e;
      current_.reset();
      ++which_;
    }
    return std::nullopt;
  }
  void SaveInternal(StateWriter& w) override {
    w.Write<uint64_t>(which_);
    w.Write<uint8_t>(current_ != nullptr);
    if (current_) current_->SaveState(w);
  }
  void RestoreInternal(StateReader& r) override {
    which_ = r.Read<uint64_t>();
    if (which_ > inputs_.size()) throw DataLoss("Concatenate state names input ", which_);
    current_.reset();
    if (r.Read<uint8_t>()) {
      if (which_ == inputs_.size()) throw DataLoss("Concatenate state is corrupt");
      current_ = inputs_[which_]->MakeIterator(ctx_);
      current_->RestoreState(r);
    }
  }

 private:
  std::vector<std::shared_ptr<const DatasetImpl>> inputs_;
  IteratorContext ctx_;
  size_t which_ = 0;
  std::unique_ptr<Iterator> current_;
};

ElementSpec ConcatSpec(const ElementSpec& a, const ElementSpec& b) {
  CheckArg(a.size() == b.size(), "Concatenate",
           "the datasets have different components: ", SpecString(a), " and ", SpecString(b));
  ElementSpec out;
  for (const auto& [name, ts] : a) {
    auto it = b.find(name);
    CheckArg(it != b.end(), "Concatenate", "component '", name, "' is missing from ",
             SpecString(b));
    CheckArg(it->second.dtype == ts.dtype, "Concatenate", "component '", name, "' is ",
             DTypeName(ts.dtype), " in one dataset and ", DTypeName(it->second.dtype),
             " in the other");
    out[name] = {ts.dtype, MostGeneralShape(ts.shape, it->second.shape)};
  }
  return out;
}

class ConcatenateDataset : public DatasetImpl {
 public:
  ConcatenateDataset(const std::shared_ptr<const DatasetImpl>& a,
                     const std::shared_ptr<const DatasetImpl>& b)
      : DatasetImpl("Concatenate", ConcatSpec(a->spec(), b->spec()), {a, b}) {}

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<ConcatenateIterator>(spec(), inputs(), ctx);
  }
};

}  // namespace

Dataset Dataset::Concatenate(const Dataset& other) const {
  return Dataset(std::make_shared<ConcatenateDataset>(impl(), other.impl()));
}

}  // namespace loom::data
