#ifndef LOOM_CLI_SCHEDULE_H_
#define LOOM_CLI_SCHEDULE_H_

// The learning-rate schedules of a job file, [optimizer.schedule] and
// [optimizer.linear_schedule] (docs/cli.md): parsed into a ScheduleSpec (job.h), and made
// into the learning-rate function of an OptimizerSpec (canned.h). The canned estimator
// calls that function with its model function's Scope, so the schedule is an op of the
// training graph that reads the global step (learning_rate.h), and a resumed run continues
// it where it stopped.
#include <string>

#include "loom/cli/job.h"
#include "loom/cli/toml_table.h"
#include "loom/estimator/canned.h"

namespace loom::cli {

// Parses the schedule table `t`, called `name` in messages ("optimizer.schedule"). Throws
// InvalidArgument naming the file, line and key for an unknown type, a key of another type
// (listing the keys of this one) and values out of range.
ScheduleSpec ParseSchedule(const toml::table& t, const std::string& name, const std::string& path);

// The learning rate `schedule` gives at the global step, starting from `learning_rate`
// (unused by piecewise_constant), also written as the scalar summary `summary_tag`, for
//   OptimizerSpec(name, ScheduleLearningRate(schedule, 0.1, "learning_rate"))
// REQUIRES: `schedule` came from ParseSchedule.
OptimizerSpec::LearningRateFn ScheduleLearningRate(ScheduleSpec schedule, double learning_rate,
                                                   std::string summary_tag);

}  // namespace loom::cli

#endif  // LOOM_CLI_SCHEDULE_H_
