#include "util/error.h"

#include <cstring>

#include "util/text.h"

namespace sweep {

Error io_error(const std::string& doing, const std::string& path, int err) {
  return Error("cannot " + doing + " " + path + ": " + std::strerror(err) +
                   " — free space or fix the folder, then run again: nothing finished is lost",
               Exit::io_error);
}

std::string Diagnostic::str() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (col > 0) {
      out += ":" + std::to_string(col);
    }
  }
  return printable(out + ": " + message, false);  // one line, whatever a name from the file holds
}

static std::string join(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    if (!out.empty()) {
      out += "\n";
    }
    out += d.str();
  }
  return out;
}

InputErrors::InputErrors(std::vector<Diagnostic> diagnostics)
    : Error(join(diagnostics), Exit::bad_input), m_diagnostics(std::move(diagnostics)) {}

}  // namespace sweep
