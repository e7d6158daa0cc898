// The MLP's activation with the preceding bias add: act(h + bias), exact (erf) GELU or ReLU².
#pragma once

#include <torch/torch.h>

#include "kernels/cpu/ops.h"

namespace sweep::kernels {

using cpu::Activation;

// h (..., N) fp32 or bf16, bias (N) fp32 → same shape and dtype as h; one pass forward, one back.
torch::Tensor bias_activation(const torch::Tensor& h, const torch::Tensor& bias, Activation act);

// Whether its CUDA twin (kernels/cuda/activation.h, train.cuda_kernels) takes these: a CUDA build,
// h fp32 or bf16 on a CUDA device, an fp32 bias of its last dimension on the same device. Anything
// else: the reference.
bool cuda_bias_activation_takes(const torch::Tensor& h, const torch::Tensor& bias);

// The same with LibTorch's ops: gelu(h + bias), or relu(h + bias)².
torch::Tensor bias_activation_reference(const torch::Tensor& h, const torch::Tensor& bias, Activation act);

// act(x) with LibTorch's ops (no bias).
torch::Tensor activation_reference(const torch::Tensor& x, Activation act);

}  // namespace sweep::kernels
