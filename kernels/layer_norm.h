// LayerNorm over the last dimension of the fp32 residual stream, its output in the dtype the
// matmul after it takes (bf16 under autocast: no cast between them); fp32 statistics.
#pragma once

#include <torch/torch.h>

namespace sweep::kernels {

// x (..., C) fp32, weight and bias (C) fp32 → (..., C) in `out` (fp32 or bf16); the gradients of
// x, weight and bias in fp32.
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                         torch::ScalarType out);

// Whether its CUDA twin (kernels/cuda/layer_norm.h, train.cuda_kernels) takes these: a CUDA build,
// x fp32 on a CUDA device with at most 8,192 columns and fewer than 2³¹ rows, its weight there too,
// `out` fp32 or bf16, and no deterministic algorithms asked for (its backward's column sums are
// atomic adds). Anything else: the reference.
bool cuda_layer_norm_takes(const torch::Tensor& x, const torch::Tensor& weight, torch::ScalarType out);

torch::Tensor layer_norm_reference(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                   double eps);

}  // namespace sweep::kernels
