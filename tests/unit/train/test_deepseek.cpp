// The deepseek family's parts, each against a plain reference written here: RMSNorm, rotary
// positions (and their relative-position property), SwiGLU, latent attention, MoE routing and
// dispatch (ties, an expert without tokens, one expert = the dense MLP), the balancing losses
// and biases, the parameter counts, and generation's KV cache against full recomputation.
#include <doctest/doctest.h>

#include "helpers.h"
#include "train/sample.h"

using namespace sweep;

namespace {

namespace F = torch::nn::functional;

torch::Tensor tokens(int64_t B, int64_t T, int64_t vocab, uint64_t seed = 5) {
  torch::manual_seed(seed);
  return torch::randint(vocab, {B, T}, torch::kLong);
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// Rotary embedding, one pair (i, i + d/2) at a time.
torch::Tensor rope_reference(const torch::Tensor& x, int64_t offset, double theta) {
  auto out = x.clone();
  const int64_t T = x.size(1), d = x.size(3);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double a = static_cast<double>(offset + t) * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      const auto x1 = x.select(1, t).select(2, i), x2 = x.select(1, t).select(2, i + d / 2);
      out.select(1, t).select(2, i).copy_(x1 * std::cos(a) - x2 * std::sin(a));
      out.select(1, t).select(2, i + d / 2).copy_(x2 * std::cos(a) + x1 * std::sin(a));
    }
  }
  return out;
}

torch::Tensor rms(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  return x / torch::sqrt(x.pow(2).mean(-1, true) + eps) * w;
}

torch::Tensor swiglu(MLPImpl& m, const torch::Tensor& x) {
  return torch::matmul(torch::silu(torch::matmul(x, m.gate_proj->weight.t())) * torch::matmul(x, m.up_proj->weight.t()),
                       m.down_proj->weight.t());
}

// Masked-softmax attention of q, k (B, T, H, dq), v (B, T, H, dv).
torch::Tensor attention_reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t T = q.size(1);
  auto s = torch::einsum("bthd,bshd->bhts", {q, k}) / std::sqrt(static_cast<double>(q.size(3)));
  s = s.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -INFINITY);
  return torch::einsum("bhts,bshd->bthd", {torch::softmax(s, -1), v}).reshape({q.size(0), T, -1});
}

ModelConfig resolved(RunConfig c) { return c.model.resolved(); }

}  // namespace

TEST_CASE("RMSNorm equals x / sqrt(mean(x²) + eps) · weight") {
  RMSNorm n(8, 1e-6);
  torch::NoGradGuard g;
  n->weight.uniform_(0.5, 1.5);
  const auto x = torch::randn({3, 5, 8});
  CHECK(max_diff(n->forward(x), rms(x, n->weight, 1e-6)) < 1e-6);
}

TEST_CASE("RoPE: the rotate-half reference, and a query·key product that depends only on the distance") {
  const auto x = torch::randn({2, 6, 3, 8}, torch::kDouble).to(torch::kFloat);
  CHECK(max_diff(apply_rope(x, 3, 10000), rope_reference(x, 3, 10000)) < 1e-5);
  // <R(q, m), R(k, n)> depends on m − n: shift both positions by 5
  const auto q = torch::randn({1, 1, 1, 16}), k = torch::randn({1, 1, 1, 16});
  for (int64_t m = 0; m < 4; ++m) {
    for (int64_t n = 0; n < 4; ++n) {
      const double a = (apply_rope(q, m, 10000) * apply_rope(k, n, 10000)).sum().item<double>();
      const double b = (apply_rope(q, m + 5, 10000) * apply_rope(k, n + 5, 10000)).sum().item<double>();
      CHECK(a == doctest::Approx(b).epsilon(1e-5));
    }
  }
  // and position 0 is the identity
  CHECK(max_diff(apply_rope(q, 0, 10000), q) == 0.0);
}

TEST_CASE("SwiGLU: down(silu(gate x) · up x)") {
  RunConfig c = test::tiny_deepseek_config();
  MLP m(resolved(c), 24);
  const auto x = torch::randn({2, 5, c.model.n_embd});
  CHECK(max_diff(m->forward(x), swiglu(*m, x)) < 1e-5);
  CHECK_FALSE(m->gate_proj->bias.defined());  // DeepSeek's linear layers have no bias
}

TEST_CASE("latent attention equals DeepSeek-V2's equations written out, on the fused and the reference path") {
  for (const int64_t q_lora : {0, 24}) {
    CAPTURE(q_lora);
    RunConfig c = test::tiny_deepseek_config();
    c.model.q_lora_rank = q_lora;
    c.model.v_head_dim = 12;  // narrower values than queries: the padded path
    const ModelConfig m = resolved(c);
    LatentAttention attn(m);
    attn->eval();
    torch::NoGradGuard g;
    for (auto& p : attn->parameters()) {
      p.normal_(0, 0.2);
    }
    const int64_t B = 2, T = 7, H = m.n_head, nope = m.qk_nope_head_dim, rope = m.qk_rope_head_dim;
    const auto x = torch::randn({B, T, m.n_embd});
    // the reference: every projection and the split into parts by hand
    auto lin = [](const torch::Tensor& v, const torch::nn::Linear& l) { return torch::matmul(v, l->weight.t()); };
    auto q = q_lora > 0 ? lin(rms(lin(x, attn->q_a_proj), attn->q_a_layernorm.rms->weight, 1e-6), attn->q_b_proj)
                        : lin(x, attn->q_proj);
    q = q.view({B, T, H, nope + rope});
    const auto ckv = lin(x, attn->kv_a_proj_with_mqa);
    const auto latent = ckv.narrow(2, 0, m.kv_lora_rank);
    const auto k_pe = rope_reference(ckv.narrow(2, m.kv_lora_rank, rope).view({B, T, 1, rope}), 0, m.rope_theta);
    const auto kv = lin(rms(latent, attn->kv_a_layernorm.rms->weight, 1e-6), attn->kv_b_proj).view({B, T, H, nope + m.v_head_dim});
    const auto k = torch::cat({kv.narrow(3, 0, nope), k_pe.expand({B, T, H, rope})}, 3);
    const auto qr = torch::cat({q.narrow(3, 0, nope), rope_reference(q.narrow(3, nope, rope), 0, m.rope_theta)}, 3);
    const auto expected = lin(attention_reference(qr, k, kv.narrow(3, nope, m.v_head_dim)), attn->o_proj);
    for (const bool fused : {true, false}) {
      attn->fused = fused;
      CHECK(max_diff(attn->forward(x), expected) < 1e-5);
    }
  }
}

namespace {

// The MoE layer token by token: softmax scores, the top k (ties to the lower index, the bias
// for the choice only), each chosen expert's output times its score, plus the shared expert.
torch::Tensor moe_reference(MoEImpl& moe, const torch::Tensor& x) {
  const auto flat = x.reshape({-1, x.size(-1)});
  const auto scores = torch::softmax(torch::matmul(flat, moe.gate->weight.t()), -1);
  auto out = torch::zeros_like(flat);
  for (int64_t t = 0; t < flat.size(0); ++t) {
    std::vector<std::pair<double, int64_t>> ranked;
    for (int64_t e = 0; e < moe.config.n_routed_experts; ++e) {
      const double bias = moe.expert_bias.defined() ? moe.expert_bias[e].item<double>() : 0.0;
      ranked.emplace_back(-(scores[t][e].item<double>() + bias), e);
    }
    std::sort(ranked.begin(), ranked.end());  // by score, then by index
    for (int64_t j = 0; j < moe.config.moe_top_k; ++j) {
      const int64_t e = ranked[j].second;
      out[t] += scores[t][e] * swiglu(*moe.experts[e]->as<MLP>(), flat[t]);
    }
    if (moe.shared_experts) {
      out[t] += swiglu(*moe.shared_experts, flat[t]);
    }
  }
  return out.view(x.sizes());
}

}  // namespace

TEST_CASE("MoE: grouped dispatch equals routing token by token, with the bias choosing and not weighting") {
  for (const Balance balance : {Balance::aux_loss, Balance::bias}) {
    CAPTURE(balance);
    const ModelConfig m = resolved(test::tiny_deepseek_config(balance));
    MoE moe(m);
    moe->eval();
    torch::NoGradGuard g;
    for (auto& p : moe->parameters()) {
      p.normal_(0, 0.3);
    }
    if (moe->expert_bias.defined()) {
      moe->expert_bias.copy_(torch::tensor({0.3f, -0.2f, 0.0f, 0.1f}));
    }
    const auto x = torch::randn({3, 5, m.n_embd});
    for (const bool fused : {true, false}) {
      moe->set_fused(fused);
      CHECK(max_diff(moe->forward(x), moe_reference(*moe, x)) < 1e-5);
    }
  }
}

TEST_CASE("MoE: one expert, top-1, no shared expert equals the dense SwiGLU MLP with the same weights") {
  ModelConfig m = resolved(test::tiny_deepseek_config());
  m.n_routed_experts = 1;
  m.moe_top_k = 1;
  m.n_shared_experts = 0;
  m.moe_intermediate_size = 40;
  MoE moe(m);
  MLP dense(m, 40);
  torch::NoGradGuard g;
  auto* expert = moe->experts[0]->as<MLP>();
  dense->gate_proj->weight.copy_(expert->gate_proj->weight);
  dense->up_proj->weight.copy_(expert->up_proj->weight);
  dense->down_proj->weight.copy_(expert->down_proj->weight);
  const auto x = torch::randn({2, 9, m.n_embd});
  CHECK(max_diff(moe->forward(x), dense->forward(x)) < 1e-6);
}

TEST_CASE("MoE: ties go to the lower expert, an expert without tokens gets a zero gradient, and training steps") {
  RunConfig c = test::tiny_deepseek_config();
  const ModelConfig m = resolved(c);
  MoE moe(m);
  {
    torch::NoGradGuard g;
    moe->gate->weight.zero_();  // every score 1/E: a four-way tie for every token
  }
  const auto x = torch::randn({2, 4, m.n_embd}, torch::requires_grad());
  moe->train();
  moe->forward(x).sum().backward();
  const auto load = moe->step_stats.narrow(0, 0, m.n_routed_experts);
  CHECK(load[0].item<double>() == 8);  // every token went to experts 0 and 1
  CHECK(load[1].item<double>() == 8);
  CHECK(load[2].item<double>() == 0);
  CHECK_FALSE(moe->experts[2]->as<MLP>()->gate_proj->weight.grad().defined());  // the trainer zero-fills it
  CHECK(moe->experts[0]->as<MLP>()->gate_proj->weight.grad().abs().sum().item<double>() > 0);

  // The trainer: every parameter has a gradient (zero where no token went), the step is finite.
  auto data = test::synthetic_data();
  Trainer t(c, data);
  const StepStats s = t.train_step();
  CHECK(s.finite());
  REQUIRE(s.moe.load_max.size() == 1);
  CHECK(s.moe.load_max[0] >= 1.0);
  CHECK(s.moe.entropy[0] > 0);
  CHECK(s.moe.entropy[0] <= std::log(4.0) + 1e-9);
  CHECK(std::isfinite(s.moe.aux_loss));
}

TEST_CASE("balancing: the aux loss is α Σ f·P per sequence, and a bias moves against the step's load") {
  RunConfig c = test::tiny_deepseek_config(Balance::aux_loss);
  const ModelConfig m = resolved(c);
  MoE moe(m);
  moe->train();
  const int64_t B = 3, T = 6, E = m.n_routed_experts, K = m.moe_top_k;
  const auto x = torch::randn({B, T, m.n_embd});
  moe->forward(x);
  {
  torch::NoGradGuard g;
  const auto scores = torch::softmax(torch::matmul(x, moe->gate->weight.t()), -1);  // (B, T, E)
  const auto chosen = std::get<1>(scores.sort(true, -1, true)).narrow(2, 0, K);
  double expected = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t e = 0; e < E; ++e) {
      const double f = static_cast<double>(E) / static_cast<double>(K * T) * chosen[b].eq(e).sum().item<double>();
      expected += m.aux_loss_alpha * f * scores[b].select(1, e).mean().item<double>() / static_cast<double>(B);
    }
  }
  CHECK(moe->aux_loss.item<double>() == doctest::Approx(expected).epsilon(1e-5));
  }

  // bias: after a step, the busiest expert's bias goes down by γ and an idle one's up by γ
  RunConfig cb = test::tiny_deepseek_config(Balance::bias);
  auto data = test::synthetic_data();
  Trainer t(cb, data);
  const StepStats s = t.train_step();
  CHECK(std::isnan(s.moe.aux_loss));
  const MoE layer = t.model()->moe_layers().at(0);
  const auto bias = layer->expert_bias;
  CHECK(bias.abs().max().item<double>() == doctest::Approx(cb.model.bias_update_speed));
  CHECK(bias.sum().item<double>() != 0.0);  // not all balanced at step 0
  CHECK(s.moe.load_max[0] > 1.0);
}

TEST_CASE("parameter counts from the config equal the model's, and active counts only the top-k experts") {
  std::vector<RunConfig> configs{test::tiny_config(), test::tiny_deepseek_config(), test::tiny_deepseek_config(Balance::bias)};
  configs[0].model.tie_weights = true;
  configs[0].model.qkv_bias = true;
  configs[1].model.q_lora_rank = 0;
  configs[1].model.norm = Norm::layernorm;
  configs[2].model.attention = Attention::mha;
  configs[2].model.position = Position::learned;
  configs[2].model.mlp_activation = MlpActivation::gelu;
  for (const RunConfig& c : configs) {
    const ModelSize s = model_size(c.model);
    GPT g(c.model, 1);
    CHECK(s.total == g->num_params());
    if (!c.model.moe()) {
      CHECK(s.active == s.total);
      continue;
    }
    const ModelConfig m = g->config;
    int64_t expert = 0;
    for (const auto& p : g->moe_layers().at(0)->experts[0]->parameters()) {
      expert += p.numel();
    }
    CHECK(s.total - s.active == (m.n_routed_experts - m.moe_top_k) * expert * (m.n_layer - m.first_k_dense));
  }
  // GPT-2's FLOPs per token: 6 × (12·L·C² + V·C) + 12·L·C·T, as before the families
  const ModelConfig g = test::tiny_config().model;
  CHECK(model_size(g).flops_per_token ==
        doctest::Approx(6.0 * (12.0 * 2 * 32 * 32 + 64.0 * 32) + 12.0 * 2 * 32 * 16));
}

TEST_CASE("generation's KV cache gives the logits of full recomputation, for each attention and position") {
  std::vector<RunConfig> configs{test::tiny_config(), test::tiny_deepseek_config(), test::tiny_deepseek_config(Balance::bias)};
  configs[0].model.position = Position::rope;  // mha with rotary keys in the cache
  configs[2].model.attention = Attention::mha;
  configs[2].model.position = Position::learned;
  for (const RunConfig& c : configs) {
    CAPTURE(c.model.attention);
    GPT g(c.model, 3);
    g->eval();
    torch::NoGradGuard no_grad;
    const auto idx = tokens(2, 12, c.model.vocab_size);
    const auto full = g->forward(idx);  // (2, 12, V)
    KVCache cache;
    auto first = g->forward(idx.narrow(1, 0, 5), &cache);  // a prompt of 5, then one token at a time
    CHECK(max_diff(first, full.narrow(1, 0, 5)) < 1e-4);
    for (int64_t t = 5; t < 12; ++t) {
      const auto step = g->forward(idx.narrow(1, t, 1), &cache);
      CAPTURE(t);
      CHECK(max_diff(step.squeeze(1), full.select(1, t)) < 1e-4);
    }
    CHECK(cache.length == 12);
    if (c.model.attention == Attention::mla) {  // the latent is what is kept, not keys and values
      CHECK(cache.layers[0].latent.size(2) == g->config.kv_lora_rank);
      CHECK_FALSE(cache.layers[0].k.defined());
    }
  }
}

TEST_CASE("sampling, each family: a seed gives one text, the KV cache gives what recomputation gives, past block_size too") {
  for (const RunConfig& c : {test::tiny_config(), test::tiny_deepseek_config(Balance::bias)}) {
    CAPTURE(c.model.family);
    GPT g(c.model, 2);
    const std::vector<int64_t> prompt{3, 10, 31};
    SampleOptions o;
    o.tokens = 30;  // 33 tokens: beyond block_size 16, where the context is cropped and recomputed
    o.temperature = 1.0;
    o.top_k = 20;
    o.seed = 7;
    const auto a = generate(g, prompt, c.model.vocab_size, o);
    CHECK(a.size() == 30);
    CHECK(generate(g, prompt, c.model.vocab_size, o) == a);
    for (const int64_t t : a) {
      CHECK((t >= 0 && t < c.model.vocab_size));  // never a padded row
    }
    o.seed = 8;
    CHECK(generate(g, prompt, c.model.vocab_size, o) != a);
    o.seed = 7;
    o.kv_cache = false;
    CHECK(generate(g, prompt, c.model.vocab_size, o) == a);
    // temperature 0: each token is the argmax of the full forward of the context so far
    o.temperature = 0;
    o.tokens = 4;
    const auto greedy = generate(g, prompt, c.model.vocab_size, o);
    std::vector<int64_t> ids = prompt;
    torch::NoGradGuard no_grad;
    for (const int64_t t : greedy) {
      const auto logits = g->forward(torch::tensor(ids).view({1, -1})).select(1, -1).squeeze(0).narrow(0, 0, c.model.vocab_size);
      CHECK(t == logits.argmax().item<int64_t>());
      ids.push_back(t);
    }
  }
}
