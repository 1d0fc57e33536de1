// `loom`: the command-line front end of the library (docs/cli.md).
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "loom/base/error.h"
#include "loom/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"loom: train, evaluate and inspect models (docs/cli.md)"};
  app.require_subcommand(1);
  loom::cli::AddInspectCommand(app);
  loom::cli::AddJobCommands(app);
  loom::cli::AddReportCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "loom: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
