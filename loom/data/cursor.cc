#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class IteratorCursor : public Cursor<Element> {
 public:
  explicit IteratorCursor(std::unique_ptr<Iterator> it) : it_(std::move(it)) {}
  std::optional<Element> Next() override { return it_->GetNext(); }
  void Save(StateWriter& w) override { it_->SaveState(w); }
  void Restore(StateReader& r) override { it_->RestoreState(r); }

 private:
  std::unique_ptr<Iterator> it_;
};

class CursorIterator : public Iterator {
 public:
  CursorIterator(std::string stage, ElementSpec spec, std::unique_ptr<Cursor<Element>> cursor)
      : Iterator(std::move(stage), std::move(spec)), cursor_(std::move(cursor)) {}

 protected:
  std::optional<Element> GetNextInternal() override { return cursor_->Next(); }
  void SaveInternal(StateWriter& w) override { cursor_->Save(w); }
  void RestoreInternal(StateReader& r) override { cursor_->Restore(r); }

 private:
  std::unique_ptr<Cursor<Element>> cursor_;
};

}  // namespace

void CheckRestoredItem(const std::string& stage, const IteratorContext& ctx,
                       const ElementSpec& spec, int64_t row) {
  if (row < 0 || (ctx.num_rows >= 0 && row >= ctx.num_rows)) {
    throw DataLoss(stage, " state is corrupt: it names row ", row, " of a source with ",
                   ctx.num_rows >= 0 ? StrCat(ctx.num_rows) : std::string("an unknown number of"),
                   " rows; the checkpoint is damaged or was saved over different data");
  }
}

void CheckRestoredItem(const std::string& stage, const IteratorContext&, const ElementSpec& spec,
                       const Element& element) {
  if (!ElementMatchesSpec(spec, element)) {
    throw DataLoss(stage, " state is corrupt: it holds an element ", SpecString(SpecOf(element)),
                   " where the pipeline's elements are ", SpecString(spec),
                   "; the checkpoint is damaged or was saved from another pipeline");
  }
}

std::unique_ptr<Cursor<Element>> CursorFromIterator(std::unique_ptr<Iterator> it) {
  return std::make_unique<IteratorCursor>(std::move(it));
}

std::unique_ptr<Iterator> IteratorFromCursor(std::string stage, ElementSpec spec,
                                             std::unique_ptr<Cursor<Element>> cursor) {
  return std::make_unique<CursorIterator>(std::move(stage), std::move(spec), std::move(cursor));
}

}  // namespace loom::data
