// The GPT-2-style decoder: learned positions, pre-LayerNorm blocks (weight and bias, eps 1e-5),
// causal self-attention, exact-GELU MLP, a final LayerNorm and a linear head. Every
// intervention of a study is a ModelConfig switch. Module and parameter names equal nanoGPT's
// (transformer.h.0.attn.c_attn.weight, ...), so export is a renaming-free copy.
// Knows nothing about data, optimizers or files.
#pragma once

#include <torch/torch.h>

#include "config/run_config.h"

namespace sweep {

// The generator a parameter's initial values are drawn from: seeded by SHA-256 of (init seed,
// parameter name, shape) alone, never by which other parameters the model has.
at::Generator parameter_generator(int64_t init_seed, const std::string& name, at::IntArrayRef shape);

struct CausalSelfAttentionImpl : torch::nn::Module {
  explicit CausalSelfAttentionImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_attn{nullptr};  // C -> 3C: Q, K, V side by side; bias only with qkv_bias
  torch::nn::Linear c_proj{nullptr};  // C -> C
  int64_t n_head;
  double dropout;
  bool fused = true;  // kernels::causal_attention on the CPU
};
TORCH_MODULE(CausalSelfAttention);

struct MLPImpl : torch::nn::Module {
  explicit MLPImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear c_fc{nullptr};    // C -> 4C
  torch::nn::Linear c_proj{nullptr};  // 4C -> C
  double dropout;
  bool fused = true;  // c_fc's bias add and the GELU in one kernel on the CPU
};
TORCH_MODULE(MLP);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const ModelConfig& c);
  torch::Tensor forward(torch::Tensor x);

  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

// The "transformer" container of nanoGPT: embeddings, blocks, final LayerNorm.
struct TransformerImpl : torch::nn::Module {
  explicit TransformerImpl(const ModelConfig& c);

  torch::nn::Embedding wte{nullptr};  // (V_padded, C)
  torch::nn::Embedding wpe{nullptr};  // (block_size, C)
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Transformer);

struct GPTImpl : torch::nn::Module {
  // GPT-2's initialisation, each weight from parameter_generator(init_seed, its name, its shape).
  GPTImpl(const ModelConfig& c, int64_t init_seed);

  torch::Tensor forward(const torch::Tensor& idx);  // (B, T) int64 -> logits (B, T, V_padded)
  // Mean next-token cross-entropy in fp32 (logits may be bf16 under autocast). Fused on the
  // CPU: the gradient is written over the logits.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets);

  // The fused CPU kernels (kernels/) or the reference LibTorch ops, everywhere in the model.
  void set_fused(bool on);
  // The attention training uses on `device`: "fused" (kernels/, CPU),
  // "sdpa" (LibTorch >= 2.0) or "manual" (the reference ops).
  std::string attention(const torch::Device& device) const;

  // The head weight: lm_head's, or wte's when tied (one tensor, registered once).
  torch::Tensor head_weight() const;
  int64_t num_params() const;

  ModelConfig config;
  bool fused = true;
  Transformer transformer{nullptr};
  torch::nn::Linear lm_head{nullptr};  // absent when tie_weights
};
TORCH_MODULE(GPT);


}  // namespace sweep
