#include "util/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <thread>

#include "util/error.h"

extern char** environ;

namespace sweep {

namespace {

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) {
    out.push_back(s.data());
  }
  out.push_back(nullptr);
  return out;
}

// posix_spawnp of argv (PATH lookup) with this process's environment; throws when it cannot start.
pid_t spawn_path(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* actions) {
  std::vector<std::string> args = argv;
  std::vector<char*> cargs = c_strings(args);
  pid_t pid = 0;
  posix_spawnattr_t attr;  // a child starts with no signal blocked, whatever this thread blocks
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  const int rc = posix_spawnp(&pid, cargs[0], actions, &attr, cargs.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  return pid;
}

// Waits for pid (retrying after signals) and returns its exit code.
int wait_exit(pid_t pid, const std::string& what) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      throw Error("waiting for " + what + " failed: " + std::strerror(errno));
    }
  }
  return exit_code_of(status);
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw Error(std::string("pipe failed: ") + std::strerror(errno));
  }
}

}  // namespace

int exit_code_of(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return 128 + WTERMSIG(wait_status);
  }
  return WEXITSTATUS(wait_status);
}

int run_process(const std::vector<std::string>& argv, const std::string& output_file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!output_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  try {
    pid = spawn_path(argv, &actions);
  } catch (...) {
    posix_spawn_file_actions_destroy(&actions);
    throw;
  }
  posix_spawn_file_actions_destroy(&actions);
  return wait_exit(pid, argv[0]);
}

Captured run_capture(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  make_pipe(pipe_fds);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  pid_t pid = 0;
  try {
    pid = spawn_path(argv, &actions);
  } catch (...) {
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw;
  }
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  Captured out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    out.output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  out.code = wait_exit(pid, argv[0]);
  return out;
}

std::optional<std::string> find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

Child spawn(const SpawnOptions& o) {
  int pipe_fds[2];
  make_pipe(pipe_fds);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (o.pipe_stdout) {
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  }
  if (!o.cwd.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, o.cwd.c_str());
  }
  int err_fds[2] = {-1, -1};
  if (o.pipe_stderr) {
    make_pipe(err_fds);
    posix_spawn_file_actions_adddup2(&actions, err_fds[1], STDERR_FILENO);
  } else if (!o.stderr_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, o.stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGINT);
  sigaddset(&default_signals, SIGTERM);
  sigaddset(&default_signals, SIGPIPE);
  sigaddset(&default_signals, SIGHUP);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  sigset_t none;  // a child starts with no signal blocked, whatever this thread blocks (util/signals.h)
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
  if (o.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  posix_spawnattr_setflags(&attr, flags);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (!o.env.count(key)) {
      env_strings.push_back(entry);
    }
  }
  for (const auto& [key, value] : o.env) {
    env_strings.push_back(key + "=" + value);
  }
  std::vector<std::string> args = o.argv;
  std::vector<char*> cargs = c_strings(args), cenv = c_strings(env_strings);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, cargs[0], &actions, &attr, cargs.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (err_fds[1] >= 0) {
    ::close(err_fds[1]);
  }
  if (rc != 0) {
    ::close(pipe_fds[0]);
    if (err_fds[0] >= 0) {
      ::close(err_fds[0]);
    }
    throw Error("cannot start " + o.argv[0] + ": " + std::strerror(rc));
  }
  if (err_fds[0] >= 0) {
    fcntl(err_fds[0], F_SETFL, fcntl(err_fds[0], F_GETFL) | O_NONBLOCK);
  }
  if (!o.pipe_stdout) {
    ::close(pipe_fds[0]);
    return {pid, -1, err_fds[0]};
  }
  fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
  return {pid, pipe_fds[0], err_fds[0]};
}

bool process_alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

namespace {

// This process's children now, from /proc (each /proc/PID/stat's 4th field, after the command
// in parentheses, which may itself hold spaces and parentheses).
std::vector<pid_t> children_now() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) {
      continue;
    }
    char state = 0;
    long ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == self && state != 'Z') {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

void reap_exited() {
  while (::waitpid(-1, nullptr, WNOHANG) > 0) {
  }
}

}  // namespace

int stop_descendants(int grace_ms) {
  std::set<pid_t> stopped;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (;;) {
    reap_exited();
    const std::vector<pid_t> left = children_now();
    if (left.empty()) {
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline + std::chrono::seconds(5)) {
      break;  // what SIGKILL has not ended in 5 s (a process stuck in the kernel) is past helping
    }
    const bool late = now > deadline;
    for (const pid_t pid : left) {
      if (stopped.insert(pid).second || late) {
        ::kill(pid, late ? SIGKILL : SIGTERM);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return static_cast<int>(stopped.size());
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw Error("cannot open a socket to find a free port");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw Error("cannot find a free port on 127.0.0.1");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

long oom_kill_count() {
  for (const char* path : {"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"}) {
    std::ifstream in(path);
    std::string key;
    long value = 0;
    while (in >> key >> value) {
      if (key == "oom_kill") {
        return value;
      }
    }
  }
  return -1;
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    return std::max(1, CPU_COUNT(&set));
  }
  return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

std::filesystem::path executable_path() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::filesystem::path executable_dir() { return executable_path().parent_path(); }

void keep_freed_memory() {
  mallopt(M_MMAP_MAX, 0);  // blocks of any size come from the heap (other threads' arenas fall back to it)
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

void release_freed_memory() {
  malloc_trim(0);
}

}  // namespace sweep
