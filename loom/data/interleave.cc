// Interleave: fn maps each input element to a dataset; up to cycle_length of them are
// open at once and block_length elements are taken from each in turn. With
// num_parallel_calls, each open dataset prefetches on its own thread; the output order is
// the same either way. The state stores, per open slot, the input element that made it
// and the slot iterator's state (fn is called again on restore).
#include "loom/data/dataset_impl.h"
#include "loom/data/worker_pool.h"

namespace loom::data {
namespace {

class InterleaveIterator : public Iterator {
 public:
  InterleaveIterator(ElementSpec spec, std::unique_ptr<Iterator> input, InterleaveFn fn,
                     IteratorContext ctx, int cycle_length, int block_length, bool parallel)
      : Iterator("Interleave", std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        ctx_(std::move(ctx)),
        block_length_(block_length),
        parallel_(parallel),
        slots_(cycle_length) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    for (;;) {
      if (input_done_ && OpenSlots() == 0) return std::nullopt;
      Slot& slot = slots_[current_];
      if (!slot.it && !input_done_) {
        std::optional<Element> e = input_->GetNext();
        if (e) {
          slot.source = std::move(*e);
          slot.it = Open(slot.source);
        } else {
          input_done_ = true;
        }
      }
      if (slot.it) {
        if (std::optional<Element> x = slot.it->GetNext()) {
          if (++block_count_ >= block_length_) Advance();
          return x;
        }
        slot.it.reset();
      }
      Advance();
    }
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(input_done_);
    w.Write<uint64_t>(current_);
    w.Write<int64_t>(block_count_);
    for (Slot& slot : slots_) {
      w.Write<uint8_t>(slot.it != nullptr);
      if (!slot.it) continue;
      w.WriteElement(slot.source);
      slot.it->SaveState(w);
    }
    input_->SaveState(w);
  }

  void RestoreInternal(StateReader& r) override {
    input_done_ = r.Read<uint8_t>() != 0;
    current_ = r.Read<uint64_t>();
    if (current_ >= slots_.size()) throw DataLoss("Interleave state names slot ", current_);
    block_count_ = r.Read<int64_t>();
    if (block_count_ < 0 || block_count_ >= block_length_) {
      throw DataLoss("Interleave state is corrupt: ", block_count_,
                     " elements taken from a block of ", block_length_);
    }
    for (Slot& slot : slots_) {
      slot.it.reset();
      if (!r.Read<uint8_t>()) continue;
      slot.source = r.ReadElement();
      // fn is called on it again: it must be an element the input could have produced.
      CheckRestoredElement("Interleave", input_->spec(), slot.source);
      slot.it = Open(slot.source);
      slot.it->RestoreState(r);
    }
    input_->RestoreState(r);
  }

 private:
  struct Slot {
    Element source;
    std::unique_ptr<Iterator> it;
  };

  std::unique_ptr<Iterator> Open(const Element& source) {
    Dataset d = fn_(source);
    for (const auto& [name, ts] : spec()) {
      auto it = d.spec().find(name);
      if (it == d.spec().end() || it->second.dtype != ts.dtype ||
          !it->second.shape.IsCompatibleWith(ts.shape) || d.spec().size() != spec().size()) {
        throw InvalidArgument("Interleave: fn returned a dataset with spec ", SpecString(d.spec()),
                              " but the declared output_spec is ", SpecString(spec()));
      }
    }
    if (parallel_) d = d.Prefetch(block_length_);
    return d.impl()->MakeIterator(ctx_);
  }

  size_t OpenSlots() const {
    size_t n = 0;
    for (const Slot& s : slots_) n += s.it != nullptr;
    return n;
  }

  void Advance() {
    block_count_ = 0;
    current_ = (current_ + 1) % slots_.size();
  }

  std::unique_ptr<Iterator> input_;
  InterleaveFn fn_;
  IteratorContext ctx_;
  int64_t block_length_;
  bool parallel_;
  std::vector<Slot> slots_;
  size_t current_ = 0;
  int64_t block_count_ = 0;
  bool input_done_ = false;
};

class InterleaveDataset : public DatasetImpl {
 public:
  InterleaveDataset(std::shared_ptr<const DatasetImpl> input, InterleaveFn fn, ElementSpec spec,
                    InterleaveOptions options)
      : DatasetImpl("Interleave", std::move(spec), {std::move(input)}),
        fn_(std::move(fn)),
        options_(options) {
    CheckArg(static_cast<bool>(fn_), "Interleave", "fn is empty");
    CheckArg(!this->spec().empty(), "Interleave", "output_spec has no components");
    CheckArg(options.block_length > 0, "Interleave", "block_length must be positive, got ",
             options.block_length);
    CheckArg(options.cycle_length >= 0 || options.cycle_length == kAutotune, "Interleave",
             "cycle_length must be >= 0 or kAutotune, got ", options.cycle_length);
  }

  // The resolved cycle length shapes the order; parallelism does not.
  std::string Params() const override {
    return StrCat("cycle_length=", WorkerPool::ResolveThreads(options_.cycle_length),
                  " block_length=", options_.block_length);
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<InterleaveIterator>(spec(), inputs()[0]->MakeIterator(ctx), fn_, ctx,
                                                WorkerPool::ResolveThreads(options_.cycle_length),
                                                options_.block_length,
                                                options_.num_parallel_calls != 0);
  }

 private:
  InterleaveFn fn_;
  InterleaveOptions options_;
};

}  // namespace

Dataset Dataset::Interleave(InterleaveFn fn, const ElementSpec& output_spec,
                            InterleaveOptions options) const {
  return Dataset(std::make_shared<InterleaveDataset>(impl(), std::move(fn), output_spec, options));
}

}  // namespace loom::data
