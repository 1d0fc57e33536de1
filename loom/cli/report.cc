// `loom report MODEL_DIR`: one self-contained HTML page (inline SVG, no scripts) with the
// scalar curves of the training and evaluation event files and the job that made them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/base/error.h"
#include "loom/cli/commands.h"
#include "loom/io/event_file.h"

namespace loom::cli {
namespace {

using Series = std::vector<std::pair<int64_t, double>>;  // (step, value), sorted by step
// tag -> run ("train", "eval", ...) -> series
using Curves = std::map<std::string, std::map<std::string, Series>>;

void ReadRun(Env* env, const std::string& dir, const std::string& run, Curves& curves) {
  for (const std::string& name : env->GetChildren(dir)) {
    if (name.find("tfevents") == std::string::npos) continue;
    auto reader = EventFileReader::Open(env, JoinPath(dir, name),
                                        {.skip_corrupt_records = true, .truncated_record_is_eof = true});
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
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

// One chart: a polyline per run (a circle per point when a run has few points).
std::string Chart(const std::string& tag, std::map<std::string, Series>& runs) {
  const double w = 560, h = 300, left = 60, right = 15, top = 30, bottom = 40;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (auto& [run, s] : runs) {
    std::stable_sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.first < b.first; });
    for (auto& [x, y] : s) {
      x0 = std::min<double>(x0, x); x1 = std::max<double>(x1, x);
      y0 = std::min(y0, y); y1 = std::max(y1, y);
    }
  }
  if (x1 <= x0) { x0 -= 1; x1 += 1; }
  if (y1 <= y0) { y0 -= 0.5 * std::max(1e-9, std::fabs(y0)); y1 += 0.5 * std::max(1e-9, std::fabs(y1)); }
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (w - left - right); };
  auto py = [&](double y) { return h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom); };
  std::string svg = "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Num(w) +
                    "\" height=\"" + Num(h) + "\" viewBox=\"0 0 " + Num(w) + " " + Num(h) + "\">\n";
  svg += "<text x=\"" + Num(left) + "\" y=\"18\" font-weight=\"bold\">" + Escape(tag) + "</text>\n";
  svg += "<rect x=\"" + Num(left) + "\" y=\"" + Num(top) + "\" width=\"" + Num(w - left - right) +
         "\" height=\"" + Num(h - top - bottom) + "\" fill=\"none\" stroke=\"#ccc\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
    svg += "<text class=\"tick\" x=\"" + Num(left - 4) + "\" y=\"" + Num(py(y) + 4) +
           "\" text-anchor=\"end\">" + Num(y) + "</text>\n";
    svg += "<text class=\"tick\" x=\"" + Num(px(x)) + "\" y=\"" + Num(h - bottom + 16) +
           "\" text-anchor=\"middle\">" + Num(std::round(x)) + "</text>\n";
  }
  svg += "<text class=\"tick\" x=\"" + Num(w - right) + "\" y=\"" + Num(h - 4) +
         "\" text-anchor=\"end\">step</text>\n";
  int color = 0;
  double legend_x = left + 150;
  for (auto& [run, s] : runs) {
    const char* c = kColors[color++ % 6];
    std::string d;
    for (size_t i = 0; i < s.size(); ++i)
      d += (i ? " L" : "M") + Num(px(s[i].first)) + " " + Num(py(s[i].second));
    svg += "<path class=\"series\" data-run=\"" + Escape(run) + "\" d=\"" + d +
           "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"1.5\"/>\n";
    if (s.size() <= 30) {
      for (auto& [x, y] : s)
        svg += "<circle cx=\"" + Num(px(x)) + "\" cy=\"" + Num(py(y)) + "\" r=\"3\" fill=\"" + c + "\"/>\n";
    }
    svg += "<text x=\"" + Num(legend_x) + "\" y=\"18\" fill=\"" + c + "\">" + Escape(run) +
           " (last " + Num(s.back().second) + ")</text>\n";
    legend_x += 150;
  }
  return svg + "</svg>\n";
}

void WriteReport(const std::string& model_dir, std::string out) {
  Env* env = Env::Default();
  if (!env->IsDirectory(model_dir)) throw NotFound("model directory '", model_dir, "' does not exist");
  Curves curves;
  ReadRun(env, model_dir, "train", curves);
  for (const std::string& name : env->GetChildren(model_dir)) {
    std::string path = JoinPath(model_dir, name);
    if (name.starts_with("eval") && env->IsDirectory(path)) ReadRun(env, path, name, curves);
  }
  if (curves.empty())
    throw NotFound("no scalar summaries in event files under '", model_dir,
                   "' (expected events.out.tfevents.* written by loom train)");
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Loom report: " +
      Escape(model_dir) +
      "</title>\n<style>body{font-family:sans-serif;margin:2em}"
      ".chart{margin:0.5em;border:1px solid #eee}.tick{font-size:11px;fill:#555}"
      "pre{background:#f6f6f6;padding:1em}</style></head><body>\n"
      "<h1>Loom report</h1>\n<p>Model directory: <code>" + Escape(model_dir) + "</code></p>\n";
  // loss first, then the rest alphabetically.
  std::vector<std::string> tags;
  if (curves.count("loss")) tags.push_back("loss");
  for (const auto& [tag, runs] : curves) if (tag != "loss") tags.push_back(tag);
  html += "<h2>Curves</h2>\n<div id=\"charts\">\n";
  for (const std::string& tag : tags) html += Chart(tag, curves[tag]);
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
  CLI::App* cmd = app.add_subcommand(
      "report", "write one self-contained HTML page with the run's curves and configuration");
  cmd->add_option("MODEL_DIR", *dir, "the model directory of a run")->required();
  cmd->add_option("-o,--out", *out, "output file (default: MODEL_DIR/report.html)");
  cmd->callback([dir, out] { WriteReport(*dir, *out); });
}

}  // namespace loom::cli
