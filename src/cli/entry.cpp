#include "cli/entry.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "util/text.h"

namespace sweep {

int run_reporting_errors(const std::function<Exit()>& command) {
  Exit code = Exit::ok;
  try {
    code = command();
  } catch (const InputErrors& e) {
    for (const auto& d : e.diagnostics()) {
      std::fprintf(stderr, "%s\n", d.str().c_str());
    }
    std::fprintf(stderr, "sweep: %zu error%s; nothing was written\n", e.diagnostics().size(),
                 e.diagnostics().size() == 1 ? "" : "s");
    code = e.code();
  } catch (const Error& e) {
    std::fprintf(stderr, "sweep: %s\n", printable(e.what()).c_str());
    code = e.code();
  } catch (const std::filesystem::filesystem_error& e) {  // a folder that cannot be made or read: names it
    std::fprintf(stderr, "sweep: %s\n", printable(e.what()).c_str());
    code = Exit::io_error;
  } catch (const std::exception& e) {
    // one line: LibTorch's errors carry a backtrace after it (out of memory among them)
    const std::string what = e.what();
    std::fprintf(stderr, "sweep: unexpected error: %s\n", printable(what.substr(0, what.find('\n'))).c_str());
    code = Exit::failed;
  }
  return static_cast<int>(code);
}

int run_command_line(CLI::App& app, int argc, char** argv, const Commands& commands) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : static_cast<int>(Exit::bad_input);
  }
  return run_reporting_errors([&] {
    for (const auto& [cmd, run] : commands) {
      if (*cmd) {
        return run();
      }
    }
    throw Error("no command ran: " + app.get_subcommands().front()->get_name() + " is declared but not dispatched");
  });
}

}  // namespace sweep
