// ShardGlobalBatches (global_batches.h) and the shard requests it sends down a pipeline
// (dataset_impl.h's ShardRequest): the shard points that select one shard's elements or
// row indices, and the ledger through which the top iterator reads their position.
#include "loom/data/global_batches.h"

#include <atomic>
#include <map>
#include <mutex>

#include "loom/base/logging.h"
#include "loom/data/dataset_impl.h"

namespace loom::data {

// Where a shard stands in the global stream below it: the count of elements read or
// skipped there, and the state of the stages below.
class ShardPoint {
 public:
  virtual ~ShardPoint() = default;
  virtual int64_t position() const = 0;
  virtual std::string SaveInput() = 0;
  // Continues at global element `position` with the stages below in `input_state` (their
  // fresh state when null); elements before `skip_until` are skipped.
  virtual void RestoreAt(int64_t position, int64_t skip_until, const std::string* input_state) = 0;
};

// Shared by one ShardGlobalBatches iterator and the shard point its request created.
// With read-ahead above the point, the point records its position after each completed
// block (entry k: after k global batches); the top iterator reads entry k when it has
// handed out k batches. Thread-safe (the point may run on a Prefetch worker).
class ShardLedger {
 public:
  struct Entry {
    int64_t position = 0;
    std::string state;
  };
  void set_point(ShardPoint* point) {
    LOOM_CHECK(point_ == nullptr) << "one shard point per shard request";
    point_ = point;
  }
  ShardPoint* point() const { return point_; }
  void set_read_ahead() { read_ahead_.store(true, std::memory_order_relaxed); }
  bool read_ahead() const { return read_ahead_.load(std::memory_order_relaxed); }

  void Record(int64_t batches, int64_t position, std::string state) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[batches] = Entry{position, std::move(state)};
  }
  // Entry `batches`, dropping older ones (the consumer is past them).
  std::optional<Entry> Find(int64_t batches) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(entries_.begin(), entries_.lower_bound(batches));
    auto it = entries_.find(batches);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void Trim(int64_t batches) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(entries_.begin(), entries_.lower_bound(batches));
  }

 private:
  ShardPoint* point_ = nullptr;  // owned by the pipeline the top iterator owns
  std::atomic<bool> read_ahead_{false};
  std::mutex mu_;
  std::map<int64_t, Entry> entries_;
};

ElementSpec LocalSpec(const ElementSpec& spec, const IteratorContext& ctx) {
  if (ctx.shard == nullptr || !ctx.shard->at_batch || ctx.shard->num_shards == 1) return spec;
  ElementSpec out = spec;
  for (auto& [name, ts] : out) {
    if (ts.shape.rank_known() && ts.shape.rank() > 0 && ts.shape.dim(0) == ctx.shard->global_batch)
      ts.shape.set_dim(0, ctx.shard->block());
  }
  return out;
}

IteratorContext BelowBatch(IteratorContext ctx) {
  LOOM_CHECK(ctx.shard != nullptr && ctx.shard->at_batch);
  auto below = std::make_shared<ShardRequest>(*ctx.shard);
  below->at_batch = false;
  ctx.shard = std::move(below);
  return ctx;
}

IteratorContext WithoutShard(IteratorContext ctx) {
  ctx.shard = nullptr;
  return ctx;
}

void NoteReadAhead(const IteratorContext& ctx) {
  if (ctx.shard != nullptr && ctx.shard->ledger != nullptr) ctx.shard->ledger->set_read_ahead();
}

namespace {

// The selection rule and position of a shard point, for elements and for row indices.
class ShardRule {
 public:
  explicit ShardRule(const ShardRequest& request)
      : global_batch_(request.global_batch),
        block_(request.block()),
        index_(request.index),
        ledger_(request.ledger) {}

  bool Mine() const {
    return position_ >= skip_until_ && (position_ % global_batch_) / block_ == index_;
  }
  void Skipped() { ++position_; }
  // After this shard's element at position_: the end of its block records the position.
  template <typename SaveFn>
  void Taken(const SaveFn& save_input) {
    const int64_t q = position_++;
    if (ledger_ != nullptr && ledger_->read_ahead() &&
        q % global_batch_ == (index_ + 1) * block_ - 1) {
      ledger_->Record(q / global_batch_ + 1, position_, save_input());
    }
  }
  // At the end of the stream: a last, partial, global batch has no block end, so its
  // position is recorded here (entry: the batch it ends).
  template <typename SaveFn>
  void Ended(const SaveFn& save_input) {
    if (ledger_ != nullptr && ledger_->read_ahead() && position_ % global_batch_ != 0) {
      ledger_->Record(position_ / global_batch_ + 1, position_, save_input());
    }
  }
  int64_t position() const { return position_; }
  void Restore(int64_t position, int64_t skip_until) {
    position_ = position;
    skip_until_ = skip_until;
  }
  void Save(StateWriter& w) const {
    w.Write<int64_t>(position_);
    w.Write<int64_t>(skip_until_);
  }
  void Restore(StateReader& r, const std::string& stage) {
    position_ = r.Read<int64_t>();
    skip_until_ = r.Read<int64_t>();
    if (position_ < 0 || position_ > kMaxRestoredCount || skip_until_ < 0 ||
        skip_until_ > kMaxRestoredCount) {
      throw DataLoss(stage, " state is corrupt: position ", position_, ", next batch at ",
                     skip_until_);
    }
  }

 private:
  const int64_t global_batch_, block_, index_;
  std::shared_ptr<ShardLedger> ledger_;
  int64_t position_ = 0;    // elements of the global stream read or skipped
  int64_t skip_until_ = 0;  // after a restore: the next global batch's first element
};

class ShardIterator : public Iterator, public ShardPoint {
 public:
  ShardIterator(std::unique_ptr<Iterator> input, const ShardRequest& request)
      : Iterator("ShardRows", input->spec()), input_(std::move(input)), rule_(request) {
    if (request.ledger != nullptr) request.ledger->set_point(this);
  }

  int64_t position() const override { return rule_.position(); }
  std::string SaveInput() override {
    StateWriter w;
    input_->SaveState(w);
    return std::move(w.data());
  }
  void RestoreAt(int64_t position, int64_t skip_until, const std::string* input_state) override {
    rule_.Restore(position, skip_until);
    if (input_state == nullptr) return;
    StateReader r(*input_state);
    input_->RestoreState(r);
    if (!r.AtEnd()) throw DataLoss("ShardRows state has trailing bytes at ", r.position());
  }

 protected:
  std::optional<Element> GetNextInternal() override {
    for (;;) {
      if (rule_.Mine()) {
        std::optional<Element> e = input_->GetNext();
        if (e) {
          rule_.Taken([this] { return SaveInput(); });
        } else {
          rule_.Ended([this] { return SaveInput(); });
        }
        return e;
      }
      if (!input_->Skip()) {
        rule_.Ended([this] { return SaveInput(); });
        return std::nullopt;
      }
      rule_.Skipped();
    }
  }
  void SaveInternal(StateWriter& w) override {
    rule_.Save(w);
    input_->SaveState(w);
  }
  void RestoreInternal(StateReader& r) override {
    rule_.Restore(r, "ShardRows");
    input_->RestoreState(r);
  }

 private:
  std::unique_ptr<Iterator> input_;
  ShardRule rule_;
};

class ShardIndexCursor : public IndexCursor, public ShardPoint {
 public:
  ShardIndexCursor(std::unique_ptr<IndexCursor> input, const ShardRequest& request)
      : input_(std::move(input)), rule_(request) {
    if (request.ledger != nullptr) request.ledger->set_point(this);
  }

  std::optional<int64_t> Next() override {
    for (;;) {
      std::optional<int64_t> i = input_->Next();
      if (!i) {
        rule_.Ended([this] { return SaveInput(); });
        return std::nullopt;
      }
      if (rule_.Mine()) {
        rule_.Taken([this] { return SaveInput(); });
        return i;
      }
      rule_.Skipped();
    }
  }
  void Save(StateWriter& w) override {
    rule_.Save(w);
    input_->Save(w);
  }
  void Restore(StateReader& r) override {
    rule_.Restore(r, "ShardRows");
    input_->Restore(r);
  }

  int64_t position() const override { return rule_.position(); }
  std::string SaveInput() override {
    StateWriter w;
    input_->Save(w);
    return std::move(w.data());
  }
  void RestoreAt(int64_t position, int64_t skip_until, const std::string* input_state) override {
    rule_.Restore(position, skip_until);
    if (input_state == nullptr) return;
    StateReader r(*input_state);
    input_->Restore(r);
    if (!r.AtEnd()) throw DataLoss("ShardRows state has trailing bytes at ", r.position());
  }

 private:
  std::unique_ptr<IndexCursor> input_;
  ShardRule rule_;
};

// The batch size of the first Batch, when only passing stages lie above it.
std::optional<int64_t> FirstBatchSize(const DatasetImpl& global) {
  const DatasetImpl* d = &global;
  for (;;) {
    if (auto b = d->shardable_batch_size()) return b;
    if (!d->passes_shard() || d->inputs().size() != 1) return std::nullopt;
    d = d->inputs()[0].get();
  }
}

constexpr const char* kStage = "ShardGlobalBatches";

int64_t Rows(const Element& e) {
  int64_t rows = -1;
  for (const auto& [name, t] : e) {
    if (t.shape().rank() == 0) {
      throw InvalidArgument(kStage, ": component '", name,
                            "' is a scalar, but sharding a global batch needs batches (call "
                            "Batch(global_batch_size) in the input_fn)");
    }
    if (rows >= 0 && t.dim(0) != rows) {
      throw InvalidArgument(kStage, ": components must share dim 0, but '", name, "' has ",
                            t.dim(0), " rows and another has ", rows);
    }
    rows = t.dim(0);
  }
  return rows;
}

class GlobalBatchesIterator : public Iterator {
 public:
  GlobalBatchesIterator(ElementSpec spec, std::shared_ptr<const DatasetImpl> global,
                        const IteratorContext& ctx, int64_t num_shards, int64_t index,
                        std::optional<int64_t> global_batch, AllShardsHaveFn all_shards_have)
      : Iterator(kStage, std::move(spec)),
        global_(std::move(global)),
        ctx_(WithoutShard(ctx)),
        num_shards_(num_shards),
        index_(index),
        global_batch_(global_batch),
        all_shards_have_(std::move(all_shards_have)) {
    Build();
  }

 protected:
  std::optional<Element> GetNextInternal() override {
    if (ended_) return std::nullopt;  // every shard ended at the same call
    std::optional<Element> next = input_->GetNext();
    // Row slicing: every shard built the same whole batch, so every shard skips the same
    // ones. A batch the shards cannot share (each epoch's short last batch of a Batch
    // before a Repeat) is skipped, not the end: ending there stopped training after one
    // epoch.
    while (!global_batch_ && num_shards_ > 1 && next && Rows(*next) % num_shards_ != 0) {
      if (index_ == 0 && !warned_skip_) {
        LOOM_LOG(WARNING) << "Skipping a global batch of " << Rows(*next) << " rows, which "
                          << num_shards_ << " shards cannot take evenly (a short batch, e.g. "
                          << "the last of each epoch with a Repeat after the Batch); one "
                          << "process trains it. Batch with drop_remainder for the same "
                          << "steps on any number of ranks (said once)";
        warned_skip_ = true;
      }
      next = input_->GetNext();
    }
    bool full = next.has_value();
    int64_t rows = 0;
    if (full && num_shards_ > 1) {
      rows = Rows(*next);
      full = !global_batch_ || rows == *global_batch_ / num_shards_;
      if (!full && index_ == 0) {
        LOOM_LOG(WARNING) << "The last global batch has fewer rows than " << *global_batch_ << " ("
                          << num_shards_ << " shards of " << *global_batch_ / num_shards_
                          << " rows each cannot take it evenly); the input ends here (make the "
                          << "data a multiple of the global batch, or repeat it)";
      }
    }
    if (all_shards_have_ ? !all_shards_have_(full) : !full) {
      ended_ = true;
      return std::nullopt;
    }
    ++delivered_;
    if (global_batch_) {
      ledger_->Trim(delivered_);
      return next;
    }
    if (num_shards_ == 1) return next;
    // Row slicing: every shard built the whole batch.
    const int64_t per = rows / num_shards_;
    const int64_t begin = index_ * per;
    Element out;
    for (const auto& [name, t] : *next)
      out.emplace_hint(out.end(), name, t.Slice(begin, begin + per));
    return out;
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(global_batch_.has_value());
    w.Write<int64_t>(num_shards_);
    w.Write<int64_t>(delivered_);
    w.Write<uint8_t>(ended_);
    if (!global_batch_) {
      input_->SaveState(w);  // the whole global pipeline: the same on every shard
      return;
    }
    ShardPoint* point = ledger_->point();
    std::optional<ShardLedger::Entry> entry;
    if (ledger_->read_ahead()) {
      entry = ledger_->Find(delivered_);
      // Entry k is recorded before batch k-1 leaves the shard point; only a fresh
      // iterator (k = 0) may have none, and then its state is the fresh one.
      LOOM_CHECK(entry || delivered_ == 0) << "no shard position after batch " << delivered_;
    } else {
      entry = ShardLedger::Entry{point->position(), point->SaveInput()};
    }
    w.Write<uint8_t>(entry.has_value());
    if (entry) {
      w.Write<int64_t>(entry->position);
      w.WriteString(entry->state);
    }
  }

  void RestoreInternal(StateReader& r) override {
    const bool below = r.Read<uint8_t>() != 0;
    if (below != global_batch_.has_value()) {
      throw DataLoss(kStage, " state is corrupt: it was saved ",
                     below ? "below the first Batch" : "over whole global batches",
                     " but this pipeline shards ", below ? "whole global batches" : "below it");
    }
    const int64_t saved_shards = r.Read<int64_t>();
    const int64_t batches = r.Read<int64_t>();
    const bool ended = r.Read<uint8_t>() != 0;
    if (saved_shards < 1 || saved_shards > (int64_t{1} << 24) || batches < 0 ||
        batches > kMaxRestoredCount / std::max<int64_t>(1, global_batch_.value_or(1))) {
      throw DataLoss(kStage, " state is corrupt: ", saved_shards, " shards, ", batches, " batches");
    }
    if (global_batch_) {
      const bool has_position = r.Read<uint8_t>() != 0;
      int64_t position = 0;
      std::string state;
      if (has_position) {
        position = r.Read<int64_t>();
        state = r.ReadString();
        if (position < 0 || position > batches * *global_batch_) {
          throw DataLoss(kStage, " state is corrupt: element ", position, " lies beyond ", batches,
                         " global batches of ", *global_batch_);
        }
      }
      Build();  // a fresh pipeline below, positioned from the global state
      ledger_->point()->RestoreAt(position, batches * *global_batch_,
                                  has_position ? &state : nullptr);
      if (has_position && ledger_->read_ahead()) ledger_->Record(batches, position, state);
    } else {
      input_->RestoreState(r);
    }
    delivered_ = batches;
    ended_ = ended;
    if (saved_shards != num_shards_) {
      LOOM_LOG(INFO) << "The input position saved by " << saved_shards << " shard(s) continues on "
                     << num_shards_ << " at global batch " << batches
                     << " (the position is global: the same rows at every step)";
    }
  }

 private:
  void Build() {
    input_.reset();  // joins the old pipeline's workers before its ledger goes
    ledger_ = std::make_shared<ShardLedger>();
    IteratorContext ctx = ctx_;
    if (global_batch_) {
      ctx.shard = std::make_shared<ShardRequest>(
          ShardRequest{*global_batch_, num_shards_, index_, /*at_batch=*/true, ledger_});
    }
    input_ = global_->MakeIterator(ctx);
    LOOM_CHECK(!global_batch_ || ledger_->point() != nullptr)
        << "the shard request of " << global_->DebugString() << " reached no stage";
  }

  std::shared_ptr<const DatasetImpl> global_;
  IteratorContext ctx_;
  const int64_t num_shards_, index_;
  const std::optional<int64_t> global_batch_;  // set: sharded below the first Batch
  AllShardsHaveFn all_shards_have_;
  std::shared_ptr<ShardLedger> ledger_;
  std::unique_ptr<Iterator> input_;
  int64_t delivered_ = 0;  // global batches handed out
  bool ended_ = false;
  bool warned_skip_ = false;  // the skipped-batch warning is said once
};

ElementSpec ShardSpec(const ElementSpec& global, int64_t num_shards) {
  ElementSpec out = global;
  for (auto& [name, ts] : out) {
    if (!ts.shape.rank_known() || ts.shape.rank() == 0) continue;
    const int64_t b = ts.shape.dim(0);
    if (b != kUnknownDim && b % num_shards != 0) {
      throw InvalidArgument("the global batch of component '", name, "' has ", b, " rows, which ",
                            num_shards,
                            " shards (ranks) cannot share evenly: make the batch size a "
                            "multiple of the number of ranks");
    }
    if (b != kUnknownDim) ts.shape.set_dim(0, b / num_shards);
  }
  return out;
}

class GlobalBatchesDataset : public DatasetImpl {
 public:
  GlobalBatchesDataset(const std::shared_ptr<const DatasetImpl>& global, int64_t num_shards,
                       int64_t index, AllShardsHaveFn all_shards_have)
      : DatasetImpl(kStage, ShardSpec(global->spec(), num_shards), {global}),
        num_shards_(num_shards),
        index_(index),
        global_batch_(FirstBatchSize(*global)),
        all_shards_have_(std::move(all_shards_have)) {
    CheckArg(0 <= index && index < num_shards, kStage, "index must be in [0, ", num_shards,
             "), got ", index);
    if (global_batch_ && *global_batch_ % num_shards != 0) {
      throw InvalidArgument("the global batch of ", *global_batch_, " rows (",
                            global->DebugString(), ") cannot be shared evenly by ", num_shards,
                            " shards (ranks): make the batch size a multiple of the number of "
                            "ranks");
    }
  }
  // Nothing about the shards: a position saved by N shards restores into M.
  int64_t num_shards() const { return num_shards_; }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    return std::make_unique<GlobalBatchesIterator>(spec(), inputs()[0], ctx, num_shards_, index_,
                                                   global_batch_, all_shards_have_);
  }

 private:
  const int64_t num_shards_, index_;
  const std::optional<int64_t> global_batch_;
  AllShardsHaveFn all_shards_have_;
};

}  // namespace

std::unique_ptr<Iterator> MakeShardIterator(std::unique_ptr<Iterator> input,
                                            const IteratorContext& ctx) {
  if (ctx.shard == nullptr) return input;
  return std::make_unique<ShardIterator>(std::move(input), *ctx.shard);
}

std::unique_ptr<IndexCursor> MakeShardIndexCursor(std::unique_ptr<IndexCursor> input,
                                                  const IteratorContext& ctx) {
  if (ctx.shard == nullptr) return input;
  return std::make_unique<ShardIndexCursor>(std::move(input), *ctx.shard);
}

Dataset ShardGlobalBatches(const Dataset& global, int64_t num_shards, int64_t index,
                           AllShardsHaveFn all_shards_have) {
  CheckArg(num_shards > 0, kStage, "num_shards must be positive, got ", num_shards);
  return Dataset(std::make_shared<GlobalBatchesDataset>(global.impl(), num_shards, index,
                                                        std::move(all_shards_have)));
}

std::optional<Dataset> SingleShardSource(const Dataset& dataset) {
  const auto* shard = dynamic_cast<const GlobalBatchesDataset*>(dataset.impl().get());
  if (shard == nullptr || shard->num_shards() != 1) return std::nullopt;
  return Dataset(shard->inputs()[0]);
}

bool ShardsBelowBatch(const Dataset& global) { return FirstBatchSize(*global.impl()).has_value(); }

}  // namespace loom::data
