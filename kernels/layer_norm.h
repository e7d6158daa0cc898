// LayerNorm over the last dimension of the fp32 residual stream, its output in the dtype the
// matmul after it takes (bf16 under autocast: no cast between them); fp32 statistics.
#pragma once

#include <torch/torch.h>

namespace sweep::kernels {

// x (..., C) fp32, weight and bias (C) fp32 → (..., C) in `out` (fp32 or bf16); the gradients of
// x, weight and bias in fp32.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                         torch::ScalarType out);

torch::Tensor layer_norm_reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                   double eps);

}  // namespace sweep::kernels
