#include "serve/server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "serve/assets.h"
#include "serve/views.h"
#include "util/error.h"
#include "util/text.h"

namespace sweep {

using json = nlohmann::json;

namespace {

// Every page is the same shell (app.html); its script reads the path and asks the JSON routes.
// Nothing inline, nothing from elsewhere: the policy lets the page load only this server's files.
const char* k_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// A thread for each connection, up to k_max_connections at once: httplib's own pool has 8, and
// a connection holds its thread while it idles (it waits up to the read timeout for a request,
// then keep-alive's), so 8 idle TCP connections from anyone on the machine stalled every viewer
// (64 of them: 37 s for /api/version). Idle threads cost a stack's address space, not its
// memory; past the cap a new connection waits until one ends (within the read timeout).
constexpr int k_max_connections = 256;

class ConnectionThreads final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_changed.wait(lock, [this] { return m_running < k_max_connections; });
    ++m_running;
    lock.unlock();
    std::thread([this, fn = std::move(fn)] {
      fn();
      std::lock_guard<std::mutex> done(m_mutex);
      --m_running;
      m_changed.notify_all();
    }).detach();
  }
  void shutdown() override {  // every connection's thread has ended
    std::unique_lock<std::mutex> lock(m_mutex);
    m_changed.wait(lock, [this] { return m_running == 0; });
  }

 private:
  std::mutex m_mutex;
  std::condition_variable m_changed;
  int m_running = 0;
};

const Asset* asset(const std::string& name) {
  for (size_t i = 0; i < k_serve_asset_count; ++i) {
    if (name == k_serve_assets[i].name) {
      return &k_serve_assets[i];
    }
  }
  return nullptr;
}

void send_asset(httplib::Response& res, const Asset& a) {
  res.set_content(reinterpret_cast<const char*>(a.data), a.size, a.type);
}

void send_json(httplib::Response& res, const json& j) {
  // Strings from the database or a log may hold bytes that are not UTF-8: replaced, never fatal.
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  res.set_header("Cache-Control", "no-store");
}

void send_json(httplib::Response& res, const std::shared_ptr<const json>& j) { send_json(res, *j); }

void send_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// `text` as a finite number written in full (no trailing bytes), or nullopt.
std::optional<double> parse_number(const std::string& text) {
  if (text.empty() || text.size() > 32 || std::isspace(static_cast<unsigned char>(text[0]))) {
    return std::nullopt;
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno == 0 && std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// A query parameter that must be an integer in [lo, hi]; `fallback` when absent.
int64_t integer_param(const httplib::Request& req, const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!req.has_param(key.c_str())) {
    return fallback;
  }
  const std::string text = req.get_param_value(key.c_str());
  const auto v = parse_number(text);
  if (!v || *v != std::floor(*v) || *v < static_cast<double>(lo) || *v > static_cast<double>(hi)) {
    throw BadRequest(key + "=" + printable(text, false) + ": expected an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi));
  }
  return static_cast<int64_t>(*v);
}

double number_param(const httplib::Request& req, const std::string& key, double fallback, double lo, double hi) {
  if (!req.has_param(key.c_str())) {
    return fallback;
  }
  const std::string text = req.get_param_value(key.c_str());
  const auto v = parse_number(text);
  if (!v || !(*v >= lo && *v <= hi)) {
    throw BadRequest(key + "=" + printable(text, false) + ": expected a number from " + format_number("%g", lo) +
                     " to " + format_number("%g", hi));
  }
  return *v;
}

// Runs `answer` and maps what it throws to a status: 404, 400, else 500 with the message (a
// damaged database is named, not crashed on).
template <typename F>
httplib::Server::Handler route(Views& views, F answer) {
  return [&views, answer](const httplib::Request& req, httplib::Response& res) {
    try {
      send_json(res, answer(views, req));
    } catch (const NotFound& e) {
      send_error(res, 404, e.what());
    } catch (const BadRequest& e) {
      send_error(res, 400, e.what());
    } catch (const std::exception& e) {
      send_error(res, 500, e.what());
    }
  };
}

// The host of a Host header: "127.0.0.1:8080" → "127.0.0.1", "[::1]:8080" → "::1".
std::string host_name(const std::string& header) {
  if (!header.empty() && header[0] == '[') {
    return header.substr(1, header.find(']') - 1);
  }
  return header.substr(0, header.find(':'));
}

}  // namespace

bool loopback_host(const std::string& host) {
  if (host == "localhost" || host == "::1") {
    return true;
  }
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

void serve(const ServeOptions& o, const std::function<void(const std::string&)>& on_listening) {
  Views views(o.results);
  httplib::Server server;
  // GET only, and small: a request with a body, a long URL or long headers is refused
  // (httplib answers 414 and 431 itself beyond its 8 KiB limits).
  server.set_payload_max_length(1024);
  // Not stallable by idle or slow clients: a thread per connection, and a connection that sends
  // no request within 2 s (or idles 2 s between keep-alive requests) is closed.
  server.new_task_queue = [] { return new ConnectionThreads; };
  server.set_read_timeout(2, 0);
  server.set_write_timeout(5, 0);
  server.set_keep_alive_timeout(2);
  // One request a connection, answered with "Connection: close": httplib 0.11 drops a request
  // pipelined behind another on a kept-alive socket (two sent at once got one answer, and the
  // client waited for the second until the 2 s timeout). Told to close, an HTTP/1.1 client sends
  // what went unanswered again on a new connection (RFC 9112, 9.3.2); on loopback a connection
  // costs microseconds.
  server.set_keep_alive_max_count(1);
  // SO_REUSEADDR alone: httplib's default adds SO_REUSEPORT, with which a second server on a port
  // in use binds too and the two share its requests.
  server.set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server.set_default_headers({{"Content-Security-Policy", k_policy},
                              {"X-Content-Type-Options", "nosniff"},
                              {"Referrer-Policy", "no-referrer"}});
  // Before anything is read or routed: only GET and HEAD (a body, chunked or compressed, is never
  // read), no byte ranges (httplib 0.11 would build a multipart answer of any number of them), and
  // on a loopback address a Host naming this machine (a page elsewhere cannot reach the server
  // through DNS rebinding).
  const bool local = loopback_host(o.host);
  server.set_pre_routing_handler([local](const httplib::Request& req, httplib::Response& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      send_error(res, 405, "sweep serve only reads: use GET");
      res.set_header("Allow", "GET, HEAD");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.has_header("Range")) {
      send_error(res, 416, "sweep serve sends whole answers: no Range");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (local && !loopback_host(host_name(req.get_header_value("Host")))) {
      send_error(res, 403, "this server answers only requests addressed to this machine (Host: localhost or 127.0.0.1)");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  const auto page = [](const httplib::Request&, httplib::Response& res) { send_asset(res, *asset("app.html")); };
  server.Get("/", page);
  server.Get(R"(/sweeps/[^/]+)", page);
  server.Get(R"(/runs/[^/]+)", page);
  server.Get(R"(/assets/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const Asset* a = asset(req.matches[1]);
    if (!a || std::string(a->name) == "app.html") {
      send_error(res, 404, "no such asset");
      return;
    }
    send_asset(res, *a);
    res.set_header("Cache-Control", "no-cache");
  });
  server.Get("/api/version", route(views, [](Views& v, const httplib::Request&) { return v.version(); }));
  server.Get("/api/sweeps", route(views, [](Views& v, const httplib::Request&) { return v.sweeps(); }));
  server.Get(R"(/api/sweeps/([^/]+))",
             route(views, [](Views& v, const httplib::Request& req) { return v.sweep(req.matches[1]); }));
  server.Get(R"(/api/sweeps/([^/]+)/curves)", route(views, [](Views& v, const httplib::Request& req) {
               const std::string metric = req.has_param("metric") ? req.get_param_value("metric") : "val_loss";
               return v.curves(req.matches[1], metric, static_cast<size_t>(integer_param(req, "px", 800, 10, 10000)),
                               integer_param(req, "seeds", 0, 0, 1) == 1, number_param(req, "smooth", 0, 0, 0.999));
             }));
  server.Get("/api/pool", route(views, [](Views& v, const httplib::Request&) { return v.pool(); }));
  server.Get(R"(/api/runs/([^/]+))",
             route(views, [](Views& v, const httplib::Request& req) { return v.run(req.matches[1]); }));
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {  // httplib's own refusals (404 of an unknown path, 400, 414, 431)
      send_error(res, res.status, res.status == 404 ? "no such page" : "bad request");
    }
  });

  // SIGINT and SIGTERM end the server from a thread that waits for them (blocked everywhere else,
  // before httplib starts its threads).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  const int bind_errno = errno;
  if (port < 0) {
    throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " + std::strerror(bind_errno) +
                    " — is another server on that port? Pass --port N (0: any free port)",
                Exit::bad_input);
  }
  // httplib's stop() does nothing before its loop runs: the waiter asks until the loop has ended.
  std::atomic<bool> ended{false};
  std::thread waiter([&server, &ended, stop_signals] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    while (!ended) {
      server.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const bool v6 = o.host.find(':') != std::string::npos;
  on_listening("http://" + (v6 ? "[" + o.host + "]" : o.host) + ":" + std::to_string(port) + "/");
  std::thread warm([&views] { views.warm(); });  // a request meanwhile waits for it, or for its sweep
  server.listen_after_bind();
  ended = true;
  pthread_kill(waiter.native_handle(), SIGTERM);  // stopped another way: let the waiter go
  waiter.join();
  warm.join();
}

}  // namespace sweep
