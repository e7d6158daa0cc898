#include "train/model.h"

#include <ATen/autocast_mode.h>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/cross_entropy.h"
#include "kernels/activation.h"
#include "kernels/layer_norm.h"
#include "kernels/linear.h"
#include "train/sharded/experts.h"
#include "train/recompute.h"
#include "util/hash.h"
#include "util/text.h"

namespace F = torch::nn::functional;

namespace sweep {

namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}


torch::Tensor maybe_dropout(const torch::Tensor& x, double p, bool training) {
  if (p == 0.0 || !training) {
    return x;
  }
  return F::dropout(x, F::DropoutFuncOptions().p(p).training(true));
}

// A linear layer: on the CPU when fused, oneDNN's sgemm for fp32 and its bf16 matmul from the
// weight's kept bf16 copy under autocast (kernels/linear.h); LibTorch's (autocast-aware) otherwise.
torch::Tensor project(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, bool fused) {
  if (fused && x.device().is_cpu() && weight.scalar_type() == torch::kFloat) {
    if (!at::autocast::is_autocast_enabled(c10::kCPU)) {
      if (x.scalar_type() == torch::kFloat) {
        return kernels::linear(x, weight, bias);
      }
    } else if (at::autocast::get_autocast_dtype(c10::kCPU) == at::kBFloat16) {
      return kernels::linear_bf16(x, weight, bias);
    }
  }
  return F::linear(x, weight, bias);
}

torch::Tensor project(const torch::Tensor& x, const torch::nn::Linear& layer, bool fused) {
  return project(x, layer->weight, layer->bias, fused);
}

// Which attention a forward on `device` runs: the one place that decides (the run's metadata
// reports it through GPTImpl::attention).
enum class AttentionPath { fused, sdpa };

AttentionPath attention_kind(bool fused, const torch::Device& device) {
  return fused && device.is_cpu() ? AttentionPath::fused : AttentionPath::sdpa;
}

// Causal attention through LibTorch's scaled_dot_product_attention (flash or memory-efficient
// kernels on CUDA, its flash attention on the CPU). q, k, v: (B, nh, T, hs).
torch::Tensor sdpa_causal(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double dropout_p) {
  return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, /*is_causal=*/true);
}

// A seed for the fused kernel's dropout mask, from the default generator (0 when no dropout).
uint64_t dropout_mask_seed(double p) {
  return p > 0 ? static_cast<uint64_t>(torch::randint(1LL << 62, {1}, torch::kLong).item<int64_t>()) : 0;
}

// Causal attention of queries and keys q, k (B, T, H, d_qk) over values v (B, T, H, d_v), scaled
// by 1/sqrt(d_qk) → (B, T, H·d_v). The fused kernel and the reference take one packed QKV of
// equal head widths: the narrower side is zero-padded (zeros add nothing to QKᵀ, and padded
// value columns are cut from the output), and q is rescaled so the kernel's 1/sqrt(width) is
// 1/sqrt(d_qk).
torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, double p, AttentionPath kind) {
  const int64_t B = q.size(0), T = q.size(1), H = q.size(2), dq = q.size(3), dv = v.size(3);
  if (kind == AttentionPath::sdpa) {
    return sdpa_causal(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), p)
        .transpose(1, 2)
        .reshape({B, T, H * dv});
  }
  const int64_t d = std::max(dq, dv);
  auto packed = [&](const torch::Tensor& x) {
    const auto wide = x.size(3) == d ? x : F::pad(x, F::PadFuncOptions({0, d - x.size(3)}));
    return wide.reshape({B, T, H * d});
  };
  const auto qs = d == dq ? q : q * std::sqrt(static_cast<double>(d) / static_cast<double>(dq));
  const auto qkv = torch::cat({packed(qs), packed(k), packed(v)}, 2);  // (B, T, 3·H·d)
  const auto y = kernels::causal_attention(qkv, H, p, dropout_mask_seed(p));
  return d == dv ? y : y.view({B, T, H, d}).narrow(3, 0, dv).reshape({B, T, H * dv});
}

// Generation's attention: the T new queries (positions offset ...) over every cached key,
// q (B, T, H, d_qk), k (B, S, H, d_qk), v (B, S, H, d_v), S = offset + T → (B, T, H·d_v). No dropout.
torch::Tensor attend_cached(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, int64_t offset) {
  const int64_t B = q.size(0), T = q.size(1), H = q.size(2), S = k.size(1), dv = v.size(3);
  auto scores = torch::matmul(q.transpose(1, 2).to(torch::kFloat), k.transpose(1, 2).transpose(2, 3).to(torch::kFloat)) /
                std::sqrt(static_cast<double>(q.size(3)));  // (B, H, T, S)
  const auto visible = torch::ones({T, S}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).tril(offset);
  scores = scores.masked_fill(visible.logical_not(), -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(scores, -1), v.transpose(1, 2).to(torch::kFloat))
      .to(v.scalar_type())
      .transpose(1, 2)
      .reshape({B, T, H * dv});
}

// `x` appended to what a cache holds along the token axis (dim 1); the cache keeps the result.
torch::Tensor append(torch::Tensor& held, const torch::Tensor& x) {
  held = held.defined() ? torch::cat({held, x}, 1) : x;
  return held;
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

// ---- norms and positions ----

RMSNormImpl::RMSNormImpl(int64_t dim, double e) : eps(e) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  const auto x32 = x.to(torch::kFloat);
  return x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps) * weight;
}

NormLayer::NormLayer(torch::nn::Module& owner, const std::string& name, const ModelConfig& c, int64_t dim) {
  if (c.norm == Norm::rmsnorm) {
    rms = owner.register_module(name, RMSNorm(dim, 1e-6));
  } else {
    layer = owner.register_module(
        name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(1e-5).elementwise_affine(true)));
  }
}

// In fp32 (the residual stream is fp32 already; MLA's latent is bf16 under autocast, and
// LibTorch 1.13's CPU layer_norm refuses a bf16 input with fp32 weights)
torch::Tensor NormLayer::operator()(const torch::Tensor& x) const {
  if (rms) {
    return rms.ptr()->forward(x);
  }
  const bool cpu = x.device().is_cpu();
  if (cpu ? fused : cuda_kernels && x.is_cuda()) {  // the CPU's kernel, or the GPU's where it takes x
    const auto device = x.device().type();
    const bool bf16 = at::autocast::is_autocast_enabled(device) && at::autocast::get_autocast_dtype(device) == at::kBFloat16;
    const auto out = bf16 ? torch::kBFloat16 : torch::kFloat;
    const auto x32 = x.to(torch::kFloat);
    if (cpu || kernels::cuda_layer_norm_takes(x32, layer->weight, out)) {
      return kernels::layer_norm(x32, layer->weight, layer->bias, layer->options.eps(), out);
    }
  }
  return layer.ptr()->forward(x.to(torch::kFloat));
}

torch::Tensor apply_rope(const torch::Tensor& x, int64_t offset, double theta) {
  const int64_t T = x.size(1), d = x.size(3), half = d / 2;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(x.device());
  // θ_i = theta^(−2i/d), angle (offset + t)·θ_i, computed in double then rounded once
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(x.device());  // no host-to-device copy
  const auto inv = torch::pow(theta, -torch::arange(0, half, f64) * 2.0 / static_cast<double>(d));
  const auto angle = torch::outer(torch::arange(offset, offset + T, f64), inv);  // (T, d/2)
  const auto cos = angle.cos().to(f32).view({1, T, 1, half}), sin = angle.sin().to(f32).view({1, T, 1, half});
  const auto x32 = x.to(torch::kFloat);
  const auto x1 = x32.narrow(3, 0, half), x2 = x32.narrow(3, half, half);
  return torch::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, 3).to(x.scalar_type());
}

// ---- attention ----

// QK-norm: each head's vector scaled to unit RMS (no gain), in fp32; x (B, T, H, d).
static torch::Tensor unit_rms(const torch::Tensor& x) {
  const auto x32 = x.to(torch::kFloat);
  return (x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + 1e-6)).to(x.scalar_type());
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& c)
    : n_head(c.n_head), dropout(c.dropout), rope(c.position == Position::rope), qk_norm(c.qk_norm), rope_theta(c.rope_theta) {
  c_attn = register_module("c_attn", linear(c.n_embd, 3 * c.n_embd, c.qkv_bias));
  c_proj = register_module("c_proj", linear(c.n_embd, c.n_embd, c.linear_bias()));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x, LayerCache* cache, int64_t offset) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / n_head;
  auto qkv = project(x, c_attn, fused);  // (B, T, 3C): Q, K, V side by side
  const double p = is_training() ? dropout : 0.0;
  torch::Tensor y;  // (B, T, C), heads side by side
  const auto kind = attention_kind(fused, x.device());
  if (rope || qk_norm || cache != nullptr) {
    auto parts = qkv.split(C, 2);
    auto q = parts[0].view({B, T, n_head, hs}), k = parts[1].view({B, T, n_head, hs});
    auto v = parts[2].view({B, T, n_head, hs});
    if (qk_norm) {
      q = unit_rms(q);
      k = unit_rms(k);
    }
    if (rope) {
      q = apply_rope(q, offset, rope_theta);
      k = apply_rope(k, offset, rope_theta);
    }
    y = cache != nullptr ? attend_cached(q, append(cache->k, k), append(cache->v, v), offset) : attend(q, k, v, p, kind);
  } else if (kind == AttentionPath::fused) {
    // flash-style tiles, no T × T scores; the dropout mask's seed comes from the default generator
    y = kernels::causal_attention(qkv, n_head, p, dropout_mask_seed(p));
  } else {
    auto parts = qkv.split(C, 2);
    auto heads = [&](const torch::Tensor& t) { return t.view({B, T, n_head, hs}).transpose(1, 2); };  // (B, nh, T, hs)
    y = sdpa_causal(heads(parts[0]), heads(parts[1]), heads(parts[2]), p).transpose(1, 2).contiguous().view({B, T, C});
  }
  return maybe_dropout(project(y, c_proj, fused), dropout, is_training());
}

LatentAttentionImpl::LatentAttentionImpl(const ModelConfig& c) : config(c) {
  const int64_t C = c.n_embd, H = c.n_head;
  if (c.q_lora_rank > 0) {
    q_a_proj = register_module("q_a_proj", linear(C, c.q_lora_rank, false));
    q_a_layernorm = NormLayer(*this, "q_a_layernorm", c, c.q_lora_rank);
    q_b_proj = register_module("q_b_proj", linear(c.q_lora_rank, H * c.qk_head_dim(), false));
  } else {
    q_proj = register_module("q_proj", linear(C, H * c.qk_head_dim(), false));
  }
  kv_a_proj_with_mqa = register_module("kv_a_proj_with_mqa", linear(C, c.kv_lora_rank + c.qk_rope_head_dim, false));
  kv_a_layernorm = NormLayer(*this, "kv_a_layernorm", c, c.kv_lora_rank);
  kv_b_proj = register_module("kv_b_proj", linear(c.kv_lora_rank, H * (c.qk_nope_head_dim + c.v_head_dim), false));
  o_proj = register_module("o_proj", linear(H * c.v_head_dim, C, false));
}

torch::Tensor LatentAttentionImpl::forward(const torch::Tensor& x, LayerCache* cache, int64_t offset) {
  const ModelConfig& c = config;
  const int64_t B = x.size(0), T = x.size(1), H = c.n_head, nope = c.qk_nope_head_dim, rope = c.qk_rope_head_dim;
  auto q = c.q_lora_rank > 0 ? project(q_a_layernorm(project(x, q_a_proj, fused)), q_b_proj, fused)
                             : project(x, q_proj, fused);
  q = q.view({B, T, H, nope + rope});
  auto compressed = project(x, kv_a_proj_with_mqa, fused);  // (B, T, kv_lora_rank + rope)
  auto latent = compressed.narrow(2, 0, c.kv_lora_rank);
  torch::Tensor k_rope;  // (B, T, rope): one rotary key per token, shared by the heads
  if (rope > 0) {
    k_rope = apply_rope(compressed.narrow(2, c.kv_lora_rank, rope).unsqueeze(2), offset, c.rope_theta).squeeze(2);
    q = torch::cat({q.narrow(3, 0, nope), apply_rope(q.narrow(3, nope, rope), offset, c.rope_theta)}, 3);
  }
  if (cache != nullptr) {  // the latent is what is kept; keys and values are rebuilt from it
    latent = append(cache->latent, latent);
    if (rope > 0) {
      k_rope = append(cache->k_rope, k_rope);
    }
  }
  const int64_t S = latent.size(1);
  auto kv = project(kv_a_layernorm(latent), kv_b_proj, fused).view({B, S, H, nope + c.v_head_dim});
  auto k = kv.narrow(3, 0, nope), v = kv.narrow(3, nope, c.v_head_dim);
  if (rope > 0) {
    k = torch::cat({k, k_rope.unsqueeze(2).expand({B, S, H, rope}).to(k.scalar_type())}, 3);
  }
  const double p = is_training() ? c.dropout : 0.0;
  auto y = cache != nullptr ? attend_cached(q, k, v, offset) : attend(q, k, v, p, attention_kind(fused, x.device()));
  return maybe_dropout(project(y, o_proj, fused), c.dropout, is_training());
}

// ---- MLP ----

MLPImpl::MLPImpl(const ModelConfig& c, int64_t hidden)
    : activation(c.mlp_activation == MlpActivation::relu2 ? kernels::Activation::relu2 : kernels::Activation::gelu) {
  const bool bias = c.linear_bias();
  if (c.mlp_activation == MlpActivation::swiglu) {
    gate_proj = register_module("gate_proj", linear(c.n_embd, hidden, bias));
    up_proj = register_module("up_proj", linear(c.n_embd, hidden, bias));
    down_proj = register_module("down_proj", linear(hidden, c.n_embd, bias));
  } else {
    c_fc = register_module("c_fc", linear(c.n_embd, hidden, bias));
    c_proj = register_module("c_proj", linear(hidden, c.n_embd, bias));
  }
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  if (gate_proj) {
    return project(torch::silu(project(x, gate_proj, fused)) * project(x, up_proj, fused), down_proj, fused);
  }
  const bool cpu = x.device().is_cpu();
  torch::Tensor hidden;
  if (c_fc->bias.defined() && (cpu ? fused : cuda_kernels && x.is_cuda())) {
    // the bias add and the activation in one pass: the CPU's kernel, or the GPU's where it takes h
    const auto h = project(x, c_fc->weight, {}, fused);
    hidden = cpu || kernels::cuda_bias_activation_takes(h, c_fc->bias)
                 ? kernels::bias_activation(h, c_fc->bias, activation)
                 : kernels::bias_activation_reference(h, c_fc->bias, activation);
  } else {
    hidden = kernels::activation_reference(project(x, c_fc, fused), activation);
  }
  return project(hidden, c_proj, fused);
}

// ---- MoE ----

MoEImpl::MoEImpl(const ModelConfig& c) : config(c) {
  gate = register_module("gate", linear(c.n_embd, c.n_routed_experts, false));
  experts = register_module("experts", torch::nn::ModuleList());
  for (int64_t e = 0; e < c.n_routed_experts; ++e) {
    experts->push_back(MLP(c, c.moe_intermediate_size));
  }
  if (c.n_shared_experts > 0) {
    shared_experts = register_module("shared_experts", MLP(c, c.moe_intermediate_size * c.n_shared_experts));
  }
  if (c.balance == Balance::bias) {
    expert_bias = register_buffer("expert_bias", torch::zeros({c.n_routed_experts}));
  }
}

void MoEImpl::set_fused(bool on) {
  fused = on;
  for (const auto& expert : *experts) {
    expert->as<MLP>()->fused = on;
  }
  if (shared_experts) {
    shared_experts->fused = on;
  }
}

torch::Tensor MoEImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), N = B * T;
  const int64_t E = config.n_routed_experts, K = config.moe_top_k;
  const auto flat = x.reshape({N, C});
  const auto scores = torch::softmax(project(flat, gate->weight, {}, fused).to(torch::kFloat), -1);  // (N, E)
  torch::Tensor chosen, order, counts;  // (N, K); (N·K); (E)
  {
    torch::NoGradGuard no_grad;
    // the top K by score (+ the balancing bias): a stable descending sort, so ties go to the lower index
    const auto ranked = expert_bias.defined() ? scores + expert_bias : scores;
    chosen = std::get<1>(ranked.sort(/*stable=*/true, /*dim=*/-1, /*descending=*/true)).narrow(1, 0, K).contiguous();
    const auto flat_choice = chosen.reshape({-1});
    // (token, slot) pairs grouped by expert, in token order within an expert
    order = std::get<1>(flat_choice.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
    // (bincount would read the choices' range on the host first: on a GPU, two more waits)
    counts = torch::zeros({E}, flat_choice.options()).scatter_add_(0, flat_choice, torch::ones_like(flat_choice));
  }
  // Each expert's rows padded to a multiple of k_expert_rows with a zero row (index N, weight
  // 0, dropped at the end): the matmuls then come in few shapes, which oneDNN's primitive
  // cache keeps (a new shape each step costs a kernel compilation: 4× slower, measured).
  // The counts and the order, read on the host in one copy (on a GPU: this layer's one sync).
  const auto host = torch::cat({counts, order}).cpu();
  const int64_t* n = host.data_ptr<int64_t>();
  std::vector<int64_t> padded(static_cast<size_t>(E));
  int64_t rows = 0;
  for (int64_t e = 0; e < E; ++e) {
    padded[e] = (n[e] + k_expert_rows - 1) / k_expert_rows * k_expert_rows;
    rows += padded[e];
  }
  // a (token, slot) pair per row; N·K: padding (page-locked on a GPU, copied without waiting)
  auto slots = torch::full({rows}, N * K, torch::TensorOptions().dtype(torch::kLong).pinned_memory(x.is_cuda()));
  {
    const int64_t* o = n + E;
    int64_t* out = slots.data_ptr<int64_t>();
    for (int64_t e = 0, from = 0, to = 0; e < E; from += n[e], to += padded[e], ++e) {
      std::copy(o + from, o + from + n[e], out + to);
    }
    slots = slots.to(x.device(), /*non_blocking=*/true);
  }
  const auto token = torch::div(slots, K, "floor");  // N for padding
  const auto weight = torch::cat({scores.gather(1, chosen).reshape({-1}), torch::zeros({1}, scores.options())})
                          .index_select(0, slots);  // (rows)
  const auto grouped = torch::cat({flat, torch::zeros({1, C}, flat.options())}).index_select(0, token);  // (rows, C)
  torch::Tensor expert_out;  // (rows, C), in `grouped`'s order
  if (expert_group != nullptr) {
    expert_out = run_experts_parallel(*this, grouped, padded);
  } else {
    std::vector<torch::Tensor> outputs;
    for (int64_t e = 0, start = 0; e < E; start += padded[e], ++e) {
      if (padded[e] > 0) {  // an expert without tokens runs nothing (its gradient is zero)
        outputs.push_back(experts[e]->as<MLP>()->forward(grouped.narrow(0, start, padded[e])));
      }
    }
    expert_out = torch::cat(outputs, 0);
  }
  const auto routed = expert_out.to(torch::kFloat) * weight.unsqueeze(1);
  auto out = torch::zeros({N + 1, C}, routed.options()).index_add(0, token, routed).narrow(0, 0, N);
  if (shared_experts) {
    out = out + shared_experts->forward(flat);
  }
  aux_loss = torch::Tensor();
  if (is_training()) {
    if (config.aux_loss_on()) {
      // per sequence (DeepSeek-V3's sequence-wise form of V2's expert-level loss): f_i = E/(K·T) ×
      // the tokens of the sequence sent to i, P_i = its mean score; α Σ f_i P_i, the mean over sequences
      torch::Tensor f;
      {
        torch::NoGradGuard no_grad;
        const auto picks = chosen.view({B, T * K});
        f = torch::zeros({B, E}, scores.options()).scatter_add_(1, picks, torch::ones(picks.sizes(), scores.options())) *
            (static_cast<double>(E) / static_cast<double>(K * T));
      }
      aux_loss = config.aux_loss_alpha * (f * scores.view({B, T, E}).mean(1)).sum(1).mean();
    }
    if (recomputing) {
      return out.view({B, T, C});  // the first forward counted this micro-batch's tokens
    }
    torch::NoGradGuard no_grad;
    const auto entropy = -(scores * scores.clamp_min(1e-30).log()).sum();
    const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(x.device());
    const auto extra = torch::stack({entropy.to(torch::kDouble), torch::full({}, static_cast<double>(N), f64),
                                     aux_loss.defined() ? aux_loss.detach().to(torch::kDouble) : torch::zeros({}, f64)});
    const auto now = torch::cat({counts.to(torch::kDouble), extra});
    step_stats = step_stats.defined() ? step_stats + now : now;
  }
  return out.view({B, T, C});
}

// ---- block ----

BlockImpl::BlockImpl(const ModelConfig& c, int64_t layer) : dropout(c.dropout) {
  ln_1 = NormLayer(*this, "ln_1", c, c.n_embd);
  if (c.attention == Attention::mla) {
    mla = register_module("attn", LatentAttention(c));
  } else {
    attn = register_module("attn", CausalSelfAttention(c));
  }
  ln_2 = NormLayer(*this, "ln_2", c, c.n_embd);
  if (c.moe_layer(layer)) {
    moe = register_module("mlp", MoE(c));
  } else {
    mlp = register_module("mlp", MLP(c, c.intermediate_size));
  }
}

torch::Tensor BlockImpl::forward(torch::Tensor x, LayerCache* cache, int64_t offset) {
  const auto h = ln_1(x);
  x = x + (mla ? mla->forward(h, cache, offset) : attn->forward(h, cache, offset));
  const auto g = ln_2(x);
  return x + maybe_dropout(moe ? moe->forward(g) : mlp->forward(g), dropout, is_training());
}

// ---- GPT ----

TransformerImpl::TransformerImpl(const ModelConfig& c) {
  wte = register_module("wte", torch::nn::Embedding(c.padded_vocab(), c.n_embd));
  if (c.position == Position::learned) {
    wpe = register_module("wpe", torch::nn::Embedding(c.block_size, c.n_embd));
  }
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer; ++i) {
    h->push_back(Block(c, i));
  }
  ln_f = NormLayer(*this, "ln_f", c, c.n_embd);
}

GPTImpl::GPTImpl(const ModelConfig& given, int64_t init_seed) : config(given.resolved()) {
  const ModelConfig& c = config;
  TORCH_CHECK(c.vocab_size > 0, "model.vocab_size must be set before building the model");
  TORCH_CHECK(c.n_embd % c.n_head == 0, "n_embd must be divisible by n_head");
  transformer = register_module("transformer", Transformer(c));
  if (!c.tie_weights) {
    lm_head = register_module("lm_head", linear(c.n_embd, c.padded_vocab(), false));
  }
  // GPT-2 init: N(0, 0.02) for every Linear and Embedding weight, zero biases, norms weight 1
  // (and bias 0); residual projections N(0, 0.02/sqrt(2·n_layer)). Each weight draws from a
  // generator of its own, seeded by (init_seed, name, shape): a parameter starts from the same
  // values whichever other parameters exist, so variants that add or drop parameters (qkv_bias,
  // tie_weights, experts) stay paired with the baseline by seed. The constructors' own draws
  // above are all overwritten.
  torch::NoGradGuard no_grad;
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    torch::Tensor w = p.value();
    if (name.find(".ln_") != std::string::npos || name.find("layernorm.") != std::string::npos) {
      continue;  // a norm: weight 1, bias 0 from its constructor
    }
    if (w.dim() == 1) {
      w.zero_();
    } else {
      const bool residual = ends_with(name, "c_proj.weight") || ends_with(name, "o_proj.weight") ||
                            ends_with(name, "down_proj.weight");
      if (residual && c.zero_init_proj) {
        w.zero_();  // the speedrun's: each block starts as the identity on the residual stream
      } else {
        w.normal_(0.0, residual ? proj_std : 0.02, parameter_generator(init_seed, name, w.sizes()));
      }
    }
  }
}

torch::Tensor GPTImpl::head_weight() const {
  return config.tie_weights ? transformer->wte->weight : lm_head->weight;
}

std::vector<torch::Tensor> GPTImpl::matmul_weights() const {
  std::vector<torch::Tensor> weights;
  for (const auto& m : modules(/*include_self=*/false)) {
    if (const auto* linear = m->as<torch::nn::Linear>()) {
      weights.push_back(linear->weight);
    }
  }
  if (config.tie_weights) {
    weights.push_back(head_weight());
  }
  return weights;
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx, KVCache* cache) {
  return kernels::soft_cap_reference(uncapped_logits(idx, cache), config.logit_softcap);
}

torch::Tensor GPTImpl::uncapped_logits(const torch::Tensor& idx, KVCache* cache) {
  const int64_t T = idx.size(1), offset = cache != nullptr ? cache->length : 0;
  TORCH_CHECK(offset + T <= config.block_size, "sequence of ", offset + T, " tokens exceeds block_size ",
              config.block_size);
  auto x = transformer->wte->forward(idx);  // (B, T, C)
  if (transformer->wpe) {
    x = x + transformer->wpe->forward(
                torch::arange(offset, offset + T, torch::TensorOptions().dtype(torch::kLong).device(idx.device())));
  }
  x = maybe_dropout(x, config.dropout, is_training());
  if (cache != nullptr) {
    cache->layers.resize(static_cast<size_t>(config.n_layer));
  }
  // Sharded weights freed after a block's forward cannot be kept for its backward: the block runs
  // again there, as under activation checkpointing.
  const bool grad = torch::GradMode::is_enabled();
  const bool recompute = grad && cache == nullptr && ((activation_checkpointing && is_training()) || block_weights);
  for (size_t i = 0; i < transformer->h->size(); ++i) {
    BlockImpl& block = *transformer->h[i]->as<Block>();
    if (recompute) {
      x = checkpointed_block(block, x, block_weights);
      continue;
    }
    TORCH_CHECK(!grad || !block_weights, "a forward with autograd over sharded weights must be checkpointed");
    GatheredBlock gathered(block_weights, block);
    x = block.forward(x, cache != nullptr ? &cache->layers[i] : nullptr, offset);
  }
  if (cache != nullptr) {
    cache->length += T;
  }
  x = transformer->ln_f(x);
  return project(x, head_weight(), {}, fused);  // (B, T, V_padded)
}

torch::Tensor GPTImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  auto logits = uncapped_logits(idx, nullptr);  // (B, T, V_padded); the losses cap them
  auto flat = logits.reshape({-1, logits.size(-1)});
  const double cap = config.logit_softcap;
  const auto flat_targets = targets.reshape({-1});
  const bool inplace = flat.device().is_cpu() ? fused : cuda_kernels && kernels::cuda_cross_entropy_takes(flat, flat_targets);
  return inplace ? kernels::cross_entropy_inplace(flat, flat_targets, cap)
                 : kernels::cross_entropy_reference(flat, flat_targets, cap);
}

std::vector<MoE> GPTImpl::moe_layers() const {
  std::vector<MoE> out;
  for (const auto& block : *transformer->h) {
    if (block->as<Block>()->moe) {
      out.push_back(block->as<Block>()->moe);
    }
  }
  return out;
}

torch::Tensor GPTImpl::aux_loss() const {
  torch::Tensor total;
  for (const auto& layer : moe_layers()) {
    if (layer->aux_loss.defined()) {
      total = total.defined() ? total + layer->aux_loss : layer->aux_loss;
    }
  }
  return total;
}

torch::Tensor GPTImpl::take_moe_stats() {
  std::vector<torch::Tensor> parts;
  const auto f64 = torch::TensorOptions().dtype(torch::kDouble).device(transformer->wte->weight.device());
  for (auto& layer : moe_layers()) {
    parts.push_back(layer->step_stats.defined() ? layer->step_stats : torch::zeros({config.n_routed_experts + 3}, f64));
    layer->step_stats = torch::Tensor();
  }
  return parts.empty() ? torch::Tensor() : torch::cat(parts);  // on the model's device: read once, in end_moe_step
}

MoEStepStats GPTImpl::end_moe_step(const torch::Tensor& summed, int64_t forwards, const torch::Tensor& skip) {
  MoEStepStats s;
  const int64_t E = config.n_routed_experts;
  const auto all = summed.to(torch::kCPU, torch::kDouble).contiguous();  // the step's one read of the loads
  const double* v = all.data_ptr<double>();
  bool any_aux = false;
  double aux = 0;
  const auto layers = moe_layers();
  for (size_t l = 0; l < layers.size(); ++l) {
    const double* load = v + l * static_cast<size_t>(E + 3);
    const double tokens = load[E + 1];
    if (tokens <= 0) {
      continue;  // no training forward this step
    }
    const double mean = tokens * static_cast<double>(config.moe_top_k) / static_cast<double>(E);
    s.load_max.push_back(*std::max_element(load, load + E) / mean);
    s.entropy.push_back(std::max(0.0, load[E] / tokens));  // one expert: −0 from −Σ 1·log 1
    if (config.aux_loss_on()) {
      any_aux = true;
      aux += load[E + 2] / static_cast<double>(forwards);
    }
    if (layers[l]->expert_bias.defined()) {
      // DeepSeek-V3: an overloaded expert's bias goes down by γ, an underloaded one's up by γ
      // (× 0 on a skipped step: decided on the device, as the weights' update is)
      torch::NoGradGuard no_grad;
      const auto loads = summed.narrow(0, static_cast<int64_t>(l) * (E + 3), E);  // where the bias is: no copy back
      const auto move = (mean - loads).sign() * config.bias_update_speed * (1 - skip.to(loads.options()));
      layers[l]->expert_bias.add_(move.to(layers[l]->expert_bias.options()));
    }
  }
  if (any_aux) {
    s.aux_loss = aux;
  }
  return s;
}

std::string GPTImpl::attention(const torch::Device& device) const {
  return attention_kind(fused, device) == AttentionPath::fused ? "fused" : "sdpa";
}

void GPTImpl::set_fused(bool on) {
  fused = on;
  transformer->ln_f.fused = on;
  for (const auto& block : *transformer->h) {
    auto& b = *block->as<Block>();
    b.ln_1.fused = on;
    b.ln_2.fused = on;
    if (b.attn) {
      b.attn->fused = on;
    }
    if (b.mla) {
      b.mla->fused = on;
    }
    if (b.mlp) {
      b.mlp->fused = on;
    }
    if (b.moe) {
      b.moe->set_fused(on);
    }
  }
}

void GPTImpl::set_cuda_kernels(bool on) {
  cuda_kernels = on;
  transformer->ln_f.cuda_kernels = on;
  for (const auto& block : *transformer->h) {
    auto& b = *block->as<Block>();
    b.ln_1.cuda_kernels = on;
    b.ln_2.cuda_kernels = on;
    if (b.mlp) {
      b.mlp->cuda_kernels = on;
    }
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
