// Device slots of the local executor, from --devices: `cpu` (one slot, every core), `cpu:NxT`
// (N slots of T threads), `cuda:0,1,2,3` (one slot per listed GPU, CUDA_VISIBLE_DEVICES set per run).
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace sweep {

struct Slot {
  std::string label;         // cpu:0, cuda:1
  int threads = 1;           // CPU threads given to the run
  std::string cuda_visible;  // "" on CPU slots
  bool busy = false;
};

// `visible`: the scheduler's own CUDA_VISIBLE_DEVICES (nullptr when unset): GPU indices in `spec`
// count within it, as LibTorch's do (cuda:0 of CUDA_VISIBLE_DEVICES=2,3 is GPU 2), and each
// slot's CUDA_VISIBLE_DEVICES names the GPU it means. The same GPU may be listed more than once
// (cuda:0,0: two slots sharing GPU 0). Errors name `where` the slots were given (default:
// "--devices SPEC"; the planning step names a sweep file's line when the slots are its own).
std::vector<Slot> parse_devices(const std::string& spec, int cores, const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"),
                                const std::string& where = "");

// The NVIDIA driver's GPUs, counted without CUDA (the front links none): /proc/driver/nvidia/gpus,
// else /dev/nvidiaN. (Where the driver shows neither — WSL's /dev/dxg, a container without them —
// this is 0; a build with the training core asks it instead: cli/cmd_sweep.cpp.)
int driver_gpu_count();
// How many of `physical` GPUs this process may use within `visible`, its CUDA_VISIBLE_DEVICES
// (nullptr: unset), whose list CUDA reads up to its first entry that names no GPU.
int visible_gpu_count(int physical, const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"));

// The distinct GPUs of some slots, in order: a run's CUDA_VISIBLE_DEVICES.
std::string visible_devices(const std::vector<const Slot*>& slots);

}  // namespace sweep
