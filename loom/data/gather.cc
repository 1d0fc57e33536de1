// The fast path: iterators over index-addressable pipelines (see dataset_impl.h). Elements
// are rows of a RowSource chosen by an IndexCursor, or batches of such rows gathered with
// memcpy; the state is the cursor's, plus (for prefetch) the index lists in flight.
#include <algorithm>
#include <deque>
#include <exception>

#include "loom/data/dataset_impl.h"
#include "loom/data/worker_pool.h"

namespace loom::data {
namespace {

// The next element's row indices: one for batch_size 0, else up to batch_size. False at
// the end (including a dropped short last batch).
bool PullIndices(IndexCursor& cursor, const DatasetImpl::GatherPlan& plan,
                 std::vector<int64_t>& out) {
  out.clear();
  const int64_t want = std::max<int64_t>(1, plan.batch_size);
  out.reserve(want);
  while (static_cast<int64_t>(out.size()) < want) {
    std::optional<int64_t> i = cursor.Next();
    if (!i) break;
    out.push_back(*i);
  }
  if (out.empty()) return false;
  if (plan.drop_remainder && static_cast<int64_t>(out.size()) < want) return false;
  return true;
}

// The context for index cursors over `rows`: restored row indices are checked against it.
IteratorContext WithRows(IteratorContext ctx, const RowSource& rows) {
  ctx.num_rows = rows.num_rows();
  return ctx;
}

Element Materialize(const RowSource& rows, const DatasetImpl::GatherPlan& plan,
                    const std::vector<int64_t>& indices) {
  if (plan.batch_size == 0) return rows.Row(indices[0]);
  return rows.Gather(indices);
}

class GatherIterator : public Iterator {
 public:
  // `ctx` has no shard request; `shard` (maybe) has: the row indices are sharded.
  GatherIterator(const DatasetImpl::GatherPlan& plan, const IteratorContext& ctx, std::string stage,
                 ElementSpec spec, const IteratorContext& shard)
      : Iterator(std::move(stage), std::move(spec)),
        plan_(plan),
        rows_(plan.indexed->MakeRows(ctx)),
        cursor_(MakeShardIndexCursor(plan.indexed->MakeIndexCursor(WithRows(ctx, *rows_)), shard)) {
  }

 protected:
  std::optional<Element> GetNextInternal() override {
    if (!PullIndices(*cursor_, plan_, indices_)) return std::nullopt;
    return Materialize(*rows_, plan_, indices_);
  }
  void SaveInternal(StateWriter& w) override { cursor_->Save(w); }
  void RestoreInternal(StateReader& r) override { cursor_->Restore(r); }

 private:
  DatasetImpl::GatherPlan plan_;
  std::shared_ptr<const RowSource> rows_;
  std::unique_ptr<IndexCursor> cursor_;
  std::vector<int64_t> indices_;
};

// The consumer advances the index stream (cheap) and hands each index list to a worker
// that gathers the rows (the expensive part). Saved state: the cursor plus the lists in
// flight, which Restore gathers again — never the gathered tensors.
class GatherPrefetchIterator : public Iterator {
 public:
  GatherPrefetchIterator(const DatasetImpl::GatherPlan& plan, const IteratorContext& ctx,
                         ElementSpec spec, int64_t buffer_size, const IteratorContext& shard)
      : Iterator("Prefetch", std::move(spec)),
        plan_(plan),
        rows_(plan.indexed->MakeRows(ctx)),
        cursor_(MakeShardIndexCursor(plan.indexed->MakeIndexCursor(WithRows(ctx, *rows_)), shard)),
        buffer_size_(std::max<int64_t>(1, buffer_size)),
        pool_(static_cast<int>(std::clamp<int64_t>(
            buffer_size_, 1, std::max(1, WorkerPool::ResolveThreads(0) / 2)))) {}

  ~GatherPrefetchIterator() override {
    // Workers reference rows_ and the jobs; wait for those in flight before members go.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return in_flight_ == 0; });
  }

 protected:
  std::optional<Element> GetNextInternal() override {
    Fill(1);
    if (pending_.empty()) return std::nullopt;
    std::shared_ptr<Job> job = pending_.front();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return job->done; });
    }
    pending_.pop_front();
    Fill(buffer_size_);
    if (job->error) std::rethrow_exception(job->error);
    return std::move(job->result);
  }

  void SaveInternal(StateWriter& w) override {
    w.Write<uint8_t>(exhausted_);
    w.Write<uint64_t>(pending_.size());
    for (const auto& job : pending_) {
      w.Write<uint64_t>(job->indices.size());
      for (int64_t i : job->indices) w.Write<int64_t>(i);
    }
    cursor_->Save(w);
  }

  void RestoreInternal(StateReader& r) override {
    pending_.clear();  // workers still gathering finish into orphaned jobs
    exhausted_ = r.Read<uint8_t>() != 0;
    const uint64_t n = r.Read<uint64_t>();
    std::vector<std::vector<int64_t>> lists(std::min<uint64_t>(n, 1 << 20));
    if (lists.size() != n) throw DataLoss("Prefetch state is corrupt: ", n, " pending lists");
    for (auto& list : lists) {
      const uint64_t k = r.Read<uint64_t>();
      if (k == 0 || k > static_cast<uint64_t>(std::max<int64_t>(1, plan_.batch_size))) {
        throw DataLoss("Prefetch state is corrupt: a list of ", k, " indices");
      }
      for (uint64_t j = 0; j < k; ++j) {
        int64_t i = r.Read<int64_t>();
        if (i < 0 || i >= rows_->num_rows()) {
          throw DataLoss("Prefetch state names row ", i, " of ", rows_->num_rows());
        }
        list.push_back(i);
      }
    }
    cursor_->Restore(r);
    for (auto& list : lists) Dispatch(std::move(list));
  }

 private:
  struct Job {
    std::vector<int64_t> indices;
    Element result;
    std::exception_ptr error;
    bool done = false;
  };

  void Fill(int64_t target) {
    while (!exhausted_ && static_cast<int64_t>(pending_.size()) < target) {
      std::vector<int64_t> indices;
      if (!PullIndices(*cursor_, plan_, indices)) {
        exhausted_ = true;
        break;
      }
      Dispatch(std::move(indices));
    }
  }

  void Dispatch(std::vector<int64_t> indices) {
    auto job = std::make_shared<Job>();
    job->indices = std::move(indices);
    pending_.push_back(job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++in_flight_;
    }
    pool_.Schedule([this, job] {
      Element e;
      std::exception_ptr error;
      try {
        e = Materialize(*rows_, plan_, job->indices);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      job->result = std::move(e);
      job->error = error;
      job->done = true;
      --in_flight_;
      cv_.notify_all();
    });
  }

  DatasetImpl::GatherPlan plan_;
  std::shared_ptr<const RowSource> rows_;
  std::unique_ptr<IndexCursor> cursor_;
  const int64_t buffer_size_;
  bool exhausted_ = false;
  std::deque<std::shared_ptr<Job>> pending_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  WorkerPool pool_;  // last: destroyed (joined) first
};

}  // namespace

// Under a shard request the index stream is sharded: at the Batch that takes the request
// (batches of block rows of this shard's part of each global batch), or below it over
// single rows. Batches below the first Batch are sharded as elements.
std::unique_ptr<Iterator> MakeGatherIterator(const DatasetImpl::GatherPlan& plan,
                                             const IteratorContext& ctx, std::string stage,
                                             ElementSpec spec) {
  const IteratorContext plain = WithoutShard(ctx);
  if (ctx.shard == nullptr) {
    return std::make_unique<GatherIterator>(plan, plain, std::move(stage), std::move(spec), plain);
  }
  if (ctx.shard->at_batch) {
    DatasetImpl::GatherPlan local = plan;
    local.batch_size = ctx.shard->block();
    return std::make_unique<GatherIterator>(local, plain, std::move(stage), std::move(spec),
                                            BelowBatch(ctx));
  }
  if (plan.batch_size == 0) {
    return std::make_unique<GatherIterator>(plan, plain, std::move(stage), std::move(spec), ctx);
  }
  return MakeShardIterator(
      std::make_unique<GatherIterator>(plan, plain, std::move(stage), std::move(spec), plain), ctx);
}

std::unique_ptr<Iterator> MakeGatherPrefetchIterator(const DatasetImpl::GatherPlan& plan,
                                                     const IteratorContext& ctx, ElementSpec spec,
                                                     int64_t buffer_size) {
  const IteratorContext plain = WithoutShard(ctx);
  if (ctx.shard == nullptr) {
    return std::make_unique<GatherPrefetchIterator>(plan, plain, std::move(spec), buffer_size,
                                                    plain);
  }
  NoteReadAhead(ctx);  // the consumer pulls the indices of buffer_size batches ahead
  if (ctx.shard->at_batch) {
    DatasetImpl::GatherPlan local = plan;
    local.batch_size = ctx.shard->block();
    return std::make_unique<GatherPrefetchIterator>(local, plain, std::move(spec), buffer_size,
                                                    BelowBatch(ctx));
  }
  return MakeShardIterator(
      std::make_unique<GatherPrefetchIterator>(plan, plain, std::move(spec), buffer_size, plain),
      ctx);
}

}  // namespace loom::data
