// y = x Wᵀ + b for fp32 on the CPU through oneDNN's sgemm, which runs the model's shapes 1.5–3×
// faster here than the OpenBLAS sgemm behind Debian's LibTorch (`sweep bench` prints both).
// bf16 is left to LibTorch under autocast: it already multiplies with oneDNN (AMX).
#pragma once

#include <torch/torch.h>

namespace sweep::kernels {

// x (..., K) fp32, weight (N, K), bias (N) or undefined → (..., N); forward and backward.
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

torch::Tensor linear_reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

}  // namespace sweep::kernels
