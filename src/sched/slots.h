// Device slots of the local executor, from --devices: `cpu` (one slot, every core), `cpu:NxT`
// (N slots of T threads), `cuda:0,1,2,3` (one slot per GPU, CUDA_VISIBLE_DEVICES set per run).
#pragma once

#include <string>
#include <vector>

namespace sweep {

struct Slot {
  std::string label;         // cpu:0, cuda:1
  int threads = 1;           // CPU threads given to the run
  std::string cuda_visible;  // "" on CPU slots
  bool busy = false;
};

std::vector<Slot> parse_devices(const std::string& spec, int cores);

}  // namespace sweep
