// Skip: all but the first `count` items (count < 0: skips everything).
#include "loom/data/index_preserving.h"

namespace loom::data {
namespace {

template <typename Item>
class SkipCursor : public Cursor<Item> {
 public:
  SkipCursor(std::unique_ptr<Cursor<Item>> input, int64_t count)
      : input_(std::move(input)), count_(count) {}
  std::optional<Item> Next() override {
    while (count_ < 0 || skipped_ < count_) {
      if (!input_->Next()) return std::nullopt;
      ++skipped_;
    }
    return input_->Next();
  }
  void Save(StateWriter& w) override {
    w.Write<int64_t>(skipped_);
    input_->Save(w);
  }
  void Restore(StateReader& r) override {
    const int64_t skipped = r.Read<int64_t>();
    if (skipped < 0 || skipped > kMaxRestoredCount || (count_ >= 0 && skipped > count_)) {
      throw DataLoss("Skip state is corrupt: ", skipped, " items skipped of ", count_);
    }
    skipped_ = skipped;
    input_->Restore(r);
  }

 private:
  std::unique_ptr<Cursor<Item>> input_;
  int64_t count_;
  int64_t skipped_ = 0;
};

class SkipDataset : public IndexPreservingDataset {
 public:
  SkipDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t count)
      : IndexPreservingDataset("Skip", input), count_(count) {}
  std::string Params() const override { return StrCat("count=", count_); }

 protected:
  std::unique_ptr<Cursor<int64_t>> WrapIndices(CursorFactory<int64_t> in,
                                               const IteratorContext& ctx) const override {
    return std::make_unique<SkipCursor<int64_t>>(in(ctx), count_);
  }
  std::unique_ptr<Cursor<Element>> WrapElements(CursorFactory<Element> in,
                                                const IteratorContext& ctx) const override {
    return std::make_unique<SkipCursor<Element>>(in(ctx), count_);
  }

 private:
  int64_t count_;
};

}  // namespace

Dataset Dataset::Skip(int64_t count) const {
  return Dataset(std::make_shared<SkipDataset>(impl(), count));
}

}  // namespace loom::data
