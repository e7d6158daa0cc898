// How the LibTorch side (kernels/*.cpp) calls a launcher of kernels/cuda/: on the tensors' device
// (a guard of it) and its current stream, the launcher's error made a c10::Error. CUDA builds only.
#pragma once

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <torch/torch.h>

namespace sweep::kernels::cuda {

// `launch(stream)` returns a kernels/cuda launcher's error ("" when none); `what` names the op.
template <class Launch>
void launch_on(const torch::Device& device, const char* what, Launch&& launch) {
  const c10::cuda::CUDAGuard on_device(device);
  const char* error = launch(static_cast<void*>(c10::cuda::getCurrentCUDAStream(device.index()).stream()));
  TORCH_CHECK(*error == 0, what, " (CUDA): ", error);
}

}  // namespace sweep::kernels::cuda
