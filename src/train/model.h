// The decoder of both model families (docs/models.md). gpt2: learned positions, pre-LayerNorm
// blocks, causal self-attention, exact-GELU MLP, a final LayerNorm and a linear head, with
// nanoGPT's module and parameter names (transformer.h.0.attn.c_attn.weight, ...), so export is
// a renaming-free copy. deepseek (DeepSeek-V2): RMSNorm, rotary positions, SwiGLU, multi-head
// latent attention and DeepSeekMoE layers, with Hugging Face's DeepSeek-V2 names inside a block
// (attn.kv_a_proj_with_mqa, mlp.experts.3.gate_proj, ...). Every part is a ModelConfig switch.
// Knows nothing about data, optimizers or files.
#pragma once

#include <torch/torch.h>

#include <limits>
#include <vector>

#include "config/run_config.h"
#include "kernels/activation.h"

namespace sweep {

class Communicator;

// The generator a parameter's initial values are drawn from: seeded by SHA-256 of (init seed,
// parameter name, shape) alone, never by which other parameters the model has.
at::Generator parameter_generator(int64_t init_seed, const std::string& name, at::IntArrayRef shape);

// Rotary position embedding (RoFormer; the rotate-half pairing of GPT-NeoX and DeepSeek-V2):
// x (B, T, H, d), d even; the token at index t has position offset + t. Computed in fp32,
// returned in x's dtype.
torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset, double theta);

// What generation keeps of the tokens before: mha keeps each layer's rotated keys and values
// (B, H, T, d); mla keeps the compressed latent (B, T, kv_lora_rank) and the rotary key part
// (B, T, qk_rope_head_dim) — the cache of DeepSeek-V2.
struct LayerCache {
  torch::Tensor k, v;
  torch::Tensor latent, k_rope;
};
struct KVCache {
  std::vector<LayerCache> layers;
  int64_t length = 0;  // tokens seen; the next one has this position
};

// RMSNorm (Zhang & Sennrich): x / sqrt(mean(x²) + eps) · weight, in fp32.
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

// LayerNorm (weight and bias, eps 1e-5) or RMSNorm (weight, eps 1e-6), by model.norm; registered
// on its owner under one name, so either has the parameters `name.weight` (and `name.bias`).
struct NormLayer {
  NormLayer() = default;
  NormLayer(torch::nn::Module& owner, const std::string& name, const ModelConfig& c, int64_t dim);
  torch::Tensor operator()(const torch::Tensor& x) const;
  torch::nn::LayerNorm layer{nullptr};
  RMSNorm rms{nullptr};
  // LayerNorm through kernels::layer_norm on the CPU: under bf16 autocast its output is bf16, as
  // the matmul after it takes it (the residual stream's norms; set by GPTImpl::set_fused)
  bool fused = false;
  bool cuda_kernels = false;  // the same on a GPU (kernels/cuda/; GPTImpl::set_cuda_kernels)
};

// Multi-head attention with a fused QKV projection (GPT-2's), optionally rotary.
struct CausalSelfAttentionImpl : torch::nn::Module {
  explicit CausalSelfAttentionImpl(const ModelConfig& c);
  // (B, T, C) -> (B, T, C); with a cache, the T tokens follow the cached ones.
  torch::Tensor forward(const torch::Tensor& x, LayerCache* cache = nullptr, int64_t offset = 0);

  torch::nn::Linear c_attn{nullptr};  // C -> 3C: Q, K, V side by side; bias only with qkv_bias
  torch::nn::Linear c_proj{nullptr};  // C -> C
  int64_t n_head;
  double dropout;
  bool rope;
  bool qk_norm;  // each head's q and k to unit RMS before rope
  double rope_theta;
  bool fused = true;  // kernels::causal_attention on the CPU
};
TORCH_MODULE(CausalSelfAttention);

// DeepSeek-V2's multi-head latent attention: keys and values up-projected from one low-rank
// latent of each token (kv_a_proj_with_mqa → kv_a_layernorm → kv_b_proj), queries optionally
// through a low-rank bottleneck too, and a decoupled rotary part: qk_rope_head_dim dimensions of
// each query, and one rotary key shared by all heads.
struct LatentAttentionImpl : torch::nn::Module {
  explicit LatentAttentionImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x, LayerCache* cache = nullptr, int64_t offset = 0);

  torch::nn::Linear q_proj{nullptr};                         // C -> H·d_qk (no q_lora_rank)
  torch::nn::Linear q_a_proj{nullptr}, q_b_proj{nullptr};    // C -> q_lora_rank -> H·d_qk
  NormLayer q_a_layernorm;
  torch::nn::Linear kv_a_proj_with_mqa{nullptr};             // C -> kv_lora_rank + d_rope
  NormLayer kv_a_layernorm;
  torch::nn::Linear kv_b_proj{nullptr};                      // kv_lora_rank -> H·(d_nope + d_v)
  torch::nn::Linear o_proj{nullptr};                         // H·d_v -> C
  ModelConfig config;
  bool fused = true;
};
TORCH_MODULE(LatentAttention);

// A feed-forward layer of `hidden` units: GELU or ReLU² (c_fc, c_proj), or SwiGLU (gate_proj,
// up_proj, down_proj: down(silu(gate x) · up x)). Also each expert of an MoE layer.
struct MLPImpl : torch::nn::Module {
  MLPImpl(const ModelConfig& c, int64_t hidden);
  torch::Tensor forward(const torch::Tensor& x);  // (..., C) -> (..., C), no dropout

  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};                         // gelu, relu2
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};  // swiglu
  kernels::Activation activation;  // gelu or relu2 (between c_fc and c_proj)
  bool fused = true;  // c_fc's bias add and the activation in one kernel on the CPU
  bool cuda_kernels = false;  // the same on a GPU (kernels/cuda/; GPTImpl::set_cuda_kernels)
};
TORCH_MODULE(MLP);

// What the MoE layers did over one optimizer step (all its micro-batches, all ranks).
struct MoEStepStats {
  std::vector<double> load_max;  // per MoE layer: the busiest expert's tokens ÷ the mean per expert
  std::vector<double> entropy;   // per MoE layer: the mean router entropy per token (nats)
  double aux_loss = std::numeric_limits<double>::quiet_NaN();  // summed over layers; NaN: none
};

// DeepSeekMoE: n_routed_experts fine-grained experts, each token sent to the moe_top_k with
// the highest router score (softmax over the experts; ties go to the lower index; the output
// weighted by the unnormalised score, as DeepSeek-V2), plus shared experts every token goes
// through. Tokens are grouped by expert (one stable sort), each expert runs one matmul chain
// over its tokens, and the outputs are scattered back (index_add). Load balancing: an auxiliary
// loss per sequence (balance: aux_loss), or a per-expert bias added to the scores for the top-k
// choice only, moved after each optimizer step against the step's load (balance: bias,
// DeepSeek-V3's auxiliary-loss-free balancing).
// An expert's rows are padded to a multiple of this (see MoEImpl::forward).
inline constexpr int64_t k_expert_rows = 64;

struct MoEImpl : torch::nn::Module {
  explicit MoEImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)
  void set_fused(bool on);  // the router's, the experts' and the shared experts' matmuls

  torch::nn::Linear gate{nullptr};  // C -> n_routed_experts, no bias
  torch::nn::ModuleList experts{nullptr};
  MLP shared_experts{nullptr};      // one MLP of n_shared_experts × moe_intermediate_size units
  torch::Tensor expert_bias;        // (n_routed_experts) fp32 buffer; balance: bias only
  ModelConfig config;
  bool fused = true;

  // Set by a training forward (balance: aux_loss): this micro-batch's auxiliary loss.
  torch::Tensor aux_loss;
  // Set while activation checkpointing runs the layer again in backward: its tokens are counted once.
  bool recomputing = false;
  // Summed over the training forwards since the last take: tokens per expert (E), then the
  // router entropy summed over tokens, the tokens, and the aux loss summed over forwards (double).
  torch::Tensor step_stats;
  // Expert parallelism (train/sharded/experts.h): this rank runs experts [first_expert, first_expert +
  // local_experts) for the tokens of every rank; null: it runs all of them for its own.
  Communicator* expert_group = nullptr;
  int64_t first_expert = 0, local_experts = 0;
};
TORCH_MODULE(MoE);

struct BlockImpl : torch::nn::Module {
  BlockImpl(const ModelConfig& c, int64_t layer);
  torch::Tensor forward(torch::Tensor x, LayerCache* cache = nullptr, int64_t offset = 0);

  NormLayer ln_1, ln_2;
  CausalSelfAttention attn{nullptr};  // attention: mha
  LatentAttention mla{nullptr};       // attention: mla (registered as "attn")
  MLP mlp{nullptr};                   // a dense layer
  MoE moe{nullptr};                   // an MoE layer (registered as "mlp")
  double dropout;
};
TORCH_MODULE(Block);

// The "transformer" container of nanoGPT: embeddings, blocks, final norm.
struct TransformerImpl : torch::nn::Module {
  explicit TransformerImpl(const ModelConfig& c);

  torch::nn::Embedding wte{nullptr};  // (V_padded, C)
  torch::nn::Embedding wpe{nullptr};  // (block_size, C); position: learned only
  torch::nn::ModuleList h{nullptr};
  NormLayer ln_f;
};
TORCH_MODULE(Transformer);

// Where a block's weights live when they are sharded over ranks (ZeRO-3, train/sharded/zero.h): the model
// asks for them around each block's forward and its rerun in backward, and hands over their
// gradients as soon as the block's backward is done. Collectives: every rank calls in one order.
struct BlockWeights {
  virtual ~BlockWeights() = default;
  virtual void gather(torch::nn::Module& block) = 0;            // whole, from every rank's pieces
  virtual void release(torch::nn::Module& block) = 0;           // their memory given back
  virtual void reduce_gradients(torch::nn::Module& block) = 0;  // into the ranks' pieces, and freed
};

// For its lifetime: a block's sharded weights whole (nothing without sharded weights), given back
// however the scope ends.
class GatheredBlock {
 public:
  GatheredBlock(BlockWeights* weights, torch::nn::Module& block) : m_weights(weights), m_block(block) {
    if (m_weights) {
      m_weights->gather(m_block);
    }
  }
  ~GatheredBlock() {
    if (m_weights) {
      m_weights->release(m_block);
    }
  }
  GatheredBlock(const GatheredBlock&) = delete;
  GatheredBlock& operator=(const GatheredBlock&) = delete;

 private:
  BlockWeights* m_weights;
  torch::nn::Module& m_block;
};

struct GPTImpl : torch::nn::Module {
  // GPT-2's initialisation, each weight from parameter_generator(init_seed, its name, its shape).
  GPTImpl(const ModelConfig& c, int64_t init_seed);

  // (B, T) int64 -> logits (B, T, V_padded). With a cache: the T tokens follow the cache's
  // (positions cache->length ...), their keys are appended, and cache->length grows by T.
  // With model.logit_softcap: the capped logits, in fp32.
  torch::Tensor forward(const torch::Tensor& idx, KVCache* cache = nullptr);
  // forward's logits before the soft-cap (the fused loss caps them in its own pass).
  torch::Tensor uncapped_logits(const torch::Tensor& idx, KVCache* cache);
  // Mean next-token cross-entropy in fp32 (logits may be bf16 under autocast). Fused on the
  // CPU: the gradient is written over the logits.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets);
  // The MoE layers' auxiliary loss of the last training forward (summed over layers), to add
  // to the loss before backward; an undefined tensor when there is none.
  torch::Tensor aux_loss() const;

  // The MoE layers' step statistics since the last call, as one double tensor (empty without
  // MoE layers), and reset: the trainer sums it over ranks, then hands it to end_moe_step.
  torch::Tensor take_moe_stats();
  // From the step's summed statistics (over `forwards` micro-batch forwards, all ranks): the
  // figures of the step, and with balance: bias, each expert's bias moved by bias_update_speed
  // towards balance (up when it got fewer tokens than the mean, down when more) — not where
  // `skip` (0-dim, on the device: the step's rule of train/optim.h) says the weights did not move.
  MoEStepStats end_moe_step(const torch::Tensor& summed, int64_t forwards, const torch::Tensor& skip);

  // The fused CPU kernels (kernels/) or the reference LibTorch ops, everywhere in the model.
  void set_fused(bool on);
  // train.cuda_kernels: kernels/cuda's LayerNorm (bf16 out), bias + activation and in-place
  // cross-entropy on a GPU, wherever they take the tensors (else the reference ops).
  void set_cuda_kernels(bool on);
  // The attention training uses on `device`: "fused" (kernels/, CPU) or "sdpa" (LibTorch's
  // scaled_dot_product_attention).
  std::string attention(const torch::Device& device) const;

  // The head weight: lm_head's, or wte's when tied (one tensor, registered once).
  torch::Tensor head_weight() const;
  // The weights a forward multiplies by: every linear layer's and the head's.
  std::vector<torch::Tensor> matmul_weights() const;
  int64_t num_params() const;
  std::vector<MoE> moe_layers() const;

  ModelConfig config;  // resolved (every derived size filled in)
  bool fused = true;
  bool cuda_kernels = false;  // set_cuda_kernels
  bool activation_checkpointing = false;  // a training forward keeps each block's input only (recompute.h)
  // ZeRO-3: the blocks' weights (not owned); a forward with autograd then always runs them checkpointed
  BlockWeights* block_weights = nullptr;
  Transformer transformer{nullptr};
  torch::nn::Linear lm_head{nullptr};  // absent when tie_weights
};
TORCH_MODULE(GPT);

}  // namespace sweep
