#ifndef LOOM_BASE_LOGGING_H_
#define LOOM_BASE_LOGGING_H_

// LOOM_LOG(INFO) << "loss = " << loss;  writes one line "I 15:04:05.123 file.cc:42] ..."
// to the current sink (stderr by default). Tests install a capturing sink with
// ScopedLogSink. Thread-safe: each line is handed to the sink whole, under a mutex.
#include <functional>
#include <sstream>
#include <string>

namespace loom {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

using LogSink = std::function<void(LogLevel, const std::string& line)>;

// Replaces the sink for its lifetime and restores the previous one after.
class ScopedLogSink {
 public:
  explicit ScopedLogSink(LogSink sink);
  ~ScopedLogSink();
  ScopedLogSink(const ScopedLogSink&) = delete;
  ScopedLogSink& operator=(const ScopedLogSink&) = delete;

 private:
  LogSink previous_;
};

// Lines below this level are dropped. Default: kInfo.
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

namespace internal {
class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace loom

#define LOOM_LOG_LEVEL_DEBUG ::loom::LogLevel::kDebug
#define LOOM_LOG_LEVEL_INFO ::loom::LogLevel::kInfo
#define LOOM_LOG_LEVEL_WARNING ::loom::LogLevel::kWarning
#define LOOM_LOG_LEVEL_ERROR ::loom::LogLevel::kError
#define LOOM_LOG(level)                                 \
  if (LOOM_LOG_LEVEL_##level < ::loom::MinLogLevel()) { \
  } else                                                \
    ::loom::internal::LogMessage(LOOM_LOG_LEVEL_##level, __FILE__, __LINE__).stream()

#endif  // LOOM_BASE_LOGGING_H_
