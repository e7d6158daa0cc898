// Causal self-attention of GPT's fused QKV projection: qkv (B, T, 3C), Q, K and V side by side,
// n_head heads of C / n_head → y (B, T, C), heads side by side (ready for c_proj).
#pragma once

#include <torch/torch.h>

#include <string>

namespace sweep::kernels {

// Flash-style on the CPU: per head, 64 × 64 tiles of QKᵀ with an online softmax; no T × T mask or
// score matrix is materialised; the backward recomputes the tiles from the saved log-sum-exp.
// fp32 or bf16 (computed in fp32). Attention dropout with probability dropout_p drops weights
// by a hash of (seed, head, query, key), so the backward recomputes the mask too.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t n_head, double dropout_p = 0.0, uint64_t seed = 0);

// The same in plain LibTorch ops (scaled QKᵀ with a −inf mask above the diagonal, softmax,
// dropout, ·V). Dropout: LibTorch's own (torch::dropout) unless `dropout_scale` is given, a
// (B·nh, T, T) tensor the weights are multiplied by (the tests pass dropout_mask's).
torch::Tensor causal_attention_reference(const torch::Tensor& qkv, int64_t n_head, double dropout_p = 0.0,
                                         const torch::Tensor& dropout_scale = {});

// Which of LibTorch's kernels scaled_dot_product_attention runs for causal attention of these
// shapes (q, k, v: (B, nh, T, hs)): "cuDNN", "flash", "memory-efficient" or "math".
std::string sdpa_backend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double dropout_p);

// The fused kernel's dropout scales (0 or 1 / (1 − p)) for B·nh heads of T × T weights, fp32.
torch::Tensor dropout_mask(int64_t batch_heads, int64_t T, double dropout_p, uint64_t seed);

}  // namespace sweep::kernels
