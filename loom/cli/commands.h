#ifndef LOOM_CLI_COMMANDS_H_
#define LOOM_CLI_COMMANDS_H_

// The subcommands of the `loom` executable. Each Add*Command registers one CLI11
// subcommand on `app` and sets its callback; the callback throws loom::Error (or
// CLI::Error) on failure and main() turns that into a message and a non-zero exit.
#include <CLI/CLI.hpp>

namespace loom::cli {

void AddInspectCommand(CLI::App& app);  // inspect.cc
void AddJobCommands(CLI::App& app);     // train.cc: train, evaluate, predict, export, demo
void AddReportCommand(CLI::App& app);   // report.cc

}  // namespace loom::cli

#endif  // LOOM_CLI_COMMANDS_H_
