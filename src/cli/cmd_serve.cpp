// `sweep serve`: a live view of the results database in the browser (serve/), read-only.
#include <cstdio>

#include "cli/commands.h"
#include "serve/server.h"
#include "util/fs.h"

namespace sweep {

CLI::App* setup_serve(CLI::App& app, ServeOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a live, interactive view of every sweep in the results database (read-only) to a browser");
  cmd->add_option("--results", o.results, "Output root holding sweep.db")->capture_default_str();
  cmd->add_option("--host", o.host, "Address to listen on (anything but 127.0.0.1/::1 lets others read the results)")
      ->capture_default_str();
  cmd->add_option("--port", o.port, "Port to listen on (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  return cmd;
}

Exit run_serve(const ServeOptions& o) {
  if (!loopback_host(o.host)) {
    std::fprintf(stderr,
                 "sweep serve: warning: listening on %s — anyone who can reach this port can read every result, "
                 "config and log in %s (there is no login); use --host 127.0.0.1 to keep it to this machine\n",
                 o.host.c_str(), o.results.c_str());
  }
  serve(o, [&](const std::string& url) {
    std::printf("sweep serve: %s at %s (read-only; Ctrl-C stops it)\n", fs::absolute(o.results).lexically_normal().c_str(),
                url.c_str());
    std::fflush(stdout);
  });
  return Exit::ok;
}

}  // namespace sweep
