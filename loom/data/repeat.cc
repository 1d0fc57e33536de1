// Repeat: the input again and again (count < 0: forever). Each pass gets its own
// IteratorContext::iteration, so a Shuffle inside reshuffles per pass, deterministically.
// Forever, a pass that yields nothing ends the repetition (no infinite loop over an empty
// input); a finite count runs every pass, an empty one included (TF's two iterators).
// The count may be a graph Output (TF's repeat(count_placeholder)), read from the bindings
// of the iterator's initializer when the iterator is made.
#include "loom/data/index_preserving.h"
#include "loom/data/symbolic.h"

namespace loom::data {
namespace {

template <typename Item>
class RepeatCursor : public Cursor<Item> {
 public:
  RepeatCursor(CursorFactory<Item> make, IteratorContext ctx, int64_t count)
      : make_(std::move(make)), ctx_(std::move(ctx)), configured_count_(count), count_(count) {}

  std::optional<Item> Next() override {
    for (;;) {
      if (count_ >= 0 && epoch_ >= count_) return std::nullopt;
      if (!inner_) inner_ = make_(ContextFor(epoch_));
      std::optional<Item> x = inner_->Next();
      if (x) {
        produced_in_epoch_ = true;
        return x;
      }
      inner_.reset();
      if (!produced_in_epoch_ && count_ < 0) {
        count_ = epoch_;  // an empty pass of a Repeat forever: stop for good
        return std::nullopt;
      }
      ++epoch_;
      produced_in_epoch_ = false;
    }
  }

  void Save(StateWriter& w) override {
    w.Write<int64_t>(epoch_);
    w.Write<int64_t>(count_);
    w.Write<uint8_t>(produced_in_epoch_);
    w.Write<uint8_t>(inner_ != nullptr);
    if (inner_) inner_->Save(w);
  }

  void Restore(StateReader& r) override {
    const int64_t epoch = r.Read<int64_t>();
    const int64_t count = r.Read<int64_t>();
    // count is the dataset's, or the pass at which an empty pass stopped the repetition.
    const bool count_ok =
        count == configured_count_ ||
        (count >= 0 && count <= epoch && (configured_count_ < 0 || count <= configured_count_));
    if (epoch < 0 || epoch > kMaxRestoredCount || !count_ok) {
      throw DataLoss("Repeat state is corrupt: pass ", epoch, " of ", count, " for Repeat(",
                     configured_count_, ")");
    }
    epoch_ = epoch;
    count_ = count;
    produced_in_epoch_ = r.Read<uint8_t>() != 0;
    inner_.reset();
    if (r.Read<uint8_t>()) {
      inner_ = make_(ContextFor(epoch_));
      inner_->Restore(r);
    }
  }

 private:
  IteratorContext ContextFor(int64_t epoch) const {
    IteratorContext c = ctx_;
    if (epoch > 0) c.iteration = MixSeed(ctx_.iteration, static_cast<uint64_t>(epoch));
    return c;
  }

  CursorFactory<Item> make_;
  IteratorContext ctx_;
  const int64_t configured_count_;
  int64_t count_;
  int64_t epoch_ = 0;
  bool produced_in_epoch_ = false;
  std::unique_ptr<Cursor<Item>> inner_;
};

class RepeatDataset : public IndexPreservingDataset {
 public:
  RepeatDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t count)
      : IndexPreservingDataset("Repeat", input), count_(count) {}
  RepeatDataset(const std::shared_ptr<const DatasetImpl>& input, Output count)
      : IndexPreservingDataset("Repeat", input), count_input_(count) {}
  std::string Params() const override {
    return count_input_.valid() ? StrCat("count=", count_input_.name()) : StrCat("count=", count_);
  }
  std::vector<Output> symbolic_inputs() const override {
    if (!count_input_.valid()) return {};
    return {count_input_};
  }

 protected:
  std::unique_ptr<Cursor<int64_t>> WrapIndices(CursorFactory<int64_t> in,
                                               const IteratorContext& ctx) const override {
    return std::make_unique<RepeatCursor<int64_t>>(std::move(in), ctx, CountFor(ctx));
  }
  std::unique_ptr<Cursor<Element>> WrapElements(CursorFactory<Element> in,
                                                const IteratorContext& ctx) const override {
    return std::make_unique<RepeatCursor<Element>>(std::move(in), ctx, CountFor(ctx));
  }

 private:
  int64_t CountFor(const IteratorContext& ctx) const {
    if (!count_input_.valid()) return count_;
    const Tensor count = ResolveBindings("Repeat", {{"count", count_input_}}, ctx).at("count");
    if (count.NumElements() != 1) {
      throw InvalidArgument("Repeat: the count bound to '", count_input_.name(), "' is ",
                            count.shape(), "; it must be a scalar");
    }
    return count.dtype() == kInt32 ? count.flat<int32_t>()[0] : count.flat<int64_t>()[0];
  }

  int64_t count_ = -1;
  Output count_input_;
};

}  // namespace

Dataset Dataset::Repeat(int64_t count) const {
  return Dataset(std::make_shared<RepeatDataset>(impl(), count));
}

Dataset Dataset::Repeat(Output count) const {
  if ((count.dtype() != kInt32 && count.dtype() != kInt64) ||
      (count.shape().rank_known() && count.shape().rank() != 0)) {
    throw InvalidArgument("Repeat: the count '", count.name(), "' is ", DTypeName(count.dtype()),
                          count.shape(), "; it must be an int32 or int64 scalar");
  }
  return Dataset(std::make_shared<RepeatDataset>(impl(), count));
}

}  // namespace loom::data
