// Shuffle: a buffer of buffer_size items; each output is a uniformly chosen buffered item,
// replaced by the next input. On the fast path the buffer holds row indices, so saving it
// stores indices and one RNG word, never elements.
#include <type_traits>
#include <vector>

#include "loom/data/index_preserving.h"

namespace loom::data {
namespace {

template <typename Item>
class ShuffleCursor : public Cursor<Item> {
 public:
  ShuffleCursor(std::unique_ptr<Cursor<Item>> input, int64_t buffer_size, uint64_t seed,
                IteratorContext ctx, ElementSpec spec)
      : input_(std::move(input)),
        buffer_size_(buffer_size),
        rng_(seed),
        ctx_(std::move(ctx)),
        spec_(std::move(spec)) {}

  std::optional<Item> Next() override {
    while (!input_done_ && static_cast<int64_t>(buffer_.size()) < buffer_size_) {
      std::optional<Item> x = input_->Next();
      if (!x) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(*x));
    }
    if (buffer_.empty()) return std::nullopt;
    const size_t j = rng_.Uniform(buffer_.size());
    std::swap(buffer_[j], buffer_.back());
    Item out = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

  void Save(StateWriter& w) override {
    w.Write<uint64_t>(rng_.state());
    w.Write<uint8_t>(input_done_);
    w.Write<uint64_t>(buffer_.size());
    if constexpr (std::is_same_v<Item, int64_t>) {
      // Row indices in one append (the bytes of buffer_.size() Write<int64_t> calls):
      // ShardGlobalBatches under a Prefetch saves this once per step.
      w.data().append(reinterpret_cast<const char*>(buffer_.data()), buffer_.size() * sizeof(Item));
    } else {
      for (const Item& x : buffer_) WriteItem(w, x);
    }
    input_->Save(w);
  }

  void Restore(StateReader& r) override {
    rng_.set_state(r.Read<uint64_t>());
    input_done_ = r.Read<uint8_t>() != 0;
    const uint64_t n = r.Read<uint64_t>();
    if (n > static_cast<uint64_t>(buffer_size_)) {
      throw InvalidArgument("Shuffle state holds ", n, " items but the buffer size is ",
                            buffer_size_);
    }
    buffer_.clear();
    buffer_.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      buffer_.push_back(ReadItem<Item>(r));
      // Row indices go straight to a memcpy of the source: each must name a real row.
      CheckRestoredItem("Shuffle", ctx_, spec_, buffer_.back());
    }
    input_->Restore(r);
  }

 private:
  std::unique_ptr<Cursor<Item>> input_;
  int64_t buffer_size_;
  Rng rng_;
  IteratorContext ctx_;  // its num_rows bounds restored row indices
  ElementSpec spec_;     // restored elements must match it
  bool input_done_ = false;
  std::vector<Item> buffer_;
};

class ShuffleDataset : public IndexPreservingDataset {
 public:
  ShuffleDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t buffer_size,
                 ShuffleOptions options)
      : IndexPreservingDataset("Shuffle", input), buffer_size_(buffer_size), options_(options) {
    CheckArg(buffer_size > 0, "Shuffle", "buffer_size must be positive, got ", buffer_size);
  }

  std::string Params() const override {
    return StrCat(
        "buffer_size=", buffer_size_,
        " seed=", options_.seed ? std::to_string(*options_.seed) : "none",
        " reshuffle_each_iteration=", options_.reshuffle_each_iteration ? "true" : "false");
  }

 protected:
  std::unique_ptr<Cursor<int64_t>> WrapIndices(CursorFactory<int64_t> in,
                                               const IteratorContext& ctx) const override {
    return Wrap<int64_t>(in, ctx);
  }
  std::unique_ptr<Cursor<Element>> WrapElements(CursorFactory<Element> in,
                                                const IteratorContext& ctx) const override {
    return Wrap<Element>(in, ctx);
  }

 private:
  template <typename Item>
  std::unique_ptr<Cursor<Item>> Wrap(const CursorFactory<Item>& in,
                                     const IteratorContext& ctx) const {
    // Unseeded: the iterator's random base (see IteratorContext), mixed with this stage's
    // place in the pipeline so two unseeded shuffles differ.
    const uint64_t base = options_.seed
                              ? *options_.seed
                              : MixSeed(ctx.random_base ? ctx.random_base->Get() : RandomSeed(),
                                        std::hash<std::string>()(DebugString()));
    const bool reshuffle = options_.reshuffle_each_iteration;
    uint64_t seed = MixSeed(base, reshuffle ? ctx.iteration : 0);
    return std::make_unique<ShuffleCursor<Item>>(in(ctx), buffer_size_, seed, ctx, spec());
  }
  int64_t buffer_size_;
  ShuffleOptions options_;
};

}  // namespace

Dataset Dataset::Shuffle(int64_t buffer_size, ShuffleOptions options) const {
  return Dataset(std::make_shared<ShuffleDataset>(impl(), buffer_size, options));
}

}  // namespace loom::data
