#include "kernels/cuda/activation.h"

#include "kernels/cuda/common.cuh"

namespace sweep::kernels::cuda {

namespace {

constexpr int k_threads = 256;

__device__ float act(float x, bool relu2) {
  if (relu2) {
    const float r = fmaxf(x, 0.0f);
    return r * r;
  }
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

__device__ float act_grad(float x, bool relu2) {
  if (relu2) {
    return 2.0f * fmaxf(x, 0.0f);
  }
  return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) + x * 0.39894228040143268f * __expf(-0.5f * x * x);
}

template <typename T>
__global__ void bias_act_forward(bool relu2, const T* h, const float* bias, T* y, int64_t n, int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    store(y + i, act(load(h + i) + bias[i % cols], relu2));
  }
}

template <typename T>
__global__ void bias_act_backward(bool relu2, const T* h, const float* bias, const T* dy, T* dh, int64_t n,
                                  int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    store(dh + i, load(dy + i) * act_grad(load(h + i) + bias[i % cols], relu2));
  }
}

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + k_threads - 1) / k_threads;
  return static_cast<unsigned>(b < 65535 * 8 ? b : 65535 * 8);  // a grid-stride loop does the rest
}

}  // namespace

const char* bias_activation_forward(bool relu2, bool bf16, const void* h, const float* bias, void* y, int64_t rows,
                                    int64_t cols, void* stream) {
  const int64_t n = rows * cols;
  if (n == 0) {
    return "";
  }
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16) {
    bias_act_forward<<<blocks_for(n), k_threads, 0, s>>>(relu2, static_cast<const __nv_bfloat16*>(h), bias,
                                                         static_cast<__nv_bfloat16*>(y), n, cols);
  } else {
    bias_act_forward<<<blocks_for(n), k_threads, 0, s>>>(relu2, static_cast<const float*>(h), bias,
                                                         static_cast<float*>(y), n, cols);
  }
  return launched();
}

const char* bias_activation_backward(bool relu2, bool bf16, const void* h, const float* bias, const void* dy, void* dh,
                                     int64_t rows, int64_t cols, void* stream) {
  const int64_t n = rows * cols;
  if (n == 0) {
    return "";
  }
  const auto s = static_cast<cudaStream_t>(stream);
  if (bf16) {
    bias_act_backward<<<blocks_for(n), k_threads, 0, s>>>(relu2, static_cast<const __nv_bfloat16*>(h), bias,
                                                          static_cast<const __nv_bfloat16*>(dy),
                                                          static_cast<__nv_bfloat16*>(dh), n, cols);
  } else {
    bias_act_backward<<<blocks_for(n), k_threads, 0, s>>>(relu2, static_cast<const float*>(h), bias,
                                                          static_cast<const float*>(dy), static_cast<float*>(dh), n, cols);
  }
  return launched();
}

}  // namespace sweep::kernels::cuda
