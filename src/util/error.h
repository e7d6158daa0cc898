// Errors shared by every module. Two kinds, as in ccache: `Error` ends the command with a
// message and an exit code; `InputErrors` carries every diagnostic of a bad input file at once
// (file:line:col: message) and exits 2. Knows nothing about the rest of sweep.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace sweep {

// Exit codes of the sweep binary, set in one place (cli/main.cpp) from these values.
enum class Exit : int {
  ok = 0,
  failed = 1,     // a run or command failed
  bad_input = 2,  // invalid config, CLI usage or data file
  diverged = 3,   // a run ended with a non-finite loss or gradient norm
  io_error = 74,      // EX_IOERR: a file could not be written (disk full, read-only, I/O error); resume later
  preempted = 75,     // EX_TEMPFAIL: stopped by SIGTERM/SIGINT after checkpointing; resume later
  interrupted = 130  // `sweep run` stopped by Ctrl-C (its runs checkpointed); run it again to resume
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, Exit code = Exit::failed)
      : std::runtime_error(message), m_code(code) {}
  Exit code() const { return m_code; }

 private:
  Exit m_code;
};

// The error of a file that could not be written or read for a reason outside sweep (disk full,
// read-only folder, I/O error): "cannot DOING PATH: STRERROR(err) — free space or fix the folder,
// then run again: nothing finished is lost", exit io_error.
Error io_error(const std::string& doing, const std::string& path, int err);

// A message about a position in an input file. line and col are 1-based; 0 means unknown.
struct Diagnostic {
  std::string file;
  int line = 0;
  int col = 0;
  std::string message;
  std::string str() const;
};

class InputErrors : public Error {
 public:
  explicit InputErrors(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return m_diagnostics; }

 private:
  std::vector<Diagnostic> m_diagnostics;
};

}  // namespace sweep
