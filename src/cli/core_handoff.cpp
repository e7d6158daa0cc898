#include "cli/core_handoff.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "util/error.h"
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

std::string core_missing(const std::string& what) {
  const std::filesystem::path core = core_path();
  if (::access(core.c_str(), X_OK) == 0) {
    return "";
  }
  return what + " needs sweep's training core, and there is none beside this sweep (no " + core.string() +
         ": a front built alone, scripts/setup.sh --torch none, or one copied without it) — scripts/setup.sh "
         "(PyTorch from the Python package index) builds it beside the front";
}

int core_gpu_count() {
  const Captured out = run_capture({core_path().string(), "devices"});
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
  if (const std::string missing = core_missing(what); !missing.empty()) {
    throw Error(missing, Exit::bad_input);
  }
  const std::string core = core_path().string();
  argv[0] = const_cast<char*>(core.c_str());
  ::execv(core.c_str(), argv);
  throw Error("cannot start " + core + ": " + std::strerror(errno));
}

}  // namespace sweep
