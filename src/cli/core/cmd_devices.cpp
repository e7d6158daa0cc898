// `sweep devices`: what this build can train on and what this machine has — the LibTorch it was
// built against (CUDA, NCCL), the CPU kernels chosen for this CPU, and each visible CUDA device.
#include <cstdio>

#include "cli/core/commands.h"
#include "cli/core_handoff.h"
#include "kernels/cpu/ops.h"
#include "train/device.h"
#include "util/process.h"

namespace sweep {

CLI::App* setup_devices(CLI::App& app) {
  return app.add_subcommand("devices", core_description("devices"));
}

Exit run_devices() {
  const BuildDevices b = build_devices();
  std::printf("build: LibTorch %s, %s\n", b.libtorch.c_str(),
              b.cuda_built ? ("CUDA " + b.cuda_version + (b.nccl_built ? ", NCCL" : ", no NCCL")).c_str()
                           : "CPU only (no CUDA)");
  std::printf("cpu: %d cores, fused kernels %s\n", available_cores(), kernels::cpu::ops().isa);
  for (const CudaDevice& d : b.cuda) {
    std::printf("cuda:%lld: %s, %.1f GiB, compute capability %d.%d\n", static_cast<long long>(d.index), d.name.c_str(),
                d.memory_gib, d.major, d.minor);
  }
  if (b.cuda_built && b.cuda.empty()) {
    std::printf("cuda: no device visible\n");
  }
  return Exit::ok;
}

}  // namespace sweep
