// WithCommunicationThread (communicator.h): a FIFO of collectives run by one thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "loom/base/check.h"
#include "loom/base/error.h"
#include "loom/distribute/communicator.h"

namespace loom::distribute {
namespace {

using Clock = std::chrono::steady_clock;

class ThreadedCommunicator : public Communicator {
 public:
  ThreadedCommunicator(std::shared_ptr<Communicator> inner, CommunicationOptions options)
      : inner_(std::move(inner)), options_(options), thread_([this] { Loop(); }) {
    if (options_.collective_timeout_seconds > 0) watchdog_ = std::thread([this] { Watch(); });
  }

  ~ThreadedCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    watch_cv_.notify_all();
    thread_.join();
    if (watchdog_.joinable()) watchdog_.join();
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  int local_size() const override { return inner_->local_size(); }

  void AllReduceSum(DType dtype, void* data, int64_t count) override {
    RunInOrder("an all-reduce", [=, this] { inner_->AllReduceSum(dtype, data, count); });
  }
  std::vector<std::string> AllGather(std::string_view bytes) override {
    std::vector<std::string> result;
    RunInOrder("an all-gather", [&, this] { result = inner_->AllGather(bytes); });
    return result;
  }
  void Broadcast(void* data, int64_t bytes, int root) override {
    RunInOrder("a broadcast", [=, this] { inner_->Broadcast(data, bytes, root); });
  }
  int64_t StartAllReduceSum(DType dtype, void* data, int64_t count) override {
    return Enqueue(
        "an all-reduce of gradients", [=, this] { inner_->AllReduceSum(dtype, data, count); },
        true);
  }
  void Wait(int64_t ticket) override { WaitFor(ticket, true); }

  OverlapStats overlap_stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  [[noreturn]] void Abort(int exit_code, std::string_view reason) override {
    inner_->Abort(exit_code, reason);
    std::_Exit(exit_code);  // inner's Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  struct Task {
    int64_t ticket;
    bool started;  // by StartAllReduceSum: its time counts in the overlap stats
    const char* what;
    std::function<void()> run;
  };

  // Runs one collective of `inner` (on either thread), visible to the watchdog.
  template <typename Fn>
  void Timed(const char* what, Fn& run) {
    what_.store(what);
    since_ns_.store(Clock::now().time_since_epoch().count());
    struct Done {
      std::atomic<int64_t>& since;
      ~Done() { since.store(0); }
    } done{since_ns_};
    run();
  }

  // The watchdog: a collective running longer than the timeout ends the job.
  void Watch() {
    const auto timeout = std::chrono::duration<double>(options_.collective_timeout_seconds);
    const auto poll = std::min<Clock::duration>(
        std::chrono::seconds(1), std::chrono::duration_cast<Clock::duration>(timeout / 4));
    std::unique_lock<std::mutex> lock(mu_);
    while (!watch_cv_.wait_for(lock, poll, [&] { return stopping_; })) {
      const int64_t since = since_ns_.load();
      if (since == 0) continue;
      const auto waited = Clock::now() - Clock::time_point(Clock::duration(since));
      if (waited < timeout) continue;
      lock.unlock();
      inner_->Abort(1, StrCat("rank ", inner_->rank(), " of ", inner_->size(), " waited ",
                              std::chrono::duration<double>(waited).count(), " s in ", what_.load(),
                              " (CommunicationOptions::collective_timeout_seconds = ",
                              options_.collective_timeout_seconds,
                              "): another rank has left the job without calling Abort (it "
                              "returned, or caught an error) or is stuck; see that rank's "
                              "output. Relaunch to resume from the last checkpoint"));
    }
  }

  // A blocking collective: after the queued ones. With nothing queued or running it runs
  // here, on the caller's thread, which saves two thread switches per call (the stop
  // agreement's small all-reduces); `inner` still has one caller at a time, because only
  // the caller queues work (the one-thread-at-a-time rule above).
  template <typename Fn>
  void RunInOrder(const char* what, Fn run) {
    bool idle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle = completed_ == issued_;
    }
    if (idle) {
      Timed(what, run);
    } else {
      WaitFor(Enqueue(what, std::move(run), false), false);
    }
  }

  int64_t Enqueue(const char* what, std::function<void()> run, bool started) {
    int64_t ticket;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ticket = ++issued_;
      queue_.push_back({ticket, started, what, std::move(run)});
    }
    work_cv_.notify_one();
    return ticket;
  }

  // Waits until `ticket` is done. A queued task that the communication thread has not
  // picked up yet is run here instead (in queue order, still one caller of `inner` at a
  // time): on a busy machine the thread may not get a core for milliseconds, and a waiter
  // has nothing better to do.
  void WaitFor(int64_t ticket, bool count_exposed) {
    const auto begin = Clock::now();
    std::unique_lock<std::mutex> lock(mu_);
    while (completed_ < ticket) {
      if (!running_ && !queue_.empty()) {
        RunFront(lock);
      } else {
        done_cv_.wait(lock);
      }
    }
    if (count_exposed) {
      stats_.exposed_seconds += std::chrono::duration<double>(Clock::now() - begin).count();
    }
    // Errors of this ticket and of earlier ones nobody waited for surface here.
    std::exception_ptr error;
    while (!errors_.empty() && errors_.begin()->first <= ticket) {
      if (!error) error = errors_.begin()->second;
      errors_.erase(errors_.begin());
    }
    lock.unlock();
    if (error) std::rethrow_exception(error);
  }

  // Runs the first queued task. REQUIRES: lock holds mu_, !running_, queue_ non-empty.
  void RunFront(std::unique_lock<std::mutex>& lock) {
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    const auto begin = Clock::now();
    std::exception_ptr error;
    try {
      Timed(task.what, task.run);
    } catch (...) {
      error = std::current_exception();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    lock.lock();
    running_ = false;
    if (task.started) {
      ++stats_.collectives;
      stats_.busy_seconds += seconds;
    }
    if (error) errors_[task.ticket] = error;
    completed_ = task.ticket;
    done_cv_.notify_all();
    work_cv_.notify_one();
  }

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock,
                    [&] { return (stopping_ && !running_) || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      RunFront(lock);
    }
  }

  std::shared_ptr<Communicator> inner_;
  const CommunicationOptions options_;
  // When the running collective began (steady clock ns; 0: none runs) and what it is.
  std::atomic<int64_t> since_ns_{0};
  std::atomic<const char*> what_{""};
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_, watch_cv_;
  std::deque<Task> queue_;                        // guarded by mu_
  int64_t issued_ = 0, completed_ = 0;            // guarded by mu_
  std::map<int64_t, std::exception_ptr> errors_;  // guarded by mu_
  OverlapStats stats_;                            // guarded by mu_
  bool stopping_ = false;                         // guarded by mu_
  bool running_ = false;  // a task is running (on either thread); guarded by mu_
  std::thread thread_;    // starts after the members above exist
  std::thread watchdog_;  // started in the constructor, after thread_
};

}  // namespace

std::shared_ptr<Communicator> WithCommunicationThread(std::shared_ptr<Communicator> inner,
                                                      CommunicationOptions options) {
  LOOM_CHECK(inner != nullptr) << "WithCommunicationThread: null communicator";
  if (options.collective_timeout_seconds < 0) {
    throw InvalidArgument(
        "CommunicationOptions::collective_timeout_seconds must be >= 0 (0 waits "
        "forever), given ",
        options.collective_timeout_seconds);
  }
  return std::make_shared<ThreadedCommunicator>(std::move(inner), options);
}

}  // namespace loom::distribute
