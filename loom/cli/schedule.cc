#include "loom/cli/schedule.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "loom/base/strcat.h"
#include "loom/train/global_step.h"
#include "loom/train/learning_rate.h"
#include "loom/train/summary.h"

namespace loom::cli {
namespace {

// The keys each type takes, besides "type".
const std::map<std::string, std::vector<std::string>> kScheduleKeys = {
    {"exponential_decay", {"decay_steps", "decay_rate", "staircase"}},
    {"piecewise_constant", {"boundaries", "values"}},
    {"polynomial_decay", {"decay_steps", "end_learning_rate", "power", "cycle"}},
    {"cosine_decay", {"decay_steps", "alpha"}}};

Output ScheduleOutput(const Scope& scope, const ScheduleSpec& s, Output global_step,
                      double learning_rate) {
  if (s.type == "exponential_decay") {
    return train::ExponentialDecay(scope, learning_rate, global_step, s.decay_steps, s.decay_rate,
                                   s.staircase);
  }
  if (s.type == "piecewise_constant")
    return train::PiecewiseConstant(scope, global_step, s.boundaries, s.values);
  if (s.type == "polynomial_decay") {
    return train::PolynomialDecay(scope, learning_rate, global_step, s.decay_steps,
                                  s.end_learning_rate, s.power, s.cycle);
  }
  return train::CosineDecay(scope, learning_rate, global_step, s.decay_steps, s.alpha);
}

}  // namespace

ScheduleSpec ParseSchedule(const toml::table& t, const std::string& name, const std::string& path) {
  Table table(t, name, path);
  ScheduleSpec s;
  s.type = table.String("type").value_or("");
  auto keys = kScheduleKeys.find(s.type);
  if (keys == kScheduleKeys.end()) {
    table.Fail("type",
               "expected \"exponential_decay\", \"piecewise_constant\", "
               "\"polynomial_decay\" or \"cosine_decay\"");
  }
  // A key of another type (decay_rate in a cosine_decay) gets a message listing the right ones.
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    if (key == "type" || std::ranges::count(keys->second, key)) continue;
    std::string list;
    for (const std::string& known : keys->second) list += (list.empty() ? "" : ", ") + known;
    table.Fail(key, StrCat("not a key of ", s.type, " (it takes ", list, ")"));
  }
  if (s.type == "piecewise_constant") {
    s.boundaries = table.Ints("boundaries");
    s.values = table.Doubles("values");
    if (s.boundaries.empty())
      table.Fail("boundaries", "expected the steps where the rate changes, e.g. [1000, 2000]");
    for (size_t i = 1; i < s.boundaries.size(); ++i) {
      if (s.boundaries[i] <= s.boundaries[i - 1]) table.Fail("boundaries", "must increase");
    }
    if (s.values.size() != s.boundaries.size() + 1) {
      table.Fail("values", StrCat("expected ", s.boundaries.size() + 1,
                                  " rates (one more than boundaries), got ", s.values.size()));
    }
  } else {
    std::optional<int64_t> steps = table.Int("decay_steps");
    if (!steps || *steps <= 0) table.Fail("decay_steps", "expected an integer > 0");
    s.decay_steps = *steps;
  }
  if (s.type == "exponential_decay") {
    std::optional<double> rate = table.Double("decay_rate");
    if (!rate || *rate <= 0) table.Fail("decay_rate", "expected a number > 0, e.g. 0.96");
    s.decay_rate = *rate;
    s.staircase = table.Bool("staircase").value_or(false);
  } else if (s.type == "polynomial_decay") {
    s.end_learning_rate = table.Double("end_learning_rate").value_or(s.end_learning_rate);
    s.power = table.Double("power").value_or(s.power);
    s.cycle = table.Bool("cycle").value_or(false);
    if (s.end_learning_rate < 0) table.Fail("end_learning_rate", "must be >= 0");
    if (s.power <= 0) table.Fail("power", "must be > 0");
  } else if (s.type == "cosine_decay") {
    s.alpha = table.Double("alpha").value_or(0.0);
    if (s.alpha < 0 || s.alpha > 1) table.Fail("alpha", "must be in [0, 1]");
  }
  table.CheckAllUsed();
  return s;
}

OptimizerSpec::LearningRateFn ScheduleLearningRate(ScheduleSpec schedule, double learning_rate,
                                                   std::string summary_tag) {
  return [schedule = std::move(schedule), learning_rate,
          tag = std::move(summary_tag)](const Scope& scope) {
    Output rate = ScheduleOutput(scope, schedule, train::GlobalStep(scope), learning_rate);
    train::ScalarSummary(scope, tag, rate);
    return rate;
  };
}

}  // namespace loom::cli
