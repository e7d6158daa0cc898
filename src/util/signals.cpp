#include "util/signals.h"

#include <pthread.h>

#include <csignal>
#include <ctime>

namespace sweep {

static volatile std::sig_atomic_t g_stop_signal = 0;

// For a thread that was started before the signals were blocked.
static void on_stop_signal(int sig) { g_stop_signal = sig; }

static sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool stop_requested() {
  if (g_stop_signal == 0) {
    const sigset_t set = stop_signals();
    const timespec now = {0, 0};
    const int sig = sigtimedwait(&set, nullptr, &now);  // a pending stop signal, taken without waiting
    if (sig > 0) {
      g_stop_signal = sig;
    }
  }
  return g_stop_signal != 0;
}

int stop_signal() {
  stop_requested();
  return g_stop_signal;
}

}  // namespace sweep
