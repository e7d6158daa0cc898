// `sweep serve`'s HTTP server (cpp-httplib): the page and its assets, compiled into the binary
// (serve/assets/, the chart library vendored there), and the JSON routes of serve/views.h. It only
// reads: no route writes anything, no file path is taken from a URL, and a bad request is a 400 or
// 404 with a one-line message.
#pragma once

#include <functional>
#include <string>

namespace sweep {

struct ServeOptions {
  std::string results = "results";
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (the address printed says which)
};

// Serves until SIGINT or SIGTERM. `on_listening` gets the address once the port is bound.
void serve(const ServeOptions& o, const std::function<void(const std::string& url)>& on_listening);

// Whether `host` names only this machine (127.0.0.0/8, ::1, localhost).
bool loopback_host(const std::string& host);

}  // namespace sweep
