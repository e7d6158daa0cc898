// Graceful stop: SIGTERM/SIGINT set a flag that long-running loops poll at safe points
// (a training step boundary), so they can checkpoint and exit cleanly.
#pragma once

namespace sweep {

void install_stop_handlers();
bool stop_requested();
int stop_signal();  // the signal that asked to stop, 0 if none

}  // namespace sweep
