// Checks shared by the torch-facing side of kernels/: what a CPU kernel accepts.
#pragma once

#include <ATen/record_function.h>
#include <torch/torch.h>

#include "kernels/cpu/ops.h"

namespace sweep::kernels {

inline cpu::DType cpu_dtype(const torch::Tensor& t, const char* op) {
  TORCH_CHECK(t.device().is_cpu(), op, ": the fused kernel runs on the CPU; got a tensor on ", t.device());
  TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kBFloat16, op,
              ": fp32 or bf16 expected, got ", t.scalar_type());
  return t.scalar_type() == torch::kFloat ? cpu::DType::f32 : cpu::DType::bf16;
}

}  // namespace sweep::kernels
