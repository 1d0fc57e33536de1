#include "loom/cli/progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "loom/graph/collections.h"
#include "loom/graph/graph.h"
#include "loom/train/global_step.h"

namespace loom::cli {

std::string FormatDuration(double secs) {
  // Rounded to the nearest second; a negative (an ETA once max_steps is passed) or NaN
  // duration is 0, and a huge one is capped so that the rounding cannot overflow.
  const int64_t s = secs > 0 ? std::llround(std::min(secs, 1e15)) : 0;
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  return buf;
}

namespace {

class ProgressHook : public train::SessionRunHook {
 public:
  explicit ProgressHook(ProgressOptions options) : options_(options) {}

  void Begin(Graph& graph) override {
    step_ = train::GetGlobalStep(graph);
    // The loss the graph declares (Estimator::Train adds it); none: no loss column.
    const std::vector<Output> losses = graph.collections().Get(GraphKeys::kLoss);
    if (!losses.empty()) loss_ = losses.front();
  }
  void AfterCreateSession(Session& session) override {
    // The step counts from the restored global step; each run advances it by one.
    if (step_.node != nullptr) {
      Tensor t = session.Eval(step_);
      first_step_ = t.dtype() == kInt64 ? t.data<int64_t>()[0] : t.data<int32_t>()[0];
    } else {
      first_step_ = 0;
    }
    start_ = Clock::now();
    last_print_ = start_;
  }
  train::SessionRunArgs BeforeRun(train::SessionRunContext&) override {
    train::SessionRunArgs args;
    if (loss_.node != nullptr) args.fetches.push_back(loss_);
    return args;
  }
  void AfterRun(train::SessionRunContext&, const train::SessionRunValues& values) override {
    int64_t step = first_step_ + ++steps_run_;
    double loss = 0.0;
    if (loss_.node != nullptr) {
      const Tensor& t = values.results[0];
      loss = t.dtype() == kFloat64 ? t.data<double>()[0] : t.data<float>()[0];
    }
    last_step_ = step;
    last_loss_ = loss;
    auto now = Clock::now();
    double since_print = std::chrono::duration<double>(now - last_print_).count();
    bool due = options_.tty ? since_print >= 0.2 : (step % options_.every_steps == 0);
    if (due) Print(now, false);
  }
  void End(Session&) override {
    // A plain line already printed for this step is not repeated.
    if (last_step_ > 0 && (options_.tty || last_step_ != printed_step_)) Print(Clock::now(), true);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void Print(Clock::time_point now, bool final) {
    last_print_ = now;
    printed_step_ = last_step_;
    double elapsed = std::chrono::duration<double>(now - start_).count();
    double rate = elapsed > 0 ? (last_step_ - first_step_) / elapsed : 0;
    std::string line = "step " + std::to_string(last_step_);
    if (options_.max_steps) {
      line += '/';
      line += std::to_string(*options_.max_steps);
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "  loss %.4f  %.1f steps/s", last_loss_, rate);
    line += buf;
    if (options_.max_steps && rate > 0 && !final) {
      line += "  ETA " + FormatDuration((*options_.max_steps - last_step_) / rate);
    }
    if (final) line += "  (" + FormatDuration(elapsed) + ")";
    if (options_.tty) {
      std::fprintf(options_.out, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
    } else {
      std::fprintf(options_.out, "%s\n", line.c_str());
    }
    std::fflush(options_.out);
  }

  ProgressOptions options_;
  Output step_;
  Output loss_;
  Clock::time_point start_, last_print_;
  int64_t steps_run_ = 0, first_step_ = 0, last_step_ = 0, printed_step_ = -1;
  double last_loss_ = 0;
};

}  // namespace

std::shared_ptr<train::SessionRunHook> NewProgressHook(ProgressOptions options) {
  return std::make_shared<ProgressHook>(options);
}

}  // namespace loom::cli
