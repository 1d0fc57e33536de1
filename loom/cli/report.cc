// `loom report MODEL_DIR`: one self-contained HTML page (inline SVG, no scripts) with the
// scalar curves of the training and evaluation event files and the job that made them,
// read like TensorBoard's scalars page: one colour per run in every chart, round ticks
// (each once), a value axis kept inside [0, 1] for values there, optional smoothing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/cli/commands.h"
#include "loom/io/event_file_proto.h"

namespace loom::cli {
namespace {

using Series = std::vector<std::pair<int64_t, double>>;  // (step, value), sorted by step
// tag -> run ("train", "eval", ...) -> series
using Curves = std::map<std::string, std::map<std::string, Series>>;

void ReadRun(Env* env, const std::string& dir, const std::string& run, Curves& curves) {
  for (const std::string& name : env->GetChildren(dir)) {
    if (name.find("tfevents") == std::string::npos) continue;
    auto reader = EventFileReader::Open(
        env, JoinPath(dir, name), {.skip_corrupt_records = true, .truncated_record_is_eof = true});
    while (auto event = reader->Next()) {
      if (!event->has_summary()) continue;
      for (const auto& value : event->summary().value()) {
        if (auto v = ScalarValue(value); v && std::isfinite(*v))
          curves[value.tag()][run].push_back({event->step(), *v});
      }
    }
  }
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// One colour per run for the whole page (train first, then the eval directories by
// name), so that a run keeps its colour in every chart, as on TensorBoard's scalars page.
const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
using RunColors = std::map<std::string, std::string>;

RunColors AssignColors(const Curves& curves) {
  std::vector<std::string> runs;
  for (const auto& [tag, by_run] : curves)
    for (const auto& [run, s] : by_run)
      if (std::find(runs.begin(), runs.end(), run) == runs.end()) runs.push_back(run);
  std::sort(runs.begin(), runs.end(), [](const std::string& a, const std::string& b) {
    return (a != "train") < (b != "train") || ((a != "train") == (b != "train") && a < b);
  });
  RunColors colors;
  for (size_t i = 0; i < runs.size(); ++i) colors[runs[i]] = kColors[i % 6];
  return colors;
}

// TensorBoard's scalar smoothing: an exponential moving average, debiased so that the
// first points are not pulled towards 0 (1 - weight^n is the weight the EMA has given to
// real points after n of them). weight 0 returns the values; a constant series is kept.
Series Smooth(const Series& s, double weight) {
  if (weight <= 0 || s.empty()) return s;
  const bool constant =
      std::all_of(s.begin(), s.end(), [&](auto& p) { return p.second == s[0].second; });
  if (constant) return s;
  Series out;
  double last = 0;
  int n = 0;
  for (const auto& [x, y] : s) {
    last = last * weight + (1 - weight) * y;
    ++n;
    out.push_back({x, last / (1 - std::pow(weight, n))});
  }
  return out;
}

// 1, 2 or 5 times a power of ten, near range / target.
double NiceStep(double range, int target) {
  const double raw = range / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
}

struct Axis {
  double lo, hi;
  std::vector<double> ticks;
};

// The step axis: the data's extent (one step either side of a single step), ticks at
// whole steps, each once.
Axis StepAxis(double x0, double x1) {
  if (x1 <= x0) {
    x0 -= 1;
    x1 += 1;
  }
  const double step = std::max(1.0, std::round(NiceStep(x1 - x0, 5)));
  Axis axis{x0, x1, {}};
  for (double t = std::ceil(x0 / step) * step; t <= x1; t += step) axis.ticks.push_back(t);
  return axis;
}

// The value axis: the data's range with a margin, widened to round ticks; values that
// all lie in [0, 1] (accuracy, AUC, precision) keep the axis inside [0, 1].
Axis ValueAxis(double y0, double y1) {
  const bool unit = y0 >= 0 && y1 <= 1;
  if (y1 <= y0) {
    const double pad = unit ? 0.05 : std::max(std::fabs(y0) * 0.1, 1e-6);
    y0 -= pad;
    y1 += pad;
  } else {
    const double pad = (y1 - y0) * 0.05;
    y0 -= pad;
    y1 += pad;
  }
  const double step = NiceStep(y1 - y0, 5);
  Axis axis{std::floor(y0 / step) * step, std::ceil(y1 / step) * step, {}};
  if (unit) {
    axis.lo = std::max(axis.lo, 0.0);
    axis.hi = std::min(axis.hi, 1.0);
  }
  for (double k = std::ceil(axis.lo / step - 1e-9); k * step <= axis.hi + step * 1e-9; ++k) {
    const double t = std::fabs(k * step) < step * 1e-9 ? 0.0 : k * step;
    axis.ticks.push_back(t);
  }
  return axis;
}

// One chart: a polyline per run (a circle per point when a run has few points); with
// smoothing, the raw values as a faint line under the smoothed one.
std::string Chart(const std::string& tag, std::map<std::string, Series>& runs,
                  const RunColors& colors, double smoothing) {
  // The legend: one line per run at the top right, above the plot; room for every run
  // of the page, so that all charts have one size.
  const double w = 560, left = 60, right = 15, bottom = 40;
  const double top = std::max(30.0, 24.0 + 15.0 * colors.size()), h = 270 + top;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (auto& [run, s] : runs) {
    std::stable_sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (auto& [x, y] : s) {
      x0 = std::min<double>(x0, x);
      x1 = std::max<double>(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  }
  const Axis xs = StepAxis(x0, x1), ys = ValueAxis(y0, y1);
  auto px = [&](double x) { return left + (x - xs.lo) / (xs.hi - xs.lo) * (w - left - right); };
  auto py = [&](double y) {
    return h - bottom - (y - ys.lo) / (ys.hi - ys.lo) * (h - top - bottom);
  };
  std::string svg = "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(w) +
                    "\" height=\"" + Num(h) + "\" viewBox=\"0 0 " + Num(w) + " " + Num(h) + "\">\n";
  svg += "<text x=\"" + Num(left) + "\" y=\"18\" font-weight=\"bold\">" + Escape(tag) + "</text>\n";
  svg += "<rect x=\"" + Num(left) + "\" y=\"" + Num(top) + "\" width=\"" + Num(w - left - right) +
         "\" height=\"" + Num(h - top - bottom) + "\" fill=\"none\" stroke=\"#ccc\"/>\n";
  for (double y : ys.ticks) {
    svg += "<text class=\"tick y\" x=\"" + Num(left - 4) + "\" y=\"" + Num(py(y) + 4) +
           "\" text-anchor=\"end\">" + Num(y) + "</text>\n";
  }
  for (double x : xs.ticks) {
    svg += "<text class=\"tick x\" x=\"" + Num(px(x)) + "\" y=\"" + Num(h - bottom + 16) +
           "\" text-anchor=\"middle\">" + std::to_string(static_cast<long long>(x)) + "</text>\n";
  }
  svg += "<text class=\"tick\" x=\"" + Num(w - right) + "\" y=\"" + Num(h - 4) +
         "\" text-anchor=\"end\">step</text>\n";
  int legend_line = 0;
  auto path = [&](const Series& s) {
    std::string d;
    for (size_t i = 0; i < s.size(); ++i)
      d += (i ? " L" : "M") + Num(px(s[i].first)) + " " + Num(py(s[i].second));
    return d;
  };
  // Runs in the page's colour order (train first).
  std::vector<std::string> order;
  order.reserve(runs.size());
  for (const auto& [run, s] : runs) order.push_back(run);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return colors.at(a) != colors.at(b) &&
           std::find(std::begin(kColors), std::end(kColors), colors.at(a)) <
               std::find(std::begin(kColors), std::end(kColors), colors.at(b));
  });
  for (const std::string& run : order) {
    const Series& s = runs.at(run);
    const std::string& c = colors.at(run);
    const Series smoothed = Smooth(s, smoothing);
    if (smoothing > 0) {
      svg += "<path class=\"raw\" data-run=\"" + Escape(run) + "\" d=\"" + path(s) +
             "\" fill=\"none\" stroke=\"" + c + "\" stroke-opacity=\"0.3\" stroke-width=\"1\"/>\n";
    }
    svg += "<path class=\"series\" data-run=\"" + Escape(run) + "\" d=\"" + path(smoothed) +
           "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"1.5\"/>\n";
    if (s.size() <= 30) {
      for (auto& [x, y] : s)
        svg += "<circle cx=\"" + Num(px(x)) + "\" cy=\"" + Num(py(y)) + "\" r=\"3\" fill=\"" + c +
               "\"/>\n";
    }
    svg += "<text class=\"legend\" data-run=\"" + Escape(run) + "\" x=\"" + Num(w - right) +
           "\" y=\"" + Num(18 + 15 * legend_line++) + "\" text-anchor=\"end\" fill=\"" + c + "\">" +
           Escape(run) + " (last " + Num(s.back().second) +
           (smoothing > 0 ? ", smoothed " + Num(smoothed.back().second) : "") + ")</text>\n";
  }
  return svg + "</svg>\n";
}

void WriteReport(const std::string& model_dir, std::string out, double smoothing) {
  if (!(smoothing >= 0 && smoothing < 1))
    throw InvalidArgument("--smoothing ", smoothing,
                          ": expected a weight in [0, 1) (TensorBoard's default is 0.6)");
  Env* env = Env::Default();
  if (!env->IsDirectory(model_dir))
    throw NotFound("model directory '", model_dir, "' does not exist");
  Curves curves;
  ReadRun(env, model_dir, "train", curves);
  for (const std::string& name : env->GetChildren(model_dir)) {
    std::string path = JoinPath(model_dir, name);
    if (name.starts_with("eval") && env->IsDirectory(path)) ReadRun(env, path, name, curves);
  }
  if (curves.empty())
    throw NotFound("no scalar summaries in event files under '", model_dir,
                   "' (expected events.out.tfevents.* written by loom train)");
  std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Loom report: " +
                     Escape(model_dir) +
                     "</title>\n<style>body{font-family:sans-serif;margin:2em}"
                     ".chart{margin:0.5em;border:1px solid #eee}.tick{font-size:11px;fill:#555}"
                     "pre{background:#f6f6f6;padding:1em}</style></head><body>\n"
                     "<h1>Loom report</h1>\n<p>Model directory: <code>" +
                     Escape(model_dir) + "</code></p>\n";
  // loss first, then the rest alphabetically.
  std::vector<std::string> tags;
  if (curves.count("loss")) tags.push_back("loss");
  for (const auto& [tag, runs] : curves)
    if (tag != "loss") tags.push_back(tag);
  html += "<h2>Curves</h2>\n<div id=\"charts\">\n";
  const RunColors colors = AssignColors(curves);
  for (const std::string& tag : tags) html += Chart(tag, curves[tag], colors, smoothing);
  html += "</div>\n<h2>Configuration</h2>\n";
  std::string job = JoinPath(model_dir, "job.toml");
  if (env->FileExists(job)) {
    html += "<pre id=\"config\">" + Escape(ReadFileToString(env, job)) + "</pre>\n";
  } else {
    html += "<p>No job.toml in the model directory.</p>\n";
  }
  html += "</body></html>\n";
  if (out.empty()) out = JoinPath(model_dir, "report.html");
  WriteFileAtomically(env, out, html);
  std::printf("report: %s (%zu charts)\n", out.c_str(), tags.size());
}

}  // namespace

void AddReportCommand(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto smoothing = std::make_shared<double>(0.0);
  CLI::App* cmd = app.add_subcommand(
      "report", "write one self-contained HTML page with the run's curves and configuration");
  cmd->add_option("MODEL_DIR", *dir, "the model directory of a run")->required();
  cmd->add_option("-o,--out", *out, "output file (default: MODEL_DIR/report.html)");
  cmd->add_option("--smoothing", *smoothing,
                  "TensorBoard's smoothing weight in [0, 1): a debiased exponential moving "
                  "average drawn over the faint raw values (TensorBoard's default is 0.6)")
      ->capture_default_str();
  cmd->callback([dir, out, smoothing] { WriteReport(*dir, *out, *smoothing); });
}

}  // namespace loom::cli
