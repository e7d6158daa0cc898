// What the front's and the training core's main() share: a command's outcome, or the error it
// threw, turned into what the user reads on stderr and the exit code. Internal to src/cli.
#pragma once

#include <functional>

#include "util/error.h"

namespace sweep {

// Runs `command`; an error it throws is printed on stderr as one line (InputErrors: one per
// diagnostic) and becomes its exit code.
int run_reporting_errors(const std::function<Exit()>& command);

}  // namespace sweep
