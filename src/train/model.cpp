#include "train/model.h"

#include <cmath>

#include "kernels/attention.h"
#include "kernels/cross_entropy.h"
#include "kernels/gelu.h"
#include "kernels/linear.h"
#include "train/compat.h"
#include "util/hash.h"
#include "util/text.h"

namespace F = torch::nn::functional;

namespace sweep {

namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::nn::LayerNorm layer_norm(int64_t c) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c}).eps(1e-5).elementwise_affine(true));
}

torch::Tensor maybe_dropout(const torch::Tensor& x, double p, bool training) {
  if (p == 0.0 || !training) {
    return x;
  }
  return F::dropout(x, F::DropoutFuncOptions().p(p).training(true));
}

// A linear layer: oneDNN's sgemm for fp32 on the CPU when fused; LibTorch's (autocast-aware:
// bf16 goes to oneDNN there already) otherwise.
torch::Tensor project(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, bool fused) {
  if (fused && x.device().is_cpu() && x.scalar_type() == torch::kFloat && !compat::autocast_enabled(c10::kCPU)) {
    return kernels::linear(x, weight, bias);
  }
  return F::linear(x, weight, bias);
}

torch::Tensor project(const torch::Tensor& x, const torch::nn::Linear& layer, bool fused) {
  return project(x, layer->weight, layer->bias, fused);
}

// Which attention a forward on `device` runs: the one place that decides (the run's metadata
// reports it through GPTImpl::attention).
enum class Attention { fused, sdpa, manual };

Attention attention_kind(bool fused, const torch::Device& device) {
  if (fused && device.is_cpu()) {
    return Attention::fused;
  }
  return compat::k_has_sdpa ? Attention::sdpa : Attention::manual;
}

}  // namespace

at::Generator parameter_generator(int64_t init_seed, const std::string& name, at::IntArrayRef shape) {
  std::string key = std::to_string(init_seed) + "/" + name + "/";
  for (const int64_t d : shape) {
    key += std::to_string(d) + "x";
  }
  const uint64_t seed = std::stoull(sha256_hex(key).substr(0, 16), nullptr, 16);
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

// ---- attention ----

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& c)
    : n_head(c.n_head), dropout(c.dropout) {
  c_attn = register_module("c_attn", linear(c.n_embd, 3 * c.n_embd, c.qkv_bias));
  c_proj = register_module("c_proj", linear(c.n_embd, c.n_embd, true));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / n_head;
  auto qkv = project(x, c_attn, fused);  // (B, T, 3C): Q, K, V side by side
  const double p = is_training() ? dropout : 0.0;
  torch::Tensor y;  // (B, T, C), heads side by side
  const auto kind = attention_kind(fused, x.device());
  if (kind == Attention::fused) {
    // flash-style tiles, no T × T scores; the dropout mask's seed comes from the default generator
    const uint64_t seed = p > 0 ? static_cast<uint64_t>(torch::randint(1LL << 62, {1}, torch::kLong).item<int64_t>()) : 0;
    y = kernels::causal_attention(qkv, n_head, p, seed);
  } else if (kind == Attention::sdpa) {
    auto parts = qkv.split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, n_head, hs}).transpose(1, 2); };  // (B, nh, T, hs)
    y = compat::sdpa_causal(heads(parts[0]), heads(parts[1]), heads(parts[2]), p).transpose(1, 2).contiguous().view({B, T, C});
  } else {
    y = kernels::causal_attention_reference(qkv, n_head, p);
  }
  return maybe_dropout(project(y, c_proj, fused), dropout, is_training());
}

// ---- MLP ----

MLPImpl::MLPImpl(const ModelConfig& c) : dropout(c.dropout) {
  c_fc = register_module("c_fc", linear(c.n_embd, 4 * c.n_embd, true));
  c_proj = register_module("c_proj", linear(4 * c.n_embd, c.n_embd, true));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  auto hidden = fused && x.device().is_cpu()
                    ? kernels::bias_gelu(project(x, c_fc->weight, {}, fused), c_fc->bias)  // (B, T, 4C), one pass
                    : torch::gelu(c_fc->forward(x));  // (B, T, 4C), exact (erf) GELU
  return maybe_dropout(project(hidden, c_proj, fused), dropout, is_training());
}

// ---- block ----

BlockImpl::BlockImpl(const ModelConfig& c) {
  ln_1 = register_module("ln_1", layer_norm(c.n_embd));
  attn = register_module("attn", CausalSelfAttention(c));
  ln_2 = register_module("ln_2", layer_norm(c.n_embd));
  mlp = register_module("mlp", MLP(c));
}

torch::Tensor BlockImpl::forward(torch::Tensor x) {
  x = x + attn->forward(ln_1->forward(x));
  return x + mlp->forward(ln_2->forward(x));
}

// ---- GPT ----

TransformerImpl::TransformerImpl(const ModelConfig& c) {
  wte = register_module("wte", torch::nn::Embedding(c.padded_vocab(), c.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(c.block_size, c.n_embd));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) {
    h->push_back(Block(c));
  }
  ln_f = register_module("ln_f", layer_norm(c.n_embd));
}

GPTImpl::GPTImpl(const ModelConfig& c, int64_t init_seed) : config(c) {
  TORCH_CHECK(c.vocab_size > 0, "model.vocab_size must be set before building the model");
  TORCH_CHECK(c.n_embd % c.n_head == 0, "n_embd must be divisible by n_head");
  transformer = register_module("transformer", Transformer(c));
  if (!c.tie_weights) {
    lm_head = register_module("lm_head", linear(c.n_embd, c.padded_vocab(), false));
  }
  // GPT-2 init: N(0, 0.02) for every Linear and Embedding weight, zero biases, LayerNorm (1, 0);
  // residual projections N(0, 0.02/sqrt(2·n_layer)). Each weight draws from a generator of its
  // own, seeded by (init_seed, name, shape): a parameter starts from the same values whichever
  // other parameters exist, so variants that add or drop parameters (qkv_bias, tie_weights) stay
  // paired with the baseline by seed. The constructors' own draws above are all overwritten.
  torch::NoGradGuard no_grad;
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    torch::Tensor w = p.value();
    if (name.find(".ln_") != std::string::npos) {
      continue;  // LayerNorm: weight 1, bias 0 from its constructor
    }
    if (w.dim() == 1) {
      w.zero_();
    } else {
      const double sd = ends_with(name, "c_proj.weight") ? proj_std : 0.02;
      w.normal_(0.0, sd, parameter_generator(init_seed, name, w.sizes()));
    }
  }
}

torch::Tensor GPTImpl::head_weight() const {
  return config.tie_weights ? transformer->wte->weight : lm_head->weight;
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  TORCH_CHECK(T <= config.block_size, "sequence of ", T, " tokens exceeds block_size ", config.block_size);
  auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));  // (T)
  auto x = transformer->wte->forward(idx) + transformer->wpe->forward(pos);  // (B, T, C)
  x = maybe_dropout(x, config.dropout, is_training());
  for (const auto& block : *transformer->h) {
    x = block->as<Block>()->forward(x);
  }
  x = transformer->ln_f->forward(x);
  return project(x, head_weight(), {}, fused);  // (B, T, V_padded)
}

torch::Tensor GPTImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  auto logits = forward(idx);  // (B, T, V_padded)
  auto flat = logits.reshape({-1, logits.size(-1)});
  return fused && flat.device().is_cpu() ? kernels::cross_entropy_inplace(flat, targets.reshape({-1}))
                                         : kernels::cross_entropy_reference(flat, targets.reshape({-1}));
}

std::string GPTImpl::attention(const torch::Device& device) const {
  const auto kind = attention_kind(fused, device);
  return kind == Attention::fused ? "fused" : kind == Attention::sdpa ? "sdpa" : "manual";
}

void GPTImpl::set_fused(bool on) {
  fused = on;
  for (const auto& block : *transformer->h) {
    block->as<Block>()->attn->fused = on;
    block->as<Block>()->mlp->fused = on;
  }
}

int64_t GPTImpl::num_params() const {
  int64_t n = 0;
  for (const auto& p : parameters()) {
    n += p.numel();
  }
  return n;
}

}  // namespace sweep
