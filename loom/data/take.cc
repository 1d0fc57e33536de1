// Take: the first `count` items (count < 0: all).
#include "loom/data/index_preserving.h"

namespace loom::data {
namespace {

template <typename Item>
class TakeCursor : public Cursor<Item> {
 public:
  TakeCursor(std::unique_ptr<Cursor<Item>> input, int64_t count)
      : input_(std::move(input)), count_(count) {}
  std::optional<Item> Next() override {
    if (count_ >= 0 && taken_ >= count_) return std::nullopt;
    std::optional<Item> x = input_->Next();
    if (x) ++taken_;
    return x;
  }
  void Save(StateWriter& w) override {
    w.Write<int64_t>(taken_);
    input_->Save(w);
  }
  void Restore(StateReader& r) override {
    const int64_t taken = r.Read<int64_t>();
    if (taken < 0 || taken > kMaxRestoredCount || (count_ >= 0 && taken > count_)) {
      throw DataLoss("Take state is corrupt: ", taken, " items taken of ", count_);
    }
    taken_ = taken;
    input_->Restore(r);
  }

 private:
  std::unique_ptr<Cursor<Item>> input_;
  int64_t count_;
  int64_t taken_ = 0;
};

class TakeDataset : public IndexPreservingDataset {
 public:
  TakeDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t count)
      : IndexPreservingDataset("Take", input), count_(count) {}
  std::string Params() const override { return StrCat("count=", count_); }

 protected:
  std::unique_ptr<Cursor<int64_t>> WrapIndices(CursorFactory<int64_t> in,
                                               const IteratorContext& ctx) const override {
    return std::make_unique<TakeCursor<int64_t>>(in(ctx), count_);
  }
  std::unique_ptr<Cursor<Element>> WrapElements(CursorFactory<Element> in,
                                                const IteratorContext& ctx) const override {
    return std::make_unique<TakeCursor<Element>>(in(ctx), count_);
  }

 private:
  int64_t count_;
};

}  // namespace

Dataset Dataset::Take(int64_t count) const {
  return Dataset(std::make_shared<TakeDataset>(impl(), count));
}

}  // namespace loom::data
