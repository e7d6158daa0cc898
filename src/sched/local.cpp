#include "sched/local.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "sched/lifecycle.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/text.h"

namespace sweep {

namespace {

bool looks_like_oom(const std::string& log) {
  for (const char* pattern : {"out of memory", "std::bad_alloc", "can't allocate memory", "CUDA out of memory",
                              "Cannot allocate memory"}) {
    if (log.find(pattern) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Stops a process group: SIGTERM, then SIGKILL after `grace` seconds.
void stop_group(pid_t pgid, std::chrono::seconds grace) {
  ::kill(-pgid, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + grace;
  while (process_alive(pgid) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (process_alive(pgid)) {
    ::kill(-pgid, SIGKILL);
  }
}

}  // namespace

namespace {

// Whether a run's ranks each need a GPU of their own: NCCL refuses two ranks on one GPU, and
// `auto` is NCCL on GPUs (Gloo alone lets ranks share one).
bool needs_distinct_gpus(const RunConfig& c, const std::vector<Slot>& slots) {
  return c.resources.ranks > 1 && !slots.empty() && !slots.front().cuda_visible.empty() &&
         c.resources.backend != Backend::gloo;
}

}  // namespace

void check_fits(const SweepSpec& spec, const std::string& devices) {
  const std::vector<Slot> parsed = parse_devices(devices, available_cores());
  const size_t slots = parsed.size();
  std::vector<const Slot*> all;
  for (const Slot& s : parsed) {
    all.push_back(&s);
  }
  const size_t gpus = split(visible_devices(all), ',').size();
  for (const auto& r : spec.runs) {
    const int64_t ranks = r.config.resources.ranks;
    if (ranks > static_cast<int64_t>(slots)) {
      throw Error("variant " + r.variant + " asks for resources.ranks = " + std::to_string(ranks) +
                      " but --devices " + devices + " gives " + plural(static_cast<int64_t>(slots), "slot") + " — give it more slots (e.g. --devices cpu:" + std::to_string(ranks) +
                      "x1) or fewer ranks",
                  Exit::bad_input);
    }
    if (needs_distinct_gpus(r.config, parsed) && ranks > static_cast<int64_t>(gpus)) {
      throw Error("variant " + r.variant + " asks for resources.ranks = " + std::to_string(ranks) + " on NCCL (resources.backend: " +
                      to_string(r.config.resources.backend) + ") but --devices " + devices + " lists " +
                      plural(static_cast<int64_t>(gpus), "distinct GPU") +
                      " — NCCL needs a GPU a rank: list more GPUs, or set resources.backend: gloo to share them",
                  Exit::bad_input);
    }
  }
}

LocalExecutor::LocalExecutor(const std::string& devices, std::string worker_binary, double stall_timeout)
    : m_devices(devices),
      m_binary(std::move(worker_binary)),
      m_stall_timeout(stall_timeout),
      m_slots(parse_devices(devices, available_cores())) {}

// Workers are left only after an exception in the runner: all are asked to checkpoint at once,
// given 10 s together, then killed; never left behind.
LocalExecutor::~LocalExecutor() {
  for (const auto& w : m_workers) {
    ::kill(-w.child.pid, SIGTERM);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& w : m_workers) {
    while (::waitpid(w.child.pid, nullptr, WNOHANG) == 0) {  // reaped here, so no zombie looks alive
      if (std::chrono::steady_clock::now() >= until) {
        ::kill(-w.child.pid, SIGKILL);
        ::waitpid(w.child.pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::close(w.child.stdout_fd);
  }
}

std::string LocalExecutor::describe() const {
  int64_t threads = 0;
  bool cpu = true;
  for (const Slot& s : m_slots) {
    threads += s.threads;
    cpu = cpu && s.cuda_visible.empty();
  }
  // more threads than cores: allowed (a test's slots), and said — every run the slower for it
  const int64_t cores = available_cores();
  const std::string shared = cpu && threads > cores ? " — " + plural(threads, "thread") + " on " + plural(cores, "core") +
                                                          ": the runs share them, each slower than alone"
                                                    : "";
  return plural(static_cast<int64_t>(m_slots.size()), "slot") + " (" + m_devices + ")" + shared;
}

std::optional<std::string> LocalExecutor::adopt(const RunRow& row, const PlannedRun*) {
  // A worker whose scheduler died writes its events to its run directory only: stop it (it
  // checkpoints on SIGTERM) and let the runner re-read that file and resume the run.
  if (row.status == RunState::running && worker_alive(row)) {
    stop_group(static_cast<pid_t>(row.pid), std::chrono::seconds(10));
  }
  return std::nullopt;
}

std::vector<size_t> LocalExecutor::free_slots(const RunConfig& run) const {
  const bool distinct = needs_distinct_gpus(run, m_slots);
  std::vector<size_t> free;
  for (size_t s = 0; s < m_slots.size() && free.size() < static_cast<size_t>(run.resources.ranks); ++s) {
    const bool gpu_taken = distinct && std::any_of(free.begin(), free.end(), [&](size_t f) {
                             return m_slots[f].cuda_visible == m_slots[s].cuda_visible;
                           });
    if (!m_slots[s].busy && !gpu_taken) {
      free.push_back(s);
    }
  }
  return free;
}

void LocalExecutor::hold(const PlannedRun& run) {
  const std::vector<size_t> kept = free_slots(run.config);
  for (const size_t s : kept) {
    m_slots[s].busy = true;
  }
  m_held[run.run_id] = kept;
}

void LocalExecutor::release(const std::string& run_id) {
  for (const size_t s : m_held[run_id]) {
    m_slots[s].busy = false;
  }
  m_held.erase(run_id);
}

bool LocalExecutor::can_start(const PlannedRun& run) const {
  return free_slots(run.config).size() == static_cast<size_t>(run.config.resources.ranks);
}

std::optional<int64_t> LocalExecutor::start(const PlannedRun& run, const RunRow& row, std::optional<int64_t> pause_at,
                                            std::string& where) {
  const std::vector<size_t> given = free_slots(run.config);
  const Slot& first = m_slots[given.front()];  // ranks share its thread count; GPUs are listed together
  SpawnOptions so;
  so.argv = worker_argv(m_binary, row.run_dir, run.config.data.dir, first.threads,
                        first.cuda_visible.empty() ? "" : "cuda:0",
                        m_stall_timeout >= 0 ? m_stall_timeout : run.config.resources.stall_timeout,
                        pause_at ? std::to_string(*pause_at) : "");
  if (!first.cuda_visible.empty()) {
    std::vector<const Slot*> slots;
    for (size_t s : given) {
      slots.push_back(&m_slots[s]);
    }
    so.env["CUDA_VISIBLE_DEVICES"] = visible_devices(slots);  // rank k uses cuda:(k mod their number)
  }
  so.stderr_file = (fs::path(row.run_dir) / "worker.log").string();
  // Every attempt appends to worker.log: only what this one writes says how it ended.
  const uintmax_t log_start = fs::exists(so.stderr_file) ? fs::file_size(so.stderr_file) : 0;
  const Child child = spawn(so);
  where.clear();
  for (size_t s : given) {
    m_slots[s].busy = true;
    where += (where.empty() ? "" : "+") + m_slots[s].label;
  }
  m_workers.push_back({run.run_id, so.stderr_file, log_start, given, child, "", oom_kill_count()});
  return child.pid;
}

std::vector<std::string> LocalExecutor::read_lines(Worker& w) {
  char buf[65536];
  std::vector<std::string> lines;
  while (true) {
    const ssize_t n = ::read(w.child.stdout_fd, buf, sizeof buf);
    if (n <= 0) {
      break;
    }
    w.buffer.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl;
    while ((nl = w.buffer.find('\n', start)) != std::string::npos) {
      lines.push_back(w.buffer.substr(start, nl - start));
      start = nl + 1;
    }
    w.buffer.erase(0, start);  // keep only a partial last line
  }
  return lines;
}

Observed LocalExecutor::poll() {
  std::vector<pollfd> fds;
  for (const auto& w : m_workers) {
    fds.push_back({w.child.stdout_fd, POLLIN, 0});
  }
  if (fds.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } else {
    ::poll(fds.data(), fds.size(), 200);
  }
  Observed seen;
  for (auto& w : m_workers) {
    std::vector<std::string> lines = read_lines(w);
    if (!lines.empty()) {
      seen.events.emplace_back(w.run_id, std::move(lines));
    }
  }
  for (size_t i = 0; i < m_workers.size();) {
    Worker& w = m_workers[i];
    int status = 0;
    if (::waitpid(w.child.pid, &status, WNOHANG) != w.child.pid) {
      ++i;
      continue;
    }
    std::vector<std::string> last = read_lines(w);  // what it wrote before exiting
    if (!last.empty()) {
      seen.events.emplace_back(w.run_id, std::move(last));
    }
    ::close(w.child.stdout_fd);
    for (size_t s : w.slots) {
      m_slots[s].busy = false;
    }
    WorkerEnd end;
    end.run_id = w.run_id;
    end.exit_code = exit_code_of(status);
    end.log = w.log;
    end.log_tail = tail_lines(w.log, 20, w.log_start);
    // Out of memory by this attempt's log, by the kernel's OOM-kill count, or a SIGKILL where
    // that count cannot be read. A SIGKILL with no OOM kill recorded is an ordinary crash.
    end.out_of_memory = looks_like_oom(tail_lines(w.log, 50, w.log_start)) || (w.oom_kills >= 0 && oom_kill_count() > w.oom_kills) ||
                        (*end.exit_code == 128 + SIGKILL && w.oom_kills < 0);
    seen.ended.push_back(std::move(end));
    m_workers.erase(m_workers.begin() + static_cast<long>(i));
  }
  return seen;
}

void LocalExecutor::kill(const std::string& run_id) {
  for (const auto& w : m_workers) {
    if (w.run_id == run_id) {
      ::kill(-w.child.pid, SIGKILL);  // a stopped (SIGSTOP) or deadlocked worker handles nothing gentler
    }
  }
}

std::string LocalExecutor::stop(int times) {
  for (const auto& w : m_workers) {
    ::kill(-w.child.pid, times == 1 ? SIGTERM : SIGKILL);
  }
  return times == 1 ? "Ctrl-C: no new runs; asking the running ones to checkpoint (Ctrl-C again kills)"
                    : "second Ctrl-C: killing the running runs";
}

}  // namespace sweep
