#include "train/device.h"

#include <torch/version.h>

#include <cstdlib>

#include "build_options.h"
#ifdef SWEEP_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include "util/error.h"

namespace sweep {

int64_t cuda_device_count() {
#ifdef SWEEP_WITH_CUDA
  return static_cast<int64_t>(torch::cuda::device_count());
#else
  return 0;
#endif
}

BuildDevices build_devices() {
  BuildDevices b;
  b.libtorch = TORCH_VERSION;
#ifdef SWEEP_WITH_CUDA
  b.cuda_built = true;
  b.cuda_version = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
  for (int64_t i = 0; i < cuda_device_count(); ++i) {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
    b.cuda.push_back({i, p->name, static_cast<double>(p->totalGlobalMem) / (1 << 30), p->major, p->minor});
  }
#endif
#ifdef SWEEP_WITH_NCCL
  b.nccl_built = true;
#endif
  return b;
}

void make_current(const torch::Device& device) {
#ifdef SWEEP_WITH_CUDA
  if (device.is_cuda() && device.has_index()) {
    c10::cuda::set_device(device.index());
  }
#else
  (void)device;
#endif
}

void check_device(const std::string& device, const std::string& what) {
  if (device.rfind("cuda", 0) != 0) {
    return;
  }
#ifndef SWEEP_WITH_CUDA
  throw Error(what + ": this sweep was built against a LibTorch without CUDA (" + std::string(TORCH_VERSION) +
                  ", CPU only) — rebuild it against a CUDA PyTorch (scripts/setup.sh --torch python, in the "
                  "Python environment whose torch has CUDA), or train on cpu",
              Exit::bad_input);
#else
  const int64_t count = cuda_device_count();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (count == 0) {
    throw Error(what + ": no CUDA device is visible" +
                    (visible != nullptr ? " (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")" : std::string()) +
                    " — check nvidia-smi and the driver, or train on cpu",
                Exit::bad_input);
  }
  const size_t colon = device.find(':');
  if (colon != std::string::npos) {
    const int64_t index = std::stoll(device.substr(colon + 1));
    if (index >= count) {
      throw Error(what + ": there " + (count == 1 ? "is 1 CUDA device" : "are " + std::to_string(count) + " CUDA devices") +
                      " here (cuda:0" + (count > 1 ? "…cuda:" + std::to_string(count - 1) : std::string()) + ")" +
                      (visible != nullptr ? ", CUDA_VISIBLE_DEVICES=" + std::string(visible) : std::string()) +
                      " — name one of them",
                  Exit::bad_input);
    }
  }
#endif
}

}  // namespace sweep
