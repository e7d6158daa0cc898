// doctest runner of the GPU tests (CTest label `gpu`). Without a CUDA build of LibTorch or
// without a visible CUDA device it says so and exits 77, which CTest reports as skipped; with
// one it names the device and runs every test case, on cuda:0.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

#include "train/device.h"

int main(int argc, char** argv) {
  // cuBLAS picks deterministic kernels only with this set before CUDA starts (the resume test).
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
  const sweep::BuildDevices b = sweep::build_devices();
  if (!b.cuda_built || b.cuda.empty()) {
    std::printf("gpu tests skipped: %s — they run on a machine with a CUDA GPU, built against a CUDA PyTorch "
                "(scripts/test-gpu.sh)\n",
                b.cuda_built ? "no CUDA device is visible" : ("this build's LibTorch " + b.libtorch + " has no CUDA").c_str());
    return 77;
  }
  std::printf("gpu tests on cuda:0: %s (%.0f GiB, compute capability %d.%d), LibTorch %s, CUDA %s\n",
              b.cuda[0].name.c_str(), b.cuda[0].memory_gib, b.cuda[0].major, b.cuda[0].minor, b.libtorch.c_str(),
              b.cuda_version.c_str());
  at::set_num_threads(1);
  doctest::Context context(argc, argv);
  return context.run();
}
