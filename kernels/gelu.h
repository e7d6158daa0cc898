// The MLP's activation with the preceding bias add: gelu(h + bias), exact (erf) GELU.
#pragma once

#include <torch/torch.h>

namespace sweep::kernels {

// h (..., N) fp32 or bf16, bias (N) fp32 → same shape and dtype as h; one pass forward, one back.
torch::Tensor bias_gelu(const torch::Tensor& h, const torch::Tensor& bias);

torch::Tensor bias_gelu_reference(const torch::Tensor& h, const torch::Tensor& bias);

}  // namespace sweep::kernels
