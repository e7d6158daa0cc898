// What the front's and the training core's main() share: the command line parsed, the one
// subcommand it names run, and its outcome — or the error it threw, printed on stderr — turned
// into the exit code. Internal to src/cli.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <utility>
#include <vector>

#include "util/error.h"

namespace sweep {

// Each subcommand with what runs it.
using Commands = std::vector<std::pair<const CLI::App*, std::function<Exit()>>>;

// Parses argv into `app` and runs the subcommand it chose among `commands`: its exit code, or
// --help's and --version's 0, or a usage error's 2. An error a command throws is printed on
// stderr as one line (InputErrors: one per diagnostic) and becomes its exit code.
int run_command_line(CLI::App& app, int argc, char** argv, const Commands& commands);

// Runs `command` and reports its errors as run_command_line does.
int run_reporting_errors(const std::function<Exit()>& command);

}  // namespace sweep
