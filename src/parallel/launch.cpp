#include "parallel/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "parallel/parallel.h"
#include "util/process.h"
#include "util/signals.h"

namespace sweep {

int launch_local(const std::vector<std::string>& argv, int nproc, std::chrono::seconds grace) {
  install_stop_handlers();
  const std::string port = std::to_string(free_port());
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    SpawnOptions o;
    o.argv = argv;
    o.env = {{"RANK", std::to_string(r)},
             {"LOCAL_RANK", std::to_string(r)},
             {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
             {"WORLD_SIZE", std::to_string(nproc)},
             {"MASTER_ADDR", "127.0.0.1"},
             {"MASTER_PORT", port}};
    o.own_process_group = false;
    o.pipe_stdout = false;
    pids.push_back(spawn(o).pid);
  }
  std::vector<int> codes(pids.size(), -1);
  int first_failure = -1;
  size_t running = pids.size();
  bool forwarded = false;
  std::chrono::steady_clock::time_point kill_at{};
  while (running > 0) {
    if (stop_requested() && !forwarded) {  // a signal to this process alone reaches the ranks too
      for (size_t r = 0; r < pids.size(); ++r) {
        if (codes[r] < 0) {
          ::kill(pids[r], stop_signal());
        }
      }
      forwarded = true;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] == pid) {
          codes[r] = exit_code_of(status);
          --running;
          if (codes[r] != 0 && first_failure < 0) {
            first_failure = codes[r];
            // One rank is gone: the others cannot finish the run; stop them now.
            for (size_t k = 0; k < pids.size(); ++k) {
              if (codes[k] < 0) {
                ::kill(pids[k], SIGTERM);
              }
            }
            kill_at = std::chrono::steady_clock::now() + grace;
          }
        }
      }
      continue;
    }
    if (pid < 0 && errno != EINTR && errno != ECHILD) {
      break;
    }
    if (first_failure >= 0 && std::chrono::steady_clock::now() > kill_at) {
      for (size_t k = 0; k < pids.size(); ++k) {
        if (codes[k] < 0) {
          ::kill(pids[k], SIGKILL);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int c : codes) {
    if (c != codes[0]) {
      return first_failure >= 0 ? first_failure : c;
    }
  }
  return codes.empty() ? 0 : codes[0];
}

}  // namespace sweep
