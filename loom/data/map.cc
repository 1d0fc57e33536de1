// Map: fn applied to every element. num_parallel_calls > 0 runs fn on worker threads
// while the consumer pulls inputs in order; results come out in input order (or as they
// finish with deterministic = false). An exception from fn is rethrown by GetNext unchanged,
// except an OutOfRange error, which ends the input there (TF1's map: a function, such as a
// py_func raising StopIteration, may end the dataset early).
// Saving waits for the calls in flight and stores their results.
#include <deque>
#include <exception>

#include "loom/data/dataset_impl.h"
#include "loom/data/worker_pool.h"

namespace loom::data {
namespace {

void WriteOutcome(StateWriter& w, const Element& e, const std::exception_ptr& error) {
  w.Write<uint8_t>(error != nullptr);
  if (!error) {
    w.WriteElement(e);
    return;
  }
  try {
    std::rethrow_exception(error);
  } catch (const Error& err) {
    w.Write<int32_t>(static_cast<int32_t>(err.code()));
    w.WriteString(err.message());
  } catch (const std::exception& err) {
    w.Write<int32_t>(static_cast<int32_t>(ErrorCode::kInternal));
    w.WriteString(err.what());
  }
}

void ReadOutcome(StateReader& r, Element& e, std::exception_ptr& error) {
  if (r.Read<uint8_t>()) {
    auto code = static_cast<ErrorCode>(r.Read<int32_t>());
    error = std::make_exception_ptr(Error(code, r.ReadString()));
  } else {
    e = r.ReadElement();
  }
}

bool IsOutOfRange(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.code() == ErrorCode::kOutOfRange;
  } catch (...) {
    return false;
  }
}

// What a sequential Map that fn ended saves in place of its input's state. Every input
// state starts with its stage's tag, a string that is never this one, so the states of
// Maps saved before fn could end them read as before.
constexpr std::string_view kEndedByFn = "<Map ended: fn raised OutOfRange>";

class MapIterator : public Iterator {
 public:
  MapIterator(ElementSpec spec, std::unique_ptr<Iterator> input, MapFn fn)
      : Iterator("Map", std::move(spec)), input_(std::move(input)), fn_(std::move(fn)) {}

 protected:
  std::optional<Element> GetNextInternal() override {
    if (ended_) return std::nullopt;
    std::optional<Element> e = input_->GetNext();
    if (!e) return std::nullopt;
    try {
      return fn_(std::move(*e));
    } catch (const Error& error) {
      if (error.code() != ErrorCode::kOutOfRange) throw;
      ended_ = true;
      return std::nullopt;
    }
  }
  void SaveInternal(StateWriter& w) override {
    if (ended_) {
      w.WriteString(kEndedByFn);
      return;
    }
    input_->SaveState(w);
  }
  void RestoreInternal(StateReader& r) override {
    StateReader probe = r;
    ended_ = probe.ReadString() == kEndedByFn;
    if (ended_) {
      r = probe;
      return;
    }
    input_->RestoreState(r);
  }

 private:
  std::unique_ptr<Iterator> input_;
  MapFn fn_;
  bool ended_ = false;  // fn raised OutOfRange: the end of this pass
};

class ParallelMapIterator : public Iterator {
 public:
  ParallelMapIterator(ElementSpec spec, std::unique_ptr<Iterator> input, MapFn fn,
                      int num_parallel_calls, bool deterministic)
      : Iterator("Map", std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        parallelism_(num_parallel_calls),
        deterministic_(deterministic),
        pool_(num_parallel_calls) {}

  ~ParallelMapIterator() override { WaitAll(); }

 protected:
  std::optional<Element> GetNextInternal() override {
    Fill();
    if (jobs_.empty()) return std::nullopt;
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (deterministic_) {
        cv_.wait(lock, [&] { return jobs_.front()->done; });
        job = jobs_.front();
        jobs_.pop_front();
      } else {
        auto first_done = jobs_.end();
        cv_.wait(lock, [&] {
          for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
            if ((*it)->done) {
              first_done = it;
              return true;
            }
          }
          return false;
        });
        job = *first_done;
        jobs_.erase(first_done);
      }
    }
    if (job->error && IsOutOfRange(job->error)) {
      // fn ended the input (TF1's map): the calls in flight are dropped, and the state
      // (input done, no results) says that the pass is over.
      WaitAll();
      jobs_.clear();
      input_done_ = true;
      return std::nullopt;
    }
    Fill();
    if (job->error) std::rethrow_exception(job->error);
    return std::move(job->result);
  }

  void SaveInternal(StateWriter& w) override {
    WaitAll();
    w.Write<uint8_t>(input_done_);
    w.Write<uint64_t>(jobs_.size());
    for (const auto& job : jobs_) WriteOutcome(w, job->result, job->error);
    input_->SaveState(w);
  }

  void RestoreInternal(StateReader& r) override {
    WaitAll();
    jobs_.clear();
    input_done_ = r.Read<uint8_t>() != 0;
    const uint64_t n = r.Read<uint64_t>();
    if (n > static_cast<uint64_t>(parallelism_)) {
      throw DataLoss("Map state holds ", n, " results for ", parallelism_, " parallel calls");
    }
    for (uint64_t i = 0; i < n; ++i) {
      auto job = std::make_shared<Job>();
      ReadOutcome(r, job->result, job->error);
      if (!job->error) CheckRestoredElement("Map", spec(), job->result);
      job->done = true;
      jobs_.push_back(job);
    }
    input_->RestoreState(r);
  }

 private:
  struct Job {
    Element result;
    std::exception_ptr error;
    bool done = false;
  };

  void WaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] {
      for (const auto& j : jobs_)
        if (!j->done) return false;
      return true;
    });
  }

  void Fill() {
    while (!input_done_ && static_cast<int>(jobs_.size()) < parallelism_) {
      auto job = std::make_shared<Job>();
      std::optional<Element> e;
      try {
        e = input_->GetNext();
      } catch (...) {
        // The input's error takes its place in the output order.
        job->error = std::current_exception();
        job->done = true;
        input_done_ = true;
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(job);
        return;
      }
      if (!e) {
        input_done_ = true;
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(job);
      }
      pool_.Schedule([this, job, element = std::move(*e)]() mutable {
        Element out;
        std::exception_ptr error;
        try {
          out = fn_(std::move(element));
        } catch (...) {
          error = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(mu_);
        job->result = std::move(out);
        job->error = error;
        job->done = true;
        cv_.notify_all();
      });
    }
  }

  std::unique_ptr<Iterator> input_;
  MapFn fn_;
  const int parallelism_;
  const bool deterministic_;
  bool input_done_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  WorkerPool pool_;  // last: joined first
};

class MapDataset : public DatasetImpl {
 public:
  MapDataset(const std::shared_ptr<const DatasetImpl>& input, MapFn fn, MapOptions options)
      : DatasetImpl("Map", options.output_spec.value_or(input->spec()), {input}),
        fn_(std::move(fn)),
        options_(std::move(options)) {
    CheckArg(static_cast<bool>(fn_), "Map", "fn is empty");
    CheckArg(options_.num_parallel_calls >= 0 || options_.num_parallel_calls == kAutotune, "Map",
             "num_parallel_calls must be >= 0 or kAutotune, got ", options_.num_parallel_calls);
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    auto input = inputs()[0]->MakeIterator(ctx);
    if (options_.num_parallel_calls == 0) {
      return std::make_unique<MapIterator>(LocalSpec(spec(), ctx), std::move(input), fn_);
    }
    if (ctx.shard != nullptr) NoteReadAhead(ctx);
    return std::make_unique<ParallelMapIterator>(
        LocalSpec(spec(), ctx), std::move(input), fn_,
        WorkerPool::ResolveThreads(options_.num_parallel_calls), options_.deterministic);
  }

 public:
  // One output per input, in order (unless a parallel map may reorder them).
  bool passes_shard() const override {
    return options_.num_parallel_calls == 0 || options_.deterministic;
  }

 private:
  MapFn fn_;
  MapOptions options_;
};

}  // namespace

Dataset Dataset::Map(MapFn fn, MapOptions options) const {
  return Dataset(std::make_shared<MapDataset>(impl(), std::move(fn), std::move(options)));
}

}  // namespace loom::data
