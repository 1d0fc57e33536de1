// Prefetch: a background thread keeps up to buffer_size elements ready. Over a gather
// plan (index-addressable rows or batches of them) the fast-path iterator in gather.cc is
// used instead. Errors are buffered in order and rethrown by the consumer's GetNext.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "loom/data/dataset_impl.h"

namespace loom::data {
namespace {

class PrefetchIterator : public Iterator {
 public:
  PrefetchIterator(ElementSpec spec, std::unique_ptr<Iterator> input, int64_t buffer_size)
      : Iterator("Prefetch", std::move(spec)),
        input_(std::move(input)),
        buffer_size_(buffer_size) {}

  ~PrefetchIterator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 protected:
  std::optional<Element> GetNextInternal() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!worker_.joinable()) worker_ = std::thread([this] { Loop(); });
    cv_.wait(lock, [this] { return !buffer_.empty() || end_reached_; });
    if (buffer_.empty()) return std::nullopt;
    Slot slot = std::move(buffer_.front());
    buffer_.pop_front();
    cv_.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.element);
  }

  void SaveInternal(StateWriter& w) override {
    std::unique_lock<std::mutex> lock(mu_);
    // Once reading has begun, the buffer is filled (or the input ended) before it is saved:
    // what the state holds then depends on the consumer's position only, not on how far
    // the worker got, so two equal runs save equal bytes (a run saved a full Shuffle
    // buffer upstream or an empty one at a pass boundary, by timing).
    if (worker_.joinable()) {
      cv_.wait(lock, [this] {
        return end_reached_ || static_cast<int64_t>(buffer_.size()) >= buffer_size_;
      });
    }
    Pause(lock);
    w.Write<uint8_t>(end_reached_);
    w.Write<uint64_t>(buffer_.size());
    for (const Slot& slot : buffer_) {
      w.Write<uint8_t>(slot.error != nullptr);
      if (slot.error) {
        try {
          std::rethrow_exception(slot.error);
        } catch (const Error& e) {
          w.Write<int32_t>(static_cast<int32_t>(e.code()));
          w.WriteString(e.message());
        } catch (const std::exception& e) {
          w.Write<int32_t>(static_cast<int32_t>(ErrorCode::kInternal));
          w.WriteString(e.what());
        }
      } else {
        w.WriteElement(slot.element);
      }
    }
    input_->SaveState(w);
    Resume();
  }

  void RestoreInternal(StateReader& r) override {
    std::unique_lock<std::mutex> lock(mu_);
    Pause(lock);
    buffer_.clear();
    end_reached_ = r.Read<uint8_t>() != 0;
    const uint64_t n = r.Read<uint64_t>();
    if (n > static_cast<uint64_t>(buffer_size_)) {
      throw DataLoss("Prefetch state holds ", n, " elements for a buffer of ", buffer_size_);
    }
    for (uint64_t i = 0; i < n; ++i) {
      Slot slot;
      if (r.Read<uint8_t>()) {
        auto code = static_cast<ErrorCode>(r.Read<int32_t>());
        slot.error = std::make_exception_ptr(Error(code, r.ReadString()));
      } else {
        slot.element = r.ReadElement();
        CheckRestoredElement("Prefetch", spec(), slot.element);
      }
      buffer_.push_back(std::move(slot));
    }
    input_->RestoreState(r);
    Resume();
  }

 private:
  struct Slot {
    Element element;
    std::exception_ptr error;
  };

  // Stops the worker between pulls, so the input may be saved or restored.
  void Pause(std::unique_lock<std::mutex>& lock) {
    paused_ = true;
    cv_.wait(lock, [this] { return !busy_; });
  }
  void Resume() {
    paused_ = false;
    cv_.notify_all();
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] {
        return stop_ ||
               (!paused_ && !end_reached_ && static_cast<int64_t>(buffer_.size()) < buffer_size_);
      });
      if (stop_) return;
      busy_ = true;
      lock.unlock();
      Slot slot;
      bool end = false;
      try {
        std::optional<Element> e = input_->GetNext();
        if (e)
          slot.element = std::move(*e);
        else
          end = true;
      } catch (...) {
        slot.error = std::current_exception();
      }
      lock.lock();
      busy_ = false;
      if (end || slot.error) end_reached_ = true;
      if (!end) buffer_.push_back(std::move(slot));
      cv_.notify_all();
    }
  }

  std::unique_ptr<Iterator> input_;
  const int64_t buffer_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Slot> buffer_;
  bool end_reached_ = false;
  bool paused_ = false;
  bool busy_ = false;
  bool stop_ = false;
  std::thread worker_;
};

class PrefetchDataset : public DatasetImpl {
 public:
  PrefetchDataset(const std::shared_ptr<const DatasetImpl>& input, int64_t buffer_size)
      : DatasetImpl("Prefetch", input->spec(), {input}), buffer_size_(buffer_size) {
    CheckArg(buffer_size > 0, "Prefetch", "buffer_size must be positive, got ", buffer_size);
  }

 protected:
  std::unique_ptr<Iterator> MakeIteratorInternal(const IteratorContext& ctx) const override {
    const auto& input = inputs()[0];
    if (auto plan = input->gather_plan(); plan && plan->batch_size > 0) {
      return MakeGatherPrefetchIterator(*plan, ctx, LocalSpec(spec(), ctx), buffer_size_);
    }
    if (ctx.shard != nullptr) NoteReadAhead(ctx);
    return std::make_unique<PrefetchIterator>(LocalSpec(spec(), ctx), input->MakeIterator(ctx),
                                              buffer_size_);
  }

 public:
  bool passes_shard() const override { return true; }

 private:
  int64_t buffer_size_;
};

}  // namespace

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  CheckArg(buffer_size >= 0 || buffer_size == kAutotune, "Prefetch",
           "buffer_size must be >= 0 or kAutotune (-1, TF's AUTOTUNE), got ", buffer_size);
  if (buffer_size == 0) return *this;  // TF's prefetch(0): the consumer reads straight through
  if (buffer_size == kAutotune) buffer_size = kAutotunePrefetchBuffer;
  return Dataset(std::make_shared<PrefetchDataset>(impl(), buffer_size));
}

}  // namespace loom::data
