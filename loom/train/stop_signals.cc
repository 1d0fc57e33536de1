#include "loom/train/stop_signals.h"

#include <signal.h>  // NOLINT(modernize-deprecated-headers): sigaction is POSIX, not <csignal>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "loom/base/logging.h"

namespace loom::train {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};
constexpr int kNumStopSignals = sizeof(kStopSignals) / sizeof(kStopSignals[0]);

// Read by the handler: lock-free atomics only.
std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free);

// Guarded by ScopeMutex(); never touched by the handler.
int g_scopes = 0;
struct sigaction g_previous[kNumStopSignals];
bool g_installed[kNumStopSignals];

std::mutex& ScopeMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}

void WriteStderr(const char* text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void OnStopSignal(int signal) {
  int expected = 0;
  if (!g_received.compare_exchange_strong(expected, signal)) {
    // The second signal: die of it now.
    WriteStderr("\nloom: second stop signal, exiting now\n");
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(signal, &dfl, nullptr);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, signal);
    ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
    ::raise(signal);
    ::_exit(128 + signal);  // not reached: the default action of all three terminates
  }
  WriteStderr(signal == SIGTERM  ? "\nloom: SIGTERM received; finishing this step and saving "
                                   "(send it again to exit now)\n"
              : signal == SIGINT ? "\nloom: SIGINT received; finishing this step and saving "
                                   "(send it again to exit now)\n"
                                 : "\nloom: SIGUSR1 received; finishing this step and saving "
                                   "(send it again to exit now)\n");
}

class StopSignalHook : public SessionRunHook {
 public:
  SessionRunArgs BeforeRun(SessionRunContext& context) override {
    Check(context);
    return {};
  }
  void AfterRun(SessionRunContext& context, const SessionRunValues&) override { Check(context); }

 private:
  void Check(SessionRunContext& context) {
    const int signal = g_received.load();
    if (signal == 0) return;
    if (!logged_) {
      LOOM_LOG(WARNING) << "Stopping training on " << StopSignalName(signal)
                        << ": the final checkpoint and summaries are being written";
      logged_ = true;
    }
    context.RequestStop();
  }
  bool logged_ = false;
};

}  // namespace

ScopedStopSignals::ScopedStopSignals() {
  std::lock_guard<std::mutex> lock(ScopeMutex());
  if (g_scopes++ > 0) return;
  g_received.store(0);
  for (int i = 0; i < kNumStopSignals; ++i) {
    g_installed[i] = false;
    struct sigaction previous;
    if (::sigaction(kStopSignals[i], nullptr, &previous) != 0) continue;
    if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN) continue;
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    // Block the other stop signals while the handler runs, so two at once are ordered.
    for (int s : kStopSignals) sigaddset(&action.sa_mask, s);
    action.sa_flags = SA_RESTART;  // a blocking read or sleep carries on after the flag is set
    if (::sigaction(kStopSignals[i], &action, &g_previous[i]) == 0) g_installed[i] = true;
  }
}

ScopedStopSignals::~ScopedStopSignals() {
  std::lock_guard<std::mutex> lock(ScopeMutex());
  if (--g_scopes > 0) return;
  for (int i = 0; i < kNumStopSignals; ++i) {
    if (g_installed[i]) ::sigaction(kStopSignals[i], &g_previous[i], nullptr);
    g_installed[i] = false;
  }
}

int ScopedStopSignals::received() const { return g_received.load(); }

std::shared_ptr<SessionRunHook> ScopedStopSignals::NewHook() const {
  return std::make_shared<StopSignalHook>();
}

const char* StopSignalName(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "a signal";
  }
}

}  // namespace loom::train
