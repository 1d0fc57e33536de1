// `loom`: the command-line front end of the library (docs/cli.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

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
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "loom: error: ResourceExhausted: out of memory (std::bad_alloc); in a "
                 "job, lower [train] batch_size or shuffle_buffer\n");
    return 1;
  } catch (const loom::Error& e) {
    // What the command printed first (e.g. inspect's listing of a damaged file) stays before
    // the error when both streams go to one pipe.
    std::fflush(stdout);
    std::fprintf(stderr, "loom: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
