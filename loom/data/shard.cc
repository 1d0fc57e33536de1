// Shard: items index, index + num_shards, index + 2 * num_shards, ... (one worker's part).
#include "loom/data/index_preserving.h"

namespace loom::data {
namespace {

template <typename Item>
class ShardCursor : public Cursor<Item> {
 public:
  ShardCursor(std::unique_ptr<Cursor<Item>> input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::optional<Item> Next() override {
    for (;;) {
      std::optional<Item> x = input_->Next();
      if (!x) return std::nullopt;
      if (position_++ % num_shards_ == index_) return x;
    }
  }
  void Save(StateWriter& w) override {
    w.Write<int64_t>(position_);
    input_->Save(w);
  }
  void Restore(StateReader& r) override {
    const int64_t position = r.Read<int64_t>();
    if (position < 0 || position > kMaxRestoredCount) {
      throw DataLoss("Shard state is corrupt: position ", position);
    }
    position_ = position;
    input_->Restore(r);
  }

 private:
  std::unique_ptr<Cursor<Item>> input_;
  int64_t num_shards_, index_;
  int64_t position_ = 0;
};

class ShardDataset : public IndexPreservingDataset {
 public:
  ShardDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t num_shards, int64_t index)
      : IndexPreservingDataset("Shard", input), num_shards_(num_shards), index_(index) {
    CheckArg(num_shards > 0, "Shard", "num_shards must be positive, got ", num_shards);
    CheckArg(0 <= index && index < num_shards, "Shard", "index must be in [0, ", num_shards,
             "), got ", index);
  }
  std::string Params() const override {
    return StrCat("num_shards=", num_shards_, " index=", index_);
  }

 protected:
  std::unique_ptr<Cursor<int64_t>> WrapIndices(CursorFactory<int64_t> in,
                                               const IteratorContext& ctx) const override {
    return std::make_unique<ShardCursor<int64_t>>(in(ctx), num_shards_, index_);
  }
  std::unique_ptr<Cursor<Element>> WrapElements(CursorFactory<Element> in,
                                                const IteratorContext& ctx) const override {
    return std::make_unique<ShardCursor<Element>>(in(ctx), num_shards_, index_);
  }

 private:
  int64_t num_shards_, index_;
};

}  // namespace

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  return Dataset(std::make_shared<ShardDataset>(impl(), num_shards, index));
}

}  // namespace loom::data
