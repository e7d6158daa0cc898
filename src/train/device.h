// Which devices this build and this machine can train on: the LibTorch it was built against
// (its version, whether it has CUDA and NCCL), the CUDA devices visible now, and the check that
// turns a device nobody can use (`cuda` on a CPU-only build, `cuda:7` on a one-GPU machine) into
// a one-line error naming the fix, before anything is written.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sweep {

struct CudaDevice {
  int64_t index = 0;
  std::string name;
  double memory_gib = 0;
  int major = 0, minor = 0;  // compute capability
};

struct BuildDevices {
  std::string libtorch;      // "1.13.1", "2.11.0"
  bool cuda_built = false;   // this LibTorch has CUDA
  bool nccl_built = false;   // and c10d's NCCL process group
  std::string cuda_version;  // the CUDA it was built with ("" without)
  std::vector<CudaDevice> cuda;  // visible now (CUDA_VISIBLE_DEVICES applies)
};

BuildDevices build_devices();

// The number of CUDA devices visible to this process (0 on a CPU-only build).
int64_t cuda_device_count();

// Makes a CUDA device the current one of this thread (what LibTorch and NCCL use for work outside
// a device guard: a rank's contexts then live on its own GPU); nothing for the CPU.
void make_current(const torch::Device& device);

// Throws Error(bad_input) when `device` (cpu | cuda | cuda:N) cannot be used here: `what` names
// where it came from (e.g. "resources.device" or "--devices cuda:7").
void check_device(const std::string& device, const std::string& what);

}  // namespace sweep
