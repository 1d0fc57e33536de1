// Unbatch: splits each element along dim 0; the pieces are views of the batch (zero-copy).
// The state holds the current batch and the position in it.
#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class UnbatchIterator : public Iterator {
 public:
  UnbatchIterator(ElementSpec spec, std::unique_ptr<Iterator> input)
      : Iterator("Unbatch", std::move(spec)), input_(std::move(input)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    while (!current_ || position_ >= rows_) {
      current_ = input_->GetNext();
      if (!current_) return std::nullopt;
      position_ = 0;
      rows_ = RowsOf(*current_);
    }
    Element out;
    for (const auto& [name, t] : *current_)
      out.emplace_hint(out.end(), name, t.SubTensor(position_));
    ++position_;
    return out;
  }
  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(current_.has_value());
    if (current_) {
      w.WriteElement(*current_);
      w.Write<int64_t>(position_);
    }
    input_->SaveState(w);
  }
  void RestoreInternal(StateReader& r) override {
    current_.reset();
    position_ = rows_ = 0;
    if (r.Read<uint8_t>()) {
      Element batch = r.ReadElement();
      const int64_t position = r.Read<int64_t>();
      // The saved batch must be one the input could have produced (right components,
      // dtypes, rank >= 1, one dim 0) and the position a row of it, or SubTensor would
      // read outside it.
      CheckRestoredElement("Unbatch", input_->spec(), batch);
      int64_t rows = 0;
      try {
        rows = RowsOf(batch);
      } catch (const Error& e) {
        throw DataLoss("Unbatch state is corrupt: ", e.message());
      }
      if (position < 0 || position > rows) {
        throw DataLoss("Unbatch state is corrupt: position ", position, " in a batch of ", rows,
                       " rows");
      }
      current_ = std::move(batch);
      position_ = position;
      rows_ = rows;
    }
    input_->RestoreState(r);
  }

 private:
  static int64_t RowsOf(const Element& e) {
    if (e.empty()) throw InvalidArgument("Unbatch: an element has no components");
    const auto& [first_name, first] = *e.begin();
    for (const auto& [name, t] : e) {
      if (t.rank() == 0) {
        throw InvalidArgument("Unbatch: component '", name,
                              "' is a scalar; unbatching needs "
                              "rank >= 1");
      }
      if (t.dim(0) != first.dim(0)) {
        throw InvalidArgument("Unbatch: components must share dim 0, but '", first_name, "' has ",
                              first.dim(0), " rows and '", name, "' has ", t.dim(0));
      }
    }
    return first.dim(0);
  }
  std::unique_ptr<Iterator> input_;
  std::optional<Element> current_;
  int64_t position_ = 0;
  int64_t rows_ = 0;
};

ElementSpec UnbatchedSpec(const ElementSpec& in) {
  ElementSpec out;
  for (const auto& [name, ts] : in) {
    CheckArg(!ts.shape.rank_known() || ts.shape.rank() >= 1, "Unbatch", "component '", name,
             "' is a scalar; unbatching needs rank >= 1");
    out[name] = {ts.dtype, ts.shape.rank_known() ? ts.shape.WithoutLeadingDim() : ts.shape};
  }
  return out;
}

class UnbatchDataset : public DatasetImpl {
 public:
  explicit UnbatchDataset(const std::shared_ptr<const DatasetImpl>& input)
      : DatasetImpl("Unbatch", UnbatchedSpec(input->spec()), {input}) {}

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<UnbatchIterator>(spec(), inputs()[0]->MakeIterator(ctx));
  }
};

}  // namespace

Dataset Dataset::Unbatch() const { return Dataset(std::make_shared<UnbatchDataset>(impl())); }

}  // namespace loom::data
