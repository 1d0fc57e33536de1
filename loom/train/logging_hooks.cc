// Hooks that report progress: StepCounterHook and LoggingTensorHook.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "loom/base/logging.h"
#include "loom/train/basic_hooks.h"
#include "loom/train/summary_proto.h"

namespace loom::train {
namespace {

SecondOrStepTimerOptions StepCounterTimer(const StepCounterOptions& o) {
  SecondOrStepTimerOptions t{
      .every_secs = o.every_n_secs, .every_steps = o.every_n_steps, .env = o.env};
  if (!t.every_secs && !t.every_steps) t.every_steps = 100;
  return t;
}

SecondOrStepTimerOptions LoggingTimer(const LoggingTensorOptions& o) {
  if (o.at_end && !o.every_n_iter && !o.every_n_secs) return {.never = true, .env = o.env};
  return {.every_secs = o.every_n_secs, .every_steps = o.every_n_iter, .env = o.env};
}

// ---- numpy's str() of a value -----------------------------------------------------------

// Shortest round-trip digits of v in `format` (numpy's dragon4 with unique=True).
template <typename T>
std::string Shortest(T v, std::chars_format format) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), v, format);
  return std::string(buf, result.ptr);
}

template <typename T>
std::string NonFinite(T v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

// A positional number with at most `max_frac` fraction digits, trailing zeros trimmed;
// an integral value keeps its dot ("2."), as numpy's trim='.'.
template <typename T>
std::string Positional(T v, int max_frac) {
  std::string s = Shortest(v, std::chars_format::fixed);
  const size_t dot = s.find('.');
  if (dot != std::string::npos && static_cast<int>(s.size() - dot - 1) > max_frac) {
    char buf[512];
    auto result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed, max_frac);
    s.assign(buf, result.ptr);
    while (s.back() == '0') s.pop_back();
  }
  if (s.find('.') == std::string::npos) s += '.';
  return s;
}

// Scientific as numpy prints it: mantissa digits trimmed, a dot kept, exponent of at
// least two digits ("1.e-05", "1.5e+10").
template <typename T>
std::string Scientific(T v, int max_frac) {
  std::string s = Shortest(v, std::chars_format::scientific);
  size_t e = s.find('e');
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  const size_t dot = mantissa.find('.');
  if (dot != std::string::npos && static_cast<int>(mantissa.size() - dot - 1) > max_frac) {
    char buf[64];
    auto result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific, max_frac);
    s.assign(buf, result.ptr);
    e = s.find('e');
    mantissa = s.substr(0, e);
    exponent = s.substr(e + 1);
    while (mantissa.back() == '0') mantissa.pop_back();
  }
  if (mantissa.find('.') == std::string::npos) mantissa += '.';
  return mantissa + "e" + exponent;
}

// numpy's str of a float scalar: shortest repr, positional for 1e-4 <= |v| < 1e16
// ("10.0", "0.6931472"), else scientific ("1e-05").
template <typename T>
std::string ScalarString(T v) {
  if (!std::isfinite(v)) return NonFinite(v);
  const T a = std::abs(v);
  if (a == 0 || (a >= T(1e-4) && a < T(1e16))) {
    std::string s = Shortest(v, std::chars_format::fixed);
    if (s.find('.') == std::string::npos) s += ".0";
    return s;
  }
  return Shortest(v, std::chars_format::general);
}

// Every element of a float array in numpy's default style (precision 8, maxprec): one
// notation for all, the dots aligned by padding.
template <typename T>
std::vector<std::string> FloatElements(const T* v, int64_t n) {
  T max_abs = 0, min_abs = std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i]) || v[i] == 0) continue;
    max_abs = std::max(max_abs, std::abs(v[i]));
    min_abs = std::min(min_abs, std::abs(v[i]));
  }
  const bool exp = max_abs >= T(1e8) ||
                   (std::isfinite(min_abs) && (min_abs < T(1e-4) || max_abs / min_abs > T(1e3)));
  std::vector<std::string> out(n);
  size_t left = 0, right = 0;  // widths before and after the dot (or the 'e' for exp)
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) continue;
    out[i] = exp ? Scientific(v[i], 8) : Positional(v[i], 8);
    const size_t dot = out[i].find('.');
    const size_t end = exp ? out[i].find('e') : out[i].size();
    left = std::max(left, dot);
    right = std::max(right, end - dot - 1);
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) {
      out[i] = NonFinite(v[i]);
      out[i] = std::string(left + 1 + right > out[i].size() ? left + 1 + right - out[i].size() : 0,
                           ' ') +
               out[i];
      continue;
    }
    const size_t dot = out[i].find('.');
    const size_t end = exp ? out[i].find('e') : out[i].size();
    std::string padded = std::string(left - dot, ' ') + out[i].substr(0, end) +
                         std::string(right - (end - dot - 1), ' ');
    if (exp) {
      // Mantissa digits padded with zeros before the exponent, as numpy does.
      padded = std::string(left - dot, ' ') + out[i].substr(0, end) +
               std::string(right - (end - dot - 1), '0') + out[i].substr(end);
    }
    out[i] = padded;
  }
  return out;
}

std::vector<std::string> Elements(const Tensor& t) {
  const int64_t n = t.NumElements();
  std::vector<std::string> out(n);
  switch (t.dtype()) {
    case kFloat32:
      return FloatElements(t.data<float>(), n);
    case kFloat64:
      return FloatElements(t.data<double>(), n);
    case kBool:
      for (int64_t i = 0; i < n; ++i) out[i] = t.data<bool>()[i] ? "True" : "False";
      break;
    case kString:
      for (int64_t i = 0; i < n; ++i) out[i] = "b'" + t.data<std::string>()[i] + "'";
      break;
    default:
      SwitchNumeric(t.dtype(), "FormatLikeNumpy", [&](auto tag) {
        using T = decltype(tag);
        for (int64_t i = 0; i < n; ++i)
          out[i] = std::to_string(static_cast<int64_t>(t.data<T>()[i]));
        return 0;
      });
  }
  size_t width = 0;
  for (const std::string& e : out) width = std::max(width, e.size());
  if (t.dtype() != kString) {
    for (std::string& e : out) e.insert(0, width - e.size(), ' ');
  }
  return out;
}

// Nested brackets over dims [d, rank), rows after the first indented by the depth.
void Nest(const Tensor& t, const std::vector<std::string>& elements, int d, int64_t offset,
          int64_t stride_product, std::string& out) {
  const int rank = t.rank();
  out += '[';
  const int64_t size = t.dim(d);
  const int64_t stride = stride_product / std::max<int64_t>(size, 1);
  for (int64_t i = 0; i < size; ++i) {
    if (i > 0) {
      if (d == rank - 1) {
        out += ' ';
      } else {
        out += std::string(rank - d - 1, '\n') + std::string(d + 1, ' ');
      }
    }
    if (d == rank - 1) {
      out += elements[offset + i];
    } else {
      Nest(t, elements, d + 1, offset + i * stride, stride, out);
    }
  }
  out += ']';
}

}  // namespace

std::string FormatLikeNumpy(const Tensor& t) {
  if (t.rank() == 0) {
    switch (t.dtype()) {
      case kFloat32:
        return ScalarString(t.scalar<float>());
      case kFloat64:
        return ScalarString(t.scalar<double>());
      default:
        return Elements(t)[0];
    }
  }
  if (t.NumElements() > 1000) return t.DebugString(6);  // numpy would summarize with "..."
  std::string out;
  Nest(t, Elements(t), 0, 0, t.NumElements(), out);
  return out;
}

StepCounterHook::StepCounterHook(StepCounterOptions options)
    : options_(std::move(options)), timer_(StepCounterTimer(options_)) {
  if (!options_.summary_writer && !options_.output_dir.empty()) {
    options_.summary_writer = SharedFileWriter(options_.output_dir, options_.env);
  }
}

void StepCounterHook::Begin(Graph& graph) {
  global_step_ = RequireGlobalStep(graph, "StepCounterHook");
  tag_ = global_step_.node->name() + "/sec";
}

SessionRunArgs StepCounterHook::BeforeRun(SessionRunContext&) {
  return {.fetches = {global_step_}};
}

void StepCounterHook::AfterRun(SessionRunContext& context, const SessionRunValues& values) {
  const int64_t stale_step = StepValue(values.results[0]);
  if (timer_.ShouldTriggerForStep(stale_step + 1)) {
    // The fetched value may predate this step's increment; read the current one.
    const int64_t step = StepValue(context.session().Eval(global_step_));
    if (timer_.ShouldTriggerForStep(step)) {
      const TimerElapsed elapsed = timer_.UpdateLastTriggeredStep(step);
      if (elapsed.secs && *elapsed.secs > 0) {
        const double steps_per_sec = *elapsed.steps / *elapsed.secs;
        LOOM_LOG(INFO) << tag_ << ": " << steps_per_sec;
        if (options_.summary_writer) {
          options_.summary_writer->AddSummary(ScalarSummaryProto(tag_, steps_per_sec), step);
        }
      }
    }
  }
  // A global step that never moves usually means the train op does not increment it.
  if (last_global_step_ && stale_step == *last_global_step_) {
    if (++steps_without_increase_ == 20) {
      LOOM_LOG(WARNING) << "It seems that the global step has not been increased for 20 steps "
                        << "(current value " << stale_step << "); pass it to Minimize / "
                        << "ApplyGradients so the train op increments it.";
    }
  } else {
    steps_without_increase_ = 0;
  }
  last_global_step_ = stale_step;
}

LoggingTensorHook::LoggingTensorHook(std::vector<std::pair<std::string, Output>> tensors,
                                     LoggingTensorOptions options)
    : tensors_(std::move(tensors)), options_(std::move(options)), timer_(LoggingTimer(options_)) {}

namespace {
std::vector<std::pair<std::string, Output>> TagByName(const std::vector<Output>& tensors) {
  std::vector<std::pair<std::string, Output>> out;
  out.reserve(tensors.size());
  for (const Output& t : tensors) out.emplace_back(t.name(), t);
  return out;
}
}  // namespace

LoggingTensorHook::LoggingTensorHook(const std::vector<Output>& tensors,
                                     LoggingTensorOptions options)
    : LoggingTensorHook(TagByName(tensors), std::move(options)) {}

void LoggingTensorHook::Begin(Graph&) {
  timer_.Reset();
  iter_count_ = 0;
}

SessionRunArgs LoggingTensorHook::BeforeRun(SessionRunContext&) {
  should_trigger_ = timer_.ShouldTriggerForStep(iter_count_);
  if (!should_trigger_) return {};
  SessionRunArgs args;
  for (const auto& [tag, t] : tensors_) args.fetches.push_back(t);
  return args;
}

void LoggingTensorHook::AfterRun(SessionRunContext&, const SessionRunValues& values) {
  if (should_trigger_) Log(values.results);
  ++iter_count_;
}

void StepCounterHook::End(Session&) {
  if (options_.summary_writer) options_.summary_writer->Flush();
}

void LoggingTensorHook::End(Session& session) {
  if (!options_.at_end) return;
  std::vector<Output> fetches;
  for (const auto& [tag, t] : tensors_) fetches.push_back(t);
  Log(session.Run({}, fetches));
}

void LoggingTensorHook::Log(const std::vector<Tensor>& values) {
  const TimerElapsed elapsed = timer_.UpdateLastTriggeredStep(iter_count_);
  if (options_.formatter) {
    std::map<std::string, Tensor> by_tag;
    for (size_t i = 0; i < tensors_.size(); ++i) by_tag[tensors_[i].first] = values[i];
    LOOM_LOG(INFO) << options_.formatter(by_tag);
    return;
  }
  std::string line;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (i > 0) line += ", ";
    line += tensors_[i].first + " = " + FormatLikeNumpy(values[i]);
  }
  if (elapsed.secs) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (%.3f sec)", *elapsed.secs);
    line += buf;
  }
  LOOM_LOG(INFO) << line;
}

}  // namespace loom::train
