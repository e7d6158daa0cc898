#include "cli/core_handoff.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

const char* core_description(const std::string& name) {
  for (const CoreCommand& c : k_core_commands) {
    if (name == c.name) {
      return c.description;
    }
  }
  throw Error("no core command '" + name + "'");
}

std::filesystem::path core_path() { return executable_dir() / "sweep-core"; }

namespace {

// Whether `core` is this very program — a link to it, or a copy of it: the front handing a command
// to itself would exec itself for ever. A link is the same file; a copy, the same bytes (compared
// only where the sizes agree: the core, which links LibTorch, is never the front's size).
bool is_this_front(const std::filesystem::path& core) {
  std::error_code ec;
  const std::filesystem::path self = executable_path();
  if (std::filesystem::equivalent(core, self, ec)) {
    return true;
  }
  const auto size = std::filesystem::file_size(core, ec);
  if (ec || size != std::filesystem::file_size(self, ec) || ec) {
    return false;
  }
  return read_file(core) == read_file(self);
}

}  // namespace

std::string core_missing(const std::string& what) {
  const std::filesystem::path core = core_path();
  const std::string needs = what + " needs sweep's training core, and ";
  std::error_code ec;
  if (!std::filesystem::exists(core, ec)) {
    return needs + "there is none beside this sweep (no " + core.string() +
           ": a front built alone, scripts/setup.sh --torch none, or one copied without it) — scripts/setup.sh "
           "(PyTorch from the Python package index) builds it beside the front";
  }
  if (::access(core.c_str(), X_OK) != 0) {
    return needs + core.string() + " is not executable (" + std::strerror(errno) + ") — chmod +x " + core.string() +
           ", or build it again with scripts/setup.sh";
  }
  if (is_this_front(core)) {
    return needs + core.string() + " is this front itself (a link to, or a copy of, " + executable_path().string() +
           "), not the core — remove it, and build the core beside the front with scripts/setup.sh";
  }
  return "";
}

int core_gpu_count() {
  ::setenv(k_handed_to_core, "1", 1);  // (for this child only: the front's own are started without it)
  const Captured out = run_capture({core_path().string(), "devices"});
  ::unsetenv(k_handed_to_core);
  int n = 0;
  for (const std::string& line : split(out.output, '\n')) {
    n += line.rfind("cuda:", 0) == 0 && line.size() > 5 && std::isdigit(static_cast<unsigned char>(line[5]));  // "cuda:0: …"
  }
  if (out.code != 0) {
    const std::string said = trim(out.output);
    throw Error("cannot count the GPUs: " + core_path().string() + " devices exited with " + std::to_string(out.code) +
                (said.empty() ? "" : ": " + said.substr(0, said.find('\n'))));
  }
  return n;
}

void exec_core(char** argv, const std::string& what) {
  if (std::getenv(k_handed_to_core) != nullptr) {  // this front is what the core's path ran: it would loop
    throw Error(what + " needs sweep's training core, and " + core_path().string() +
                    " ran a front again (a script that execs `sweep`, or a copy of it under another name), not "
                    "the core — remove it, and build the core beside the front with scripts/setup.sh",
                Exit::bad_input);
  }
  if (const std::string missing = core_missing(what); !missing.empty()) {
    throw Error(missing, Exit::bad_input);
  }
  const std::string core = core_path().string();
  argv[0] = const_cast<char*>(core.c_str());
  ::setenv(k_handed_to_core, "1", 1);  // the core clears it; a front reached through its path refuses
  ::execv(core.c_str(), argv);
  throw Error("cannot start " + core + ": " + std::strerror(errno));
}

}  // namespace sweep
