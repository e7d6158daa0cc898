// The CUDA twin of kernels/activation.h: act(h + bias) in one pass forward (exact erf GELU or
// ReLU²), its gradient dact(h + bias) · dy in one pass back. Plain CUDA: this header and its .cu
// know nothing of LibTorch (kernels/activation.cpp wraps them; it sums dbias over the rows).
#pragma once

#include <cstdint>

namespace sweep::kernels::cuda {

// h, y, dy, dh: rows × cols (bf16 when `bf16`, else fp32); bias: cols fp32. `relu2`: ReLU², else
// GELU. `stream`: a cudaStream_t. Return the launch's error ("" when none).
const char* bias_activation_forward(bool relu2, bool bf16, const void* h, const float* bias, void* y, int64_t rows,
                                    int64_t cols, void* stream);
const char* bias_activation_backward(bool relu2, bool bf16, const void* h, const float* bias, const void* dy, void* dh,
                                     int64_t rows, int64_t cols, void* stream);

}  // namespace sweep::kernels::cuda
