// Graceful stop: SIGTERM/SIGINT are noted and long-running loops poll for them at safe points
// (a training step boundary), so they can checkpoint and exit cleanly. The signals are blocked
// in the calling thread and every thread it starts later (OpenMP's, oneDNN's) and taken with
// sigtimedwait when polled: a signal frame pushed in the middle of a JIT kernel corrupted
// oneDNN's sgemm (heap corruption, seen once in ~4 stops under load). Call it before the
// thread pools start. Children started by util/process.h get an empty signal mask.
#pragma once

namespace sweep {

void install_stop_handlers();
bool stop_requested();
int stop_signal();  // the signal that asked to stop, 0 if none

}  // namespace sweep
