#include "train/model.h"

#include <cmath>

#include "train/compat.h"

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

}  // namespace

bool uses_sdpa() { return compat::k_has_sdpa; }

// ---- attention ----

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& c)
    : n_head(c.n_head), dropout(c.dropout) {
  c_attn = register_module("c_attn", linear(c.n_embd, 3 * c.n_embd, c.qkv_bias));
  c_proj = register_module("c_proj", linear(c.n_embd, c.n_embd, true));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hs = C / n_head;
  auto qkv = c_attn->forward(x).split(C, 2);  // 3 × (B, T, C)
  auto q = qkv[0].view({B, T, n_head, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto k = qkv[1].view({B, T, n_head, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto v = qkv[2].view({B, T, n_head, hs}).transpose(1, 2);  // (B, nh, T, hs)
  const double p = is_training() ? dropout : 0.0;
  torch::Tensor y;  // (B, nh, T, hs)
  if (compat::k_has_sdpa) {
    y = compat::sdpa_causal(q, k, v, p);
  } else {
    // Manual path: scale, causal mask and QK^T in one baddbmm; softmax; dropout; @V.
    if (!m_mask.defined() || m_mask.size(0) < T || m_mask.scalar_type() != q.scalar_type() ||
        m_mask.device() != q.device()) {
      m_mask = torch::full({T, T}, -std::numeric_limits<float>::infinity(),
                           torch::TensorOptions().dtype(q.scalar_type()).device(q.device()))
                   .triu(1);  // (T, T): 0 on and below the diagonal, -inf above
    }
    auto q3 = q.reshape({B * n_head, T, hs});                  // (B·nh, T, hs)
    auto kt = k.reshape({B * n_head, T, hs}).transpose(1, 2);  // (B·nh, hs, T)
    auto mask = m_mask.slice(0, 0, T).slice(1, 0, T).unsqueeze(0);  // (1, T, T)
    auto att = torch::baddbmm(mask, q3, kt, /*beta=*/1.0, /*alpha=*/1.0 / std::sqrt(static_cast<double>(hs)));
    att = torch::softmax(att, -1);                                  // (B·nh, T, T)
    att = maybe_dropout(att, p, true);
    y = torch::bmm(att, v.reshape({B * n_head, T, hs})).view({B, n_head, T, hs});
  }
  y = y.transpose(1, 2).contiguous().view({B, T, C});  // re-assemble heads side by side
  return maybe_dropout(c_proj->forward(y), dropout, is_training());
}

// ---- MLP ----

MLPImpl::MLPImpl(const ModelConfig& c) : dropout(c.dropout) {
  c_fc = register_module("c_fc", linear(c.n_embd, 4 * c.n_embd, true));
  c_proj = register_module("c_proj", linear(4 * c.n_embd, c.n_embd, true));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  auto hidden = torch::gelu(c_fc->forward(x));  // (B, T, 4C), exact (erf) GELU
  return maybe_dropout(c_proj->forward(hidden), dropout, is_training());
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

GPTImpl::GPTImpl(const ModelConfig& c) : config(c) {
  TORCH_CHECK(c.vocab_size > 0, "model.vocab_size must be set before building the model");
  TORCH_CHECK(c.n_embd % c.n_head == 0, "n_embd must be divisible by n_head");
  transformer = register_module("transformer", Transformer(c));
  if (!c.tie_weights) {
    lm_head = register_module("lm_head", linear(c.n_embd, c.padded_vocab(), false));
  }
  // GPT-2 init: N(0, 0.02) for every Linear and Embedding weight, zero biases, LayerNorm (1, 0);
  // residual projections N(0, 0.02/sqrt(2·n_layer)). Fixed order: the named parameter order.
  torch::NoGradGuard no_grad;
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    if (name.find(".ln_") != std::string::npos) {
      continue;  // LayerNorm: weight 1, bias 0 from its constructor
    }
    if (p.value().dim() == 1) {
      p.value().zero_();
    } else if (name.size() > 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0) {
      p.value().normal_(0.0, proj_std);
    } else {
      p.value().normal_(0.0, 0.02);
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
  return F::linear(x, head_weight());  // (B, T, V_padded)
}

torch::Tensor GPTImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  auto logits = forward(idx);  // (B, T, V_padded)
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), targets.reshape({-1}));
}

int64_t GPTImpl::num_params() const {
  int64_t n = 0;
  for (const auto& p : parameters()) {
    n += p.numel();
  }
  return n;
}

}  // namespace sweep
