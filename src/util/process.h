// Child processes: spawned from an argv vector (never through a shell), waited for.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sweep {

// Runs argv[0] (a path, or a name looked up in PATH) and waits. Returns the exit status, or
// 128 + signal number when it was killed. stdout/stderr are inherited.
int run_process(const std::vector<std::string>& argv);

// The folder of the running executable (/proc/self/exe), where helper programs live.
std::filesystem::path executable_dir();

}  // namespace sweep
