// `sweep train --nproc N`: N local ranks of one run, started the way torchrun starts them.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace sweep {

// Runs `argv` as `nproc` ranks on this machine with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR
// (127.0.0.1) and MASTER_PORT (a free port) set, in this process's group so that a signal to the
// group reaches every rank; SIGTERM and SIGINT sent to this process alone are forwarded. When a
// rank exits with an error the others get SIGTERM, and SIGKILL after `grace`. Returns the ranks'
// common exit code, or else the first failing rank's.
int launch_local(const std::vector<std::string>& argv, int nproc, std::chrono::seconds grace);

}  // namespace sweep
