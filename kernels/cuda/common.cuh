// What the CUDA kernels share: loads and stores of fp32 or bf16 elements as fp32, and the error of
// the launch just made. Plain CUDA (no LibTorch).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace sweep::kernels::cuda {

__device__ inline float load(const float* p) { return *p; }
__device__ inline float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }

// "" when the last launch went out, else CUDA's words for why not.
inline const char* launched() {
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess ? "" : cudaGetErrorString(err);
}

}  // namespace sweep::kernels::cuda
