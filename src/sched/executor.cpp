#include "sched/executor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include "sched/slots.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/text.h"

namespace sweep {

namespace {

volatile sig_atomic_t g_interrupts = 0;
void on_interrupt(int) { g_interrupts = g_interrupts + 1; }

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool looks_like_oom(const std::string& log) {
  for (const char* pattern : {"out of memory", "std::bad_alloc", "can't allocate memory", "CUDA out of memory",
                              "Cannot allocate memory"}) {
    if (log.find(pattern) != std::string::npos) {
      return true;
    }
  }
  return false;
}

struct Planned {
  std::string run_id;
  std::string variant;
  const PlannedRun* run;
};

struct Running {
  Planned plan;
  std::vector<size_t> slots;  // one per data-parallel rank
  Child child;
  std::string buffer;  // a partial stdout line
  double started;
  long oom_kills;  // the cgroup's OOM-kill count at launch (-1: unknown)
};

// Stops a process group: SIGTERM, then SIGKILL after `grace` seconds.
void stop_group(pid_t pgid, double grace) {
  ::kill(-pgid, SIGTERM);
  const double until = now() + grace;
  while (process_alive(pgid) && now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (process_alive(pgid)) {
    ::kill(-pgid, SIGKILL);
  }
}

class LiveView {
 public:
  explicit LiveView(bool tty) : m_tty(tty) {}

  void line(const std::string& text) {
    clear();
    std::printf("[%s] %s\n", clock_time().c_str(), text.c_str());
    std::fflush(stdout);
  }

  void draw(const std::vector<std::string>& block) {
    if (!m_tty) {
      return;
    }
    clear();
    for (const auto& l : block) {
      std::printf("%s\033[K\n", l.c_str());
    }
    m_height = block.size();
    std::fflush(stdout);
  }

 private:
  void clear() {
    if (m_tty && m_height > 0) {
      std::printf("\033[%zuA\033[J", m_height);
      m_height = 0;
    }
  }
  bool m_tty;
  size_t m_height = 0;
};

// Whether the run's recorded worker is still alive — checked by its command line, so a pid
// reused by an unrelated process (after a reboot, say) is never taken for it, or signalled.
bool worker_alive(const RunRow& row) {
  if (!process_alive(static_cast<pid_t>(row.pid))) {
    return false;
  }
  std::string cmdline = read_file("/proc/" + std::to_string(row.pid) + "/cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  return cmdline.find(" worker ") != std::string::npos && cmdline.find(row.run_dir) != std::string::npos;
}

}  // namespace

std::string plan_state(const RunRow& row) {
  const std::string& s = row.status;
  if (s == "done" || s == "diverged" || s == "failed" || s == "oom") {
    return s;
  }
  if (s == "interrupted" || s == "preempted") {
    return "resumable";
  }
  if (s == "running") {
    // A batch-system task is followed through the batch system (its job_state), not a local pid.
    return !row.job.empty() || worker_alive(row) ? "running" : "resumable";
  }
  return "pending";
}

void reingest_run_dir(Store& store, const std::string& run_id, const std::string& run_dir) {
  const fs::path events = fs::path(run_dir) / "events.jsonl";
  if (!fs::exists(events)) {
    return;
  }
  store.ingest(run_id, split(read_file(events), '\n'));
}

ResultsLock::ResultsLock(const std::string& results_dir) {
  const fs::path lock_path = fs::path(results_dir) / ".scheduler.lock";
  m_fd = ::open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (m_fd < 0 || ::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    throw Error("another `sweep run` is using " + results_dir + " — wait for it, or use --results for another folder",
                Exit::bad_input);
  }
}

ResultsLock::~ResultsLock() { ::close(m_fd); }

ToDo runs_to_do(const SweepSpec& spec, Store& store, bool retry_failed) {
  ToDo todo;
  std::set<std::string> seen;
  for (const auto& run : spec.runs) {
    if (!seen.insert(run.run_id).second) {
      continue;
    }
    const std::string state = plan_state(*store.run(run.run_id));
    if (state == "done" || state == "diverged") {
      ++todo.finished_before;
    } else if ((state == "failed" || state == "oom") && !retry_failed) {
      ++todo.failed_before;
    } else {
      todo.runs.push_back(&run);
    }
  }
  todo.total = seen.size();
  return todo;
}

std::string ToDo::headline(const SweepSpec& spec) const {
  return "sweep " + spec.name + ": " + std::to_string(total) + " runs, " + std::to_string(finished_before) +
         " already finished, " +
         (failed_before > 0 ? std::to_string(failed_before) + " failed before (--retry-failed runs them), " : "");
}

void check_fits(const SweepSpec& spec, const std::string& devices) {
  const size_t slots = parse_devices(devices, available_cores()).size();
  for (const auto& r : spec.runs) {
    if (r.config.resources.ranks > static_cast<int64_t>(slots)) {
      throw Error("variant " + r.variant + " asks for resources.ranks = " + std::to_string(r.config.resources.ranks) +
                      " but --devices " + devices + " gives " + std::to_string(slots) + " slot" +
                      (slots == 1 ? "" : "s") + " — give it more slots (e.g. --devices cpu:" +
                      std::to_string(r.config.resources.ranks) + "x1) or fewer ranks",
                  Exit::bad_input);
    }
  }
}

int run_local(const SweepSpec& spec, Store& store, const ExecutorOptions& o) {
  const ResultsLock lock(o.results_dir);
  std::vector<Slot> slots = parse_devices(o.devices, available_cores());
  store.record_sweep(spec, o.results_dir);
  LiveView view(::isatty(STDOUT_FILENO));

  // ---- recovery: runs left 'running' by a scheduler that died ----
  for (const auto& r : store.sweep_runs(spec.name)) {
    if (r.run.status != "running") {
      continue;
    }
    if (worker_alive(r.run)) {
      stop_group(static_cast<pid_t>(r.run.pid), 10.0);  // an orphaned worker: it checkpoints on SIGTERM
    }
    reingest_run_dir(store, r.run.run_id, r.run.run_dir);
    if (store.run(r.run.run_id)->status == "running") {
      store.set_status(r.run.run_id, "interrupted", "the scheduler stopped while this run was training");
    }
    view.line("recovered " + r.variant + " (" + r.run.run_id + "): resumes from its checkpoint");
  }

  // ---- the queue: every run that is not finished, in plan order, each run id once ----
  const ToDo todo = runs_to_do(spec, store, o.retry_failed);
  std::deque<Planned> queue;
  for (const PlannedRun* run : todo.runs) {
    queue.push_back({run->run_id, run->variant, run});
  }
  const int finished_before = todo.finished_before;
  view.line(todo.headline(spec) + std::to_string(queue.size()) + " to run on " + std::to_string(slots.size()) +
            " slot" + (slots.size() == 1 ? "" : "s") + " (" + o.devices + ")");

  struct sigaction sa = {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int, old_term, old_hup;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);  // a closed terminal: stop as cleanly as for Ctrl-C
  g_interrupts = 0;

  std::vector<Running> running;
  int failed = 0, done = 0;
  int signalled = 0;
  const double started = now();
  double last_draw = 0;

  auto describe = [](const std::string& variant, int64_t init, int64_t data, const std::string& run_id) {
    return variant + " seed " + std::to_string(init) + "/" + std::to_string(data) + " (" + run_id + ")";
  };

  auto launch = [&](Planned p, const std::vector<size_t>& given) {
    const size_t slot = given.front();  // ranks share its thread count; GPUs are listed together
    const RunRow row = *store.run(p.run_id);
    const fs::path dir = row.run_dir;
    fs::create_directories(dir);
    if (!fs::exists(dir / "config.yaml")) {
      write_file_atomic(dir / "config.yaml", p.run->config.to_yaml());
    }
    SpawnOptions so;
    so.argv = {o.worker_binary, "worker", (dir / "config.yaml").string(), "--run-dir", dir.string(), "--resume",
               "--events", "--set", "resources.threads=" + std::to_string(slots[slot].threads)};
    if (!slots[slot].cuda_visible.empty()) {
      std::string visible;
      for (size_t s : given) {
        visible += (visible.empty() ? "" : ",") + slots[s].cuda_visible;
      }
      so.env["CUDA_VISIBLE_DEVICES"] = visible;  // rank k uses cuda:k of these
      so.argv.insert(so.argv.end(), {"--set", "resources.device=cuda:0"});
    }
    so.stderr_file = (dir / "worker.log").string();
    Child child = spawn(so);
    // Resuming after a preemption or an interruption is not a new attempt; anything else is.
    store.mark_launched(p.run_id, child.pid, row.status != "preempted" && row.status != "interrupted");
    std::string where;
    for (size_t s : given) {
      slots[s].busy = true;
      where += (where.empty() ? "" : "+") + slots[s].label;
    }
    view.line("start " + describe(p.variant, p.run->config.seeds.init, p.run->config.seeds.data, p.run_id) + " on " +
              where + (row.status == "pending" ? "" : ", resuming"));
    running.push_back({p, given, child, "", now(), oom_kill_count()});
  };

  auto drain = [&](Running& r) {
    char buf[65536];
    std::vector<std::string> lines;
    while (true) {
      const ssize_t n = ::read(r.child.stdout_fd, buf, sizeof buf);
      if (n <= 0) {
        break;
      }
      r.buffer.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = r.buffer.find('\n', start)) != std::string::npos) {
        lines.push_back(r.buffer.substr(start, nl - start));
        start = nl + 1;
      }
      r.buffer.erase(0, start);  // keep only a partial last line
    }
    if (!lines.empty()) {
      store.ingest(r.plan.run_id, lines);
    }
  };

  auto finish = [&](Running& r, int code) {
    drain(r);
    ::close(r.child.stdout_fd);
    for (size_t s : r.slots) {
      slots[s].busy = false;
    }
    const RunRow row = *store.run(r.plan.run_id);
    const std::string log = (fs::path(row.run_dir) / "worker.log").string();
    const std::string what = describe(r.plan.variant, row.init_seed, row.data_seed, r.plan.run_id);
    if (code == static_cast<int>(Exit::ok) && row.status == "done") {
      ++done;
      char buf[128];
      std::snprintf(buf, sizeof buf, ": test loss %.4f, %s", row.test_loss.value_or(NAN),
                    format_duration(now() - r.started).c_str());
      view.line("done  " + what + buf);
    } else if (code == static_cast<int>(Exit::diverged)) {
      store.set_status(r.plan.run_id, "diverged", row.error);
      ++done;
      view.line("diverged " + what + ": " + row.error);
    } else if (code == static_cast<int>(Exit::preempted) || code == 128 + SIGTERM || code == 128 + SIGINT) {
      // 75: checkpointed and stopped; 143/130: the signal came before the worker had installed its
      // handler (still starting), so there is nothing to lose either.
      if (g_interrupts > 0) {
        store.set_status(r.plan.run_id, "interrupted", "stopped by Ctrl-C; `sweep run` again resumes it");
        view.line("interrupted " + what + " at step " + std::to_string(row.steps) +
                  (code == static_cast<int>(Exit::preempted) ? " (checkpointed)" : " (stopped while starting)"));
      } else {
        store.set_status(r.plan.run_id, "preempted", "stopped by SIGTERM; re-queued");
        queue.push_front(r.plan);
        view.line("preempted " + what + " at step " + std::to_string(row.steps) + ": re-queued");
      }
    } else if (const bool killed = code == 128 + SIGKILL;
               looks_like_oom(tail_lines(log, 50)) || (r.oom_kills >= 0 && oom_kill_count() > r.oom_kills) ||
               (killed && r.oom_kills < 0)) {
      // Out of memory by the log, by the kernel's OOM-kill count, or a SIGKILL where that count
      // cannot be read. A SIGKILL with no OOM kill recorded is an ordinary crash (below).
      store.set_status(r.plan.run_id, "oom",
                       "killed (exit " + std::to_string(code) + "): out of memory or SIGKILL — not retried; " +
                           "give it a bigger device or a smaller micro_batch, then --retry-failed\n" + tail_lines(log, 20));
      ++failed;
      view.line("oom   " + what + ": exit " + std::to_string(code) + " (not retried)");
    } else {
      const std::string reason = code == 0                ? "exited 0 without an end event"
                                 : code == 128 + SIGKILL ? "killed by SIGKILL (no out-of-memory kill recorded)"
                                                         : "exit " + std::to_string(code) + "\n" + tail_lines(log, 20);
      store.set_status(r.plan.run_id, "failed", reason);
      const bool retry = code != static_cast<int>(Exit::bad_input) && row.attempts <= o.retries && g_interrupts == 0;
      if (retry) {
        queue.push_back(r.plan);
        view.line("crash " + what + ": exit " + std::to_string(code) + ", retrying from its checkpoint (attempt " +
                  std::to_string(row.attempts + 1) + ")");
      } else {
        ++failed;
        view.line("fail  " + what + ": exit " + std::to_string(code) + " — log: " + log);
      }
    }
  };

  // ---- the loop: launch, read events, reap, draw ----
  while (!running.empty() || (!queue.empty() && g_interrupts == 0)) {
    if (g_interrupts > signalled) {
      signalled = g_interrupts;
      for (const auto& r : running) {
        ::kill(-r.child.pid, signalled == 1 ? SIGTERM : SIGKILL);
      }
      view.line(signalled == 1 ? "Ctrl-C: no new runs; asking the running ones to checkpoint (Ctrl-C again kills)"
                               : "second Ctrl-C: killing the running runs");
    }
    // In plan order: the next run starts when it has as many free slots as it has ranks.
    while (g_interrupts == 0 && !queue.empty()) {
      std::vector<size_t> free;
      for (size_t s = 0; s < slots.size(); ++s) {
        if (!slots[s].busy && free.size() < static_cast<size_t>(queue.front().run->config.resources.ranks)) {
          free.push_back(s);
        }
      }
      if (free.size() < static_cast<size_t>(queue.front().run->config.resources.ranks)) {
        break;
      }
      Planned p = queue.front();
      queue.pop_front();
      launch(p, free);
    }
    std::vector<pollfd> fds;
    for (const auto& r : running) {
      fds.push_back({r.child.stdout_fd, POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 200);
    for (auto& r : running) {
      drain(r);
    }
    for (size_t i = 0; i < running.size();) {
      int status = 0;
      const pid_t pid = ::waitpid(running[i].child.pid, &status, WNOHANG);
      if (pid == running[i].child.pid) {
        finish(running[i], exit_code_of(status));
        running.erase(running.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    if (now() - last_draw > 1.0) {
      last_draw = now();
      std::vector<std::string> block;
      double rate = 0, remaining_tokens = 0;
      for (const auto& r : running) {
        const RunRow row = *store.run(r.plan.run_id);
        rate += row.tokens_per_s.value_or(0);
        remaining_tokens += static_cast<double>(std::max<int64_t>(0, r.plan.run->config.train.tokens - row.tokens));
        char buf[200];
        const double eta = row.tokens_per_s.value_or(0) > 0
                               ? static_cast<double>(r.plan.run->config.train.tokens - row.tokens) / *row.tokens_per_s
                               : 0;
        std::snprintf(buf, sizeof buf, "  %-28.28s seed %lld/%lld  step %5lld/%-5lld  loss %7.4f  %6.0f tok/s  ETA %s",
                      r.plan.variant.c_str(), static_cast<long long>(row.init_seed),
                      static_cast<long long>(row.data_seed), static_cast<long long>(row.steps),
                      static_cast<long long>(row.total_steps), row.last_loss.value_or(NAN),
                      row.tokens_per_s.value_or(0), format_duration(eta).c_str());
        block.push_back(buf);
      }
      for (const auto& q : queue) {
        remaining_tokens += static_cast<double>(q.run->config.train.tokens);
      }
      char head[200];
      std::snprintf(head, sizeof head, "%s: %d done, %zu running, %zu pending, %d failed — %s elapsed, ETA %s",
                    spec.name.c_str(), done + finished_before, running.size(), queue.size(), failed,
                    format_duration(now() - started).c_str(),
                    rate > 0 ? format_duration(remaining_tokens / rate).c_str() : "?");
      block.insert(block.begin(), head);
      view.draw(block);
    }
  }
  view.draw({});
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);

  view.line(spec.name + ": " + std::to_string(done + finished_before) + " of " + std::to_string(todo.total) +
            " runs finished, " + std::to_string(failed + todo.failed_before) + " failed, " +
            std::to_string(todo.total - done - finished_before - failed - todo.failed_before) + " to resume or start, " +
            format_duration(now() - started));
  if (g_interrupts > 0) {
    return 130;
  }
  return failed + todo.failed_before > 0 ? static_cast<int>(Exit::failed) : static_cast<int>(Exit::ok);
}

}  // namespace sweep
