#include "loom/base/logging.h"

#include <sys/time.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <mutex>

namespace loom {
namespace {

std::mutex& SinkMutex() {
  static std::mutex mu;
  return mu;
}

LogSink& CurrentSink() {
  static LogSink sink = [](LogLevel, const std::string& line) { std::cerr << line << std::endl; };
  return sink;
}

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 'D';
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}

}  // namespace

ScopedLogSink::ScopedLogSink(LogSink sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  previous_ = std::move(CurrentSink());
  CurrentSink() = std::move(sink);
}

ScopedLogSink::~ScopedLogSink() {
  std::lock_guard<std::mutex> lock(SinkMutex());
  CurrentSink() = std::move(previous_);
}

void SetMinLogLevel(LogLevel level) { min_level = static_cast<int>(level); }
LogLevel MinLogLevel() { return static_cast<LogLevel>(min_level.load()); }

namespace internal {

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm local;
  localtime_r(&tv.tv_sec, &local);
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%02d:%02d:%02d.%03d", local.tm_hour, local.tm_min,
                local.tm_sec, static_cast<int>(tv.tv_usec / 1000));
  const char* base = std::strrchr(file, '/');
  stream_ << LevelLetter(level) << ' ' << stamp << ' ' << (base ? base + 1 : file) << ':' << line
          << "] ";
}

LogMessage::~LogMessage() {
  std::lock_guard<std::mutex> lock(SinkMutex());
  CurrentSink()(level_, stream_.str());
}

}  // namespace internal
}  // namespace loom
