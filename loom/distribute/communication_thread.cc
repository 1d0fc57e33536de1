// WithCommunicationThread (communicator.h): a FIFO of collectives run by one thread.
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
#include "loom/distribute/communicator.h"

namespace loom::distribute {
namespace {

using Clock = std::chrono::steady_clock;

class ThreadedCommunicator : public Communicator {
 public:
  explicit ThreadedCommunicator(std::shared_ptr<Communicator> inner)
      : inner_(std::move(inner)), thread_([this] { Loop(); }) {}

  ~ThreadedCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    thread_.join();
  }

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  int local_size() const override { return inner_->local_size(); }

  void AllReduceSum(DType dtype, void* data, int64_t count) override {
    RunInOrder([=, this] { inner_->AllReduceSum(dtype, data, count); });
  }
  std::vector<std::string> AllGather(std::string_view bytes) override {
    std::vector<std::string> result;
    RunInOrder([&, this] { result = inner_->AllGather(bytes); });
    return result;
  }
  void Broadcast(void* data, int64_t bytes, int root) override {
    RunInOrder([=, this] { inner_->Broadcast(data, bytes, root); });
  }
  int64_t StartAllReduceSum(DType dtype, void* data, int64_t count) override {
    return Enqueue([=, this] { inner_->AllReduceSum(dtype, data, count); }, true);
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
    std::function<void()> run;
  };

  // A blocking collective: after the queued ones. With nothing queued or running it runs
  // here, on the caller's thread, which saves two thread switches per call (the stop
  // agreement's small all-reduces); `inner` still has one caller at a time, because only
  // the caller queues work (the one-thread-at-a-time rule above).
  template <typename Fn>
  void RunInOrder(Fn run) {
    bool idle;
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle = completed_ == issued_;
    }
    if (idle) {
      run();
    } else {
      WaitFor(Enqueue(std::move(run), false), false);
    }
  }

  int64_t Enqueue(std::function<void()> run, bool started) {
    int64_t ticket;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ticket = ++issued_;
      queue_.push_back({ticket, started, std::move(run)});
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
      task.run();
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
  mutable std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Task> queue_;                        // guarded by mu_
  int64_t issued_ = 0, completed_ = 0;            // guarded by mu_
  std::map<int64_t, std::exception_ptr> errors_;  // guarded by mu_
  OverlapStats stats_;                            // guarded by mu_
  bool stopping_ = false;                         // guarded by mu_
  bool running_ = false;  // a task is running (on either thread); guarded by mu_
  std::thread thread_;    // last: starts after the members above exist
};

}  // namespace

std::shared_ptr<Communicator> WithCommunicationThread(std::shared_ptr<Communicator> inner) {
  LOOM_CHECK(inner != nullptr) << "WithCommunicationThread: null communicator";
  return std::make_shared<ThreadedCommunicator>(std::move(inner));
}

}  // namespace loom::distribute
