// Causal self-attention of GPT's fused QKV projection: qkv (B, T, 3C), Q, K and V side by side,
// n_head heads of C / n_head → y (B, T, C), heads side by side (ready for c_proj).
#pragma once

#include <torch/torch.h>

namespace sweep::kernels {

// Flash-style on the CPU: per head, 64 × 64 tiles of QKᵀ with an online softmax; no T × T mask or
// score matrix is materialised; the backward recomputes the tiles from the saved log-sum-exp.
// fp32 or bf16 (computed in fp32). No dropout: use the reference when attention dropout is on.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head);

// The same in plain LibTorch ops (scaled QKᵀ with a −inf mask above the diagonal, softmax,
// dropout, ·V): the tests' reference and the path with attention dropout.
torch::Tensor causal_attention_reference(const torch::Tensor& qkv, int64_t n_head, double dropout_p = 0.0);

}  // namespace sweep::kernels
